"""The copies suite (`torchcts.properties.suites.copies`): passes on CPU and clean faulty, catches its seeded bugs."""

from __future__ import annotations


import pytest
import torch

from torchcts.cases.files import load_case
from torchcts.core.outcomes import Outcome
from torchcts.properties.suites.copies import PROGRAMS, conversion_targets, copy_into, defined_for
from torchcts.testing.faulty.suite_bugs.copies import BUGS

BUG = {bug.name: bug for bug in BUGS}
TO_COPY = torch.ops.aten._to_copy.default
COPY_ = torch.ops.aten.copy_.default


@pytest.mark.parametrize("scenario", sorted(PROGRAMS))
def test_every_scenario_passes_on_cpu_and_on_clean_faulty(run_suite, scenario):
    for dtype in ("float32", "int8", "bool", "complex64"):
        assert run_suite("copies", scenario, dtype, max_examples=6)["outcome"] is Outcome.PASSED, (scenario, dtype)
    for dtype in ("bfloat16", "int64"):
        faulty = run_suite("copies", scenario, dtype, device="faulty", max_examples=6)
        assert faulty["outcome"] is Outcome.PASSED, faulty


@pytest.mark.parametrize("bug, scenario", [("strided_copy_as_contiguous", "copy_into"),
                                           ("float_to_int_rounds", "converting_copy")])
def test_each_seeded_bug_is_detected(run_suite, bug, scenario):
    record = run_suite("copies", scenario, "float32", device="faulty", bugs=(bug,), max_examples=30, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_bugs_stay_silent_without_their_condition():
    offset = torch.zeros(6)[2:]
    cpu = torch.device("cpu")
    assert BUG["transfer_drops_offset"].fires(TO_COPY, (offset,), {"device": cpu})
    assert not BUG["transfer_drops_offset"].fires(TO_COPY, (torch.zeros(4),), {"device": cpu})
    assert not BUG["transfer_drops_offset"].fires(TO_COPY, (offset,), {"dtype": torch.float64})  # a cast, no transfer
    strided = torch.zeros(4, 4)[:, ::2]
    assert BUG["strided_copy_as_contiguous"].fires(COPY_, (strided, torch.ones(4, 2)), {})
    assert not BUG["strided_copy_as_contiguous"].fires(COPY_, (torch.zeros(4, 2), torch.ones(4, 2).t().t()), {})
    assert not BUG["strided_copy_as_contiguous"].fires(COPY_, (torch.zeros(4, 1).expand(4, 3), torch.ones(1)), {})
    fractional, whole = torch.tensor([1.5, 2.0]), torch.tensor([1.0, -2.0])
    assert BUG["float_to_int_rounds"].fires(TO_COPY, (fractional,), {"dtype": torch.int32})
    assert not BUG["float_to_int_rounds"].fires(TO_COPY, (whole,), {"dtype": torch.int32})
    assert not BUG["float_to_int_rounds"].fires(TO_COPY, (fractional,), {"dtype": torch.float16})
    assert BUG["float_to_int_rounds"].fires(COPY_, (torch.zeros(2, dtype=torch.int8), fractional), {})
    assert not BUG["float_to_int_rounds"].fires(COPY_, (torch.zeros(2), fractional), {})


@pytest.mark.slow
def test_a_dropped_offset_is_stored_small_and_replays(run_suite, tmp_path, replays_failing):
    bug = "transfer_drops_offset"
    record = run_suite("copies", "transfers", "float32", device="faulty", bugs=(bug,), max_examples=20,
                       corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED
    stored = record["counterexample"]
    sample = load_case(stored["path"]).sample()
    assert sample.input.numel() <= 2 and sample.input.storage_offset() > 0, sample.input
    replays_failing(stored["path"], bug, tmp_path)


def test_undefined_float_to_integer_values_are_not_generated():
    t = torch.tensor([float("nan"), float("inf"), 300.0, -129.5, -128.5, 127.5, 2.5])
    assert defined_for(t, torch.int8).tolist() == [0.0, 0.0, 0.0, 0.0, -128.5, 127.5, 2.5]
    assert defined_for(t, torch.float16) is t and defined_for(t, torch.bool) is t
    assert conversion_targets(torch.complex64)[0] == torch.complex64
    assert all(d.is_complex for d in conversion_targets(torch.complex64))


def test_copy_into_writes_only_inside_the_destination():
    storage = torch.full((8,), -1.0)
    dst = storage.as_strided((2, 2), (4, 2), 1)
    target, reached = copy_into(torch.tensor([1.0, 2.0]), dst, "device", False)
    assert target.tolist() == [[1.0, 2.0], [1.0, 2.0]]
    assert reached.tolist() == [-1.0, 1.0, -1.0, 2.0, -1.0, 1.0, -1.0, 2.0]
