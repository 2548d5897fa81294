"""The fp8 suite (`torchcts.properties.suites.fp8`): passes on CPU and clean faulty, catches its seeded bugs."""

from __future__ import annotations

import math

import pytest
import torch

from torchcts.cases.files import load_case
from torchcts.cases.reduce import case_elements
from torchcts.core.outcomes import Outcome
from torchcts.properties.fp8_programs import PROGRAMS, cast_to_float8
from torchcts.properties.suites.fp8 import element, grid
from torchcts.testing.faulty.suite_bugs.fp8 import BUGS

BUG = {bug.name: bug for bug in BUGS}
TO_COPY = torch.ops.aten._to_copy.default
COPY_ = torch.ops.aten.copy_.default
SCALED_MM = torch.ops.aten._scaled_mm.default


@pytest.mark.parametrize("scenario", sorted(PROGRAMS))
def test_every_scenario_passes_on_cpu_and_on_clean_faulty(run_suite, scenario):
    for dtype in ("float8_e4m3fn", "float8_e5m2fnuz", "float8_e8m0fnu"):
        assert run_suite("fp8", scenario, dtype, max_examples=5)["outcome"] is Outcome.PASSED, (scenario, dtype)
    faulty = run_suite("fp8", scenario, "float8_e5m2", device="faulty", max_examples=5)
    assert faulty["outcome"] is Outcome.PASSED, faulty


def test_scaled_mm_passes_on_cpu_and_on_clean_faulty(run_suite):
    assert run_suite("fp8_scaled_mm", "scaled_mm", "float8_e5m2", max_examples=4)["outcome"] is Outcome.PASSED
    assert run_suite("fp8_scaled_mm", "scaled_mm", "float8_e4m3fn", device="faulty", max_examples=4)["outcome"] \
        is Outcome.PASSED


def test_the_drawn_values_sit_on_the_grid_where_casts_go_wrong():
    e4m3 = torch.float8_e4m3fn
    assert grid(e4m3)[0] == 0.0 and grid(e4m3)[-1] == 448.0 and len(grid(e4m3)) == 127
    assert element(e4m3, torch.float32, "tie", 8, False) == (grid(e4m3)[8] + grid(e4m3)[9]) / 2
    assert element(e4m3, torch.float32, "beyond_max", 0, True) == -464.0  # the tie at saturation
    assert math.isnan(element(e4m3, torch.float32, "nan", 0, False))
    assert math.copysign(1.0, element(e4m3, torch.float32, "zero", 0, True)) == -1.0
    near = element(e4m3, torch.bfloat16, "near_tie", 1, False)
    assert near > element(e4m3, torch.bfloat16, "tie", 1, False) and torch.tensor(near).bfloat16().item() == near
    nan, codes = cast_to_float8(torch.tensor([float("nan"), 1.0, -0.0]), torch.float8_e5m2)
    assert nan.tolist() == [True, False, False] and codes.tolist() == [0, 0x3C, 0x80]


@pytest.mark.parametrize("bug, prop, scenario, dtype", [
    ("fp8_cast_truncates", "fp8", "cast_to_float8", "float8_e4m3fn"),
    ("fp8_e4m3fn_overflow_nan", "fp8", "copy_into_float8", "float8_e4m3fn"),
    ("fp8_e5m2_nan_to_inf", "fp8", "cast_to_float8", "float8_e5m2"),
    ("fp8_decode_flushes_subnormals", "fp8", "cast_from_float8", "float8_e4m3fnuz"),
    ("fp8_scaled_mm_rowwise_first", "fp8_scaled_mm", "scaled_mm", "float8_e4m3fn")])
def test_each_seeded_bug_is_detected(run_suite, bug, prop, scenario, dtype):
    record = run_suite(prop, scenario, dtype, device="faulty", bugs=(bug,), max_examples=40, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_bugs_stay_silent_without_their_condition():
    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2
    exact, tie = torch.tensor([1.0, 0.5, -448.0]), torch.tensor([1.1875])  # 1.1875 rounds up to 1.25
    assert BUG["fp8_cast_truncates"].fires(TO_COPY, (tie,), {"dtype": e4m3})
    assert not BUG["fp8_cast_truncates"].fires(TO_COPY, (exact,), {"dtype": e4m3})
    assert not BUG["fp8_cast_truncates"].fires(TO_COPY, (tie,), {"dtype": torch.float16})
    assert not BUG["fp8_cast_truncates"].fires(TO_COPY, (tie.to(e4m3),), {"device": torch.device("cpu")})
    big = torch.tensor([500.0])
    assert BUG["fp8_e4m3fn_overflow_nan"].fires(COPY_, (torch.zeros(1, dtype=e4m3), big), {})
    assert not BUG["fp8_e4m3fn_overflow_nan"].fires(COPY_, (torch.zeros(1, dtype=e4m3), exact[:1]), {})
    assert not BUG["fp8_e4m3fn_overflow_nan"].fires(TO_COPY, (big,), {"dtype": e5m2})
    nan = torch.tensor([float("nan")])
    assert BUG["fp8_e5m2_nan_to_inf"].fires(TO_COPY, (nan,), {"dtype": e5m2})
    assert not BUG["fp8_e5m2_nan_to_inf"].fires(TO_COPY, (exact,), {"dtype": e5m2})
    subnormal = torch.tensor([1], dtype=torch.uint8).view(e4m3)
    normal = torch.tensor([0x38], dtype=torch.uint8).view(e4m3)
    assert BUG["fp8_decode_flushes_subnormals"].fires(TO_COPY, (subnormal,), {"dtype": torch.float32})
    assert not BUG["fp8_decode_flushes_subnormals"].fires(TO_COPY, (normal,), {"dtype": torch.float32})
    a, b = torch.ones(16, 16).to(e4m3), torch.ones(16, 16).to(e4m3).t()
    rows = torch.arange(16.0).reshape(16, 1)
    assert BUG["fp8_scaled_mm_rowwise_first"].fires(SCALED_MM, (a, b, rows, torch.ones(1, 16)), {})
    assert not BUG["fp8_scaled_mm_rowwise_first"].fires(SCALED_MM, (a, b, torch.tensor(2.0), torch.tensor(1.0)), {})


@pytest.mark.slow
def test_a_truncating_cast_is_stored_small_and_replays(run_suite, tmp_path, replays_failing):
    bug = "fp8_cast_truncates"
    record = run_suite("fp8", "cast_to_float8", "float8_e4m3fn", device="faulty", bugs=(bug,), max_examples=20,
                       corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED
    stored = record["counterexample"]
    sample = load_case(stored["path"]).sample()
    assert case_elements(sample) <= 2, sample.input
    replays_failing(stored["path"], bug, tmp_path)


def test_a_stored_move_other_must_have_the_inputs_shape():
    """move_float8's other is drawn the input's shape; (4, 1) with (1, 5) would make `where` broadcast."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.properties.suites.fp8 import PARAMS

    def problem(input_shape, other_shape):
        input, other = (torch.zeros(s, dtype=torch.float8_e4m3fn) for s in (input_shape, other_shape))
        args = (other, torch.zeros(1, dtype=torch.int64), torch.zeros(input_shape[1], dtype=torch.bool), "where")
        return PARAMS["move_float8"].problem(SampleInput(input, args=args))

    refused = problem((4, 1), (1, 5))
    assert refused is not None and "other has the input's shape" in refused[1], refused
    assert problem((4, 5), (4, 5)) is None
