"""The nested suite (`properties/suites/nested.py`): clean on cpu and faulty (jagged), each seeded bug caught,
strided nested an honest error on faulty, failures stored small."""

from __future__ import annotations


import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.properties.suites.nested import PROGRAMS, jagged_construct
from torchcts.testing.faulty.suite_bugs.nested import BUGS

BUG = {bug.name: bug for bug in BUGS}
CAUGHT_BY = {"jagged_padding_drops_last": "jagged_reduce_ragged", "padded_to_jagged_off_by_one": "jagged_padded"}
FAULTY_CANNOT = ("jagged_sdpa", "strided_nested")  # the faulty device holds no strided nested tensors
RAN = (Outcome.PASSED, Outcome.CPU_CONTRACT)


@pytest.mark.parametrize("scenario", sorted(PROGRAMS))
def test_every_scenario_passes_on_cpu_and_jagged_ones_on_the_clean_faulty_device(run_suite, scenario):
    assert run_suite("nested", scenario, "float32", max_examples=5)["outcome"] is Outcome.PASSED
    on_faulty = run_suite("nested", scenario, "float32", device="faulty", max_examples=5, shrink=False)
    assert on_faulty["outcome"] is (Outcome.ERROR if scenario in FAULTY_CANNOT else Outcome.PASSED), on_faulty


@pytest.mark.parametrize("dtype", ["float64", "complex64", "int64", "bool", "bfloat16"])
def test_other_dtypes_pass_or_are_refused_by_cpu(run_suite, dtype):
    for scenario in ("jagged_elementwise", "jagged_padded"):
        record = run_suite("nested", scenario, dtype, max_examples=4)
        assert record["outcome"] in RAN, (scenario, record)


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_each_seeded_bug_is_caught(run_suite, bug):
    record = run_suite("nested", CAUGHT_BY[bug], "float32", device="faulty", bugs=(bug,), max_examples=25,
                       shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_bugs_stay_silent_without_their_condition():
    to_padded = BUG["jagged_padding_drops_last"].fires
    values = torch.ones(3, 2)
    assert to_padded(None, (values, [torch.tensor([0, 1, 3])], [2], 0.0), {})
    assert not to_padded(None, (values, [torch.tensor([0, 3])], [3], 0.0), {})  # one component
    assert not to_padded(None, (values, [torch.tensor([0, 3, 3])], [3], 0.0), {})  # the last one empty
    to_jagged = BUG["padded_to_jagged_off_by_one"].fires
    padded = torch.ones(2, 3, 2)
    assert to_jagged(None, (padded, [torch.tensor([0, 1, 4])]), {})
    assert not to_jagged(None, (padded, [torch.tensor([0, 3, 6])]), {})  # no component shorter than the padding


def test_the_construct_program_reads_through_offsets_and_lengths():
    parts = [torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0], [5.0, 6.0]])]
    copied, offsets, flat, dim, batch, viewed, view_contiguous, holey, holey_contiguous = jagged_construct(parts, [2, 1])
    for got in (copied, viewed, holey):
        assert [c.tolist() for c in got] == [p.tolist() for p in parts]
    assert offsets.tolist() == [0, 1, 3] and (dim, batch) == (3, 2)
    assert view_contiguous and not holey_contiguous


@pytest.mark.slow
def test_a_failure_is_stored_small_and_replays(run_suite, tmp_path, replays_failing):
    bug = "jagged_padding_drops_last"
    record = run_suite("nested", "jagged_padded", "float32", device="faulty", bugs=(bug,), max_examples=20,
                       corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED
    stored = record["counterexample"]
    assert stored["elements"] <= 4, stored  # two components of one element each
    replays_failing(stored["path"], bug, tmp_path)
