"""The ieee754 suite: passes on CPU and the clean faulty device, catches each seeded IEEE-754 bug with a small
case that lands in the corpus and replays, and its bugs stay silent off their condition."""

from __future__ import annotations

import math
import os
import sys

import pytest
import torch

from torchcts.cases.files import load_case
from torchcts.core.outcomes import Outcome
from torchcts.properties.ieee754_cases import exp_argument_values, max_exponent, tiny_exponent
from torchcts.properties.suites.ieee754 import PROGRAMS, assert_exactly_equal
from torchcts.testing.faulty.suite_bugs.ieee754 import BUGS
from tests import warm_programs

BUG = {bug.name: bug for bug in BUGS}
FUNC = None  # the bugs' predicates and perturbations do not look at the overload


@pytest.mark.parametrize("scenario", sorted(PROGRAMS))
def test_every_scenario_passes_on_cpu_and_on_the_clean_faulty_device(run_suite, scenario):
    for dtype in ("bfloat16", "float32"):
        assert run_suite("ieee754", scenario, dtype, max_examples=8)["outcome"] is Outcome.PASSED
    assert run_suite("ieee754", scenario, "float16", device="faulty", max_examples=8)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug, scenario, dtype", [
    ("subnormal_flush_half", "subnormal_arithmetic", "float16"),
    ("round_half_away", "rounding", "float32"),
    ("atan2_negative_zero", "signed_zero", "float64"),
    ("nan_dropped_min", "nan_minmax", "bfloat16"),
    ("negative_zero_reciprocal", "signed_zero", "float32"),  # core bugs of the class the suite is for
    ("inf_minus_inf", "inf_arithmetic", "float32"),
    # range limits: finite operands whose results overflow or underflow
    ("overflow_saturate_half", "overflow", "float16"),
    ("overflow_saturate_half", "overflow_exp", "bfloat16"),
    ("overflow_saturate_half", "overflow_casts", "float16"),
    ("underflow_flush_float16", "underflow_accumulation", "float16"),
    ("subnormal_flush_half", "underflow", "bfloat16"),
    ("sum_saturates_float32", "overflow_accumulation", "float32"),
])
def test_each_seeded_bug_is_detected(run_suite, bug, scenario, dtype):
    record = run_suite("ieee754", scenario, dtype, device="faulty", bugs=(bug,), max_examples=40, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_bugs_stay_silent_off_their_condition():
    plain = (torch.tensor([1.0, -2.0, 3.0], dtype=torch.float16), torch.tensor([2.0, 4.0, -1.0], dtype=torch.float16))
    assert not BUG["round_half_away"].fires(FUNC, (torch.tensor([0.25, 1.0, -2.75]),), {})
    assert not BUG["atan2_negative_zero"].fires(FUNC, (torch.tensor([0.0, -1.0]), torch.tensor([-1.0, -0.0])), {})
    assert not BUG["nan_dropped_min"].fires(FUNC, (torch.tensor([1.0, math.inf]),), {})
    flush = BUG["subnormal_flush_half"]
    assert not flush.fires(FUNC, (plain[0].float(), plain[1].float()), {})  # float32: not its dtype
    product = plain[0] * plain[1]
    assert torch.equal(flush.perturb(FUNC, plain, {}, product), product)  # no subnormal result: unchanged
    tiny = torch.tensor([2.0**-20], dtype=torch.float16)
    assert flush.perturb(FUNC, (tiny, tiny), {}, tiny).item() == 0.0


def test_the_range_limit_bugs_act_only_on_overflow_and_underflow_in_their_dtypes():
    half_max = torch.finfo(torch.float16).max
    big = torch.tensor([half_max, -half_max, 1.0], dtype=torch.float16)
    saturate, flush, sum_saturates = BUG["overflow_saturate_half"], BUG["underflow_flush_float16"], BUG["sum_saturates_float32"]
    assert saturate.perturb(FUNC, (big, big), {}, big * 2).tolist() == [half_max, -half_max, 2.0]
    assert not saturate.fires(FUNC, (big.float(), big.float()), {})  # float32: not its dtype
    assert not saturate.fires(FUNC, (torch.tensor([math.inf], dtype=torch.float16), big), {})  # inf given, not made
    assert saturate.fires(FUNC, (torch.tensor([7e4]),), {"dtype": torch.bfloat16})  # a cast into bfloat16
    plain = big[2:] * 3
    assert torch.equal(saturate.perturb(FUNC, (big[2:], big[2:]), {}, plain), plain)  # no overflow: unchanged
    tiny = torch.tensor([[2.0**-12]], dtype=torch.float16)
    assert flush.perturb(FUNC, (tiny, tiny), {}, tiny @ tiny).item() == 0.0
    assert not flush.fires(FUNC, (tiny.to(torch.bfloat16), tiny.to(torch.bfloat16)), {})
    large = torch.tensor([3e38, 3e38])
    assert sum_saturates.perturb(FUNC, (large,), {}, large.sum()).item() == torch.finfo(torch.float32).max
    assert not sum_saturates.fires(FUNC, (large.double(),), {})
    assert not sum_saturates.fires(FUNC, (torch.tensor([math.inf, 1.0]),), {})


def test_range_limit_inputs_reach_overflow_and_underflow_in_every_dtype():
    """The scenarios' elements sit at the limits: 16 large units pass max, products of the underflow elements
    span the subnormals, and exp's arguments fall on both sides of both thresholds."""
    for name in ("float16", "bfloat16", "float32", "float64"):
        dtype = getattr(torch, name)
        info = torch.finfo(dtype)
        unit = math.ldexp(1.0, max_exponent(dtype) - 3)  # large_units: k * unit, k in 1..15
        assert 15 * unit <= info.max < 16 * unit and torch.tensor([16 * unit], dtype=torch.float64).to(dtype).isinf()
        assert math.ldexp(1.0, -tiny_exponent(dtype)) == info.smallest_normal * info.eps
        arguments = torch.tensor(exp_argument_values(dtype), dtype=torch.float64).to(dtype)
        result = torch.exp(arguments)
        assert bool(result.isinf().any()) and bool((result == 0).any())
        assert bool(((result > 0) & (result < info.smallest_normal)).any())  # a subnormal exp


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_forward_finds_a_half_precision_overflow_that_saturates_through_near_limit_values(run_suite, tmp_path):
    """`overflow_saturate_half` found by `forward` on mul's float16 OpInfo samples (from level 2 half-precision
    samples get values near max: docs/strategies.md); the stored case holds one of them, finite, overflowing."""
    record = run_suite("forward", "mul", "float16", device="faulty", bugs=("overflow_saturate_half",),
                       max_examples=40, corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED, record
    sample = load_case(record["counterexample"]["path"]).sample()
    values = torch.cat([sample.input.flatten(), *[a.flatten() for a in sample.args]]).double()
    assert int((values.abs() >= torch.finfo(torch.float16).max / 2).sum()) == 1 and bool(values.isfinite().all())
    assert bool(torch.mul(sample.input, *sample.args).isinf().any())


def test_the_comparison_is_exact_about_nan_signed_zero_and_values():
    same = (torch.tensor([math.nan, -0.0, 1.0]), 3)
    assert_exactly_equal(same, (torch.tensor([math.nan, -0.0, 1.0]), 3), call="p(x)", what="dev")
    with pytest.raises(AssertionError, match=r"output 0 of p\(x\): out\[1\] = 0.0, expected -0.0"):
        assert_exactly_equal((torch.tensor([math.nan, 0.0]),), (torch.tensor([math.nan, -0.0]),), call="p(x)", what="dev")
    with pytest.raises(AssertionError, match=r"out\[0, 1\] = 1.0, expected nan"):
        assert_exactly_equal(torch.tensor([[0.0, 1.0]]), torch.tensor([[0.0, math.nan]]), call="p(x)", what="dev")
    with pytest.raises(AssertionError, match="dtype"):
        assert_exactly_equal(torch.zeros(2), torch.zeros(2, dtype=torch.float64), call="p(x)", what="dev")


@pytest.mark.slow
def test_a_failure_is_small_lands_in_the_corpus_and_replays(run_suite, tmp_path):
    record = run_suite("ieee754", "nan_minmax", "bfloat16", device="faulty", bugs=("nan_dropped_min",),
                       max_examples=40, corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED
    path = record["counterexample"]["path"]
    sample = load_case(path).sample()
    assert sample.input.numel() == 1 and int(torch.stack([sample.input, sample.args[0]]).isnan().sum()) == 1  # one NaN
    env = {**os.environ, "TORCHCTS_FAULTY": "1", "TORCHCTS_FAULTY_BUGS": "nan_dropped_min"}
    replay = warm_programs.run([sys.executable, "-m", "torchcts", "replay", path, "--device", "faulty", "--strict"],
                            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert replay.returncode == 1 and "1 still failing" in replay.stdout + replay.stderr, replay.stdout + replay.stderr


@pytest.mark.slow  # about a minute: forward's OpInfo cases shrink through many transform choices
def test_special_values_in_forward_cases_shrink_to_few_elements(run_suite, tmp_path):
    """The core `negative_zero_reciprocal` bug (one -0.0 suffices) found by `forward` on reciprocal's
    OpInfo samples: the stored case holds at most 3 special elements (the special-value table shrinks)."""
    record = run_suite("forward", "reciprocal", "float32", device="faulty", bugs=("negative_zero_reciprocal",),
                       max_examples=30, corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED
    x = load_case(record["counterexample"]["path"]).sample().input.double()
    special = (~x.isfinite()) | ((x == 0) & x.signbit()) | ((x != 0) & (x.abs() < torch.finfo(torch.float32).tiny))
    assert bool(((x == 0) & x.signbit()).any()) and int(special.sum()) <= 3
