"""The foreach suite (`torchcts.properties.suites.foreach`): passes on CPU and clean faulty, catches its seeded bugs."""

from __future__ import annotations


import pytest
import torch

from torchcts.cases.files import load_case
from torchcts.cases.reduce import case_elements
from torchcts.core.outcomes import Outcome
from torchcts.properties.foreach_programs import FLOATING_PROGRAMS, PROGRAMS, foreach_binary
from torchcts.testing.faulty.suite_bugs.foreach import BUGS

BUG = {bug.name: bug for bug in BUGS}
aten = torch.ops.aten


@pytest.mark.parametrize("scenario", sorted(PROGRAMS))
def test_every_scenario_passes_on_cpu_and_on_clean_faulty(run_suite, scenario):
    for dtype in ("float32", "int64"):
        assert run_suite("foreach", scenario, dtype, max_examples=4)["outcome"] is Outcome.PASSED, (scenario, dtype)
    faulty = run_suite("foreach", scenario, "float16", device="faulty", max_examples=4)
    assert faulty["outcome"] is Outcome.PASSED, faulty


@pytest.mark.parametrize("scenario", sorted(FLOATING_PROGRAMS))
def test_the_floating_scenarios_pass_on_cpu_and_on_clean_faulty(run_suite, scenario):
    for dtype in ("float64", "bfloat16"):
        assert run_suite("foreach_floating", scenario, dtype, max_examples=4)["outcome"] is Outcome.PASSED
    assert run_suite("foreach_floating", scenario, "float32", device="faulty", max_examples=4)["outcome"] \
        is Outcome.PASSED


def test_cpu_foreach_is_the_per_tensor_loop():
    """The oracle's claim: CPU's foreach result is the per-tensor op's, bit for bit."""
    xs = [torch.randn(3, 2).t(), torch.randn(()), torch.randn(0, 4), torch.randn(5)]
    ys = [torch.randn(x.shape) for x in xs]
    got = foreach_binary(xs, ys, "add", 2.0, False)
    assert all(torch.equal(g, torch.add(x, y, alpha=2.0)) and g.stride() == torch.add(x, y).stride()
               for g, x, y in zip(got, xs, ys))


@pytest.mark.parametrize("bug, scenario", [("foreach_chunk_tail", "long_lists"),
                                           ("foreach_scalar_list_first", "binary_scalar_list"),
                                           ("foreach_noncontiguous_member", "unary"),
                                           ("foreach_large_tensor_tail", "long_lists")])
def test_each_seeded_bug_is_detected(run_suite, bug, scenario):
    record = run_suite("foreach", scenario, "float32", device="faulty", bugs=(bug,), max_examples=25, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_bugs_stay_silent_without_their_condition():
    short, long_ = [torch.ones(3)] * 4, [torch.ones(3)] * 33
    assert BUG["foreach_chunk_tail"].fires(aten._foreach_exp.default, (long_,), {})
    assert not BUG["foreach_chunk_tail"].fires(aten._foreach_exp.default, (short,), {})
    same, differ = [2.0] * 4, [2.0, 2.0, 3.0, 2.0]
    assert BUG["foreach_scalar_list_first"].fires(aten._foreach_mul.ScalarList, (short, differ), {})
    assert not BUG["foreach_scalar_list_first"].fires(aten._foreach_mul.ScalarList, (short, same), {})
    assert "aten._foreach_mul_.ScalarList" not in BUG["foreach_scalar_list_first"].ops
    transposed, stepped = torch.ones(2, 3).t(), torch.ones(6)[::2]
    noncontiguous = BUG["foreach_noncontiguous_member"]
    assert noncontiguous.fires(aten._foreach_abs.default, ([torch.ones(2), transposed],), {})
    assert noncontiguous.fires(aten._foreach_abs.default, ([stepped],), {})
    assert not noncontiguous.fires(aten._foreach_abs.default, (short,), {})
    assert not noncontiguous.fires(aten._foreach_abs.default, ([torch.ones(1, 3).expand(4, 3)],), {})
    large = BUG["foreach_large_tensor_tail"]
    assert large.fires(aten._foreach_neg.default, ([torch.ones(65537)],), {})
    assert not large.fires(aten._foreach_neg.default, ([torch.ones(65536)],), {})


@pytest.mark.slow
def test_a_scalar_list_failure_is_stored_small_and_replays(run_suite, tmp_path, replays_failing):
    bug = "foreach_scalar_list_first"
    record = run_suite("foreach", "binary_scalar_list", "float32", device="faulty", bugs=(bug,), max_examples=20,
                       corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED
    stored = record["counterexample"]
    sample = load_case(stored["path"]).sample()
    assert len(sample.input) == 2 and case_elements(sample) <= 4, sample.input
    replays_failing(stored["path"], bug, tmp_path)


def test_stored_partner_lists_must_hold_the_inputs_shapes():
    """Members (64,1,1) and (1,64,1) are each within the member bound but broadcast to 4096 elements (three lists:
    262144): a partner list holds the input's shapes, index by index, as `matching` draws it."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.properties.suites.foreach import FLOATING_PARAMS, PARAMS

    column, row = torch.zeros(64, 1, 1), torch.zeros(1, 64, 1)
    binary = PARAMS["binary_list"].problem(SampleInput([column], args=([row], "add", None, False)))
    assert binary is not None and "other: tensors of the input's tensors' shapes" in binary[1], binary
    assert PARAMS["binary_list"].problem(SampleInput([column], args=([column.clone()], "add", None, False))) is None
    pointwise = PARAMS["pointwise"].problem(SampleInput([column], args=([column], [row], "addcmul", None, False)))
    assert pointwise is not None and "tensor1, tensor2" in pointwise[1], pointwise
    lerp = FLOATING_PARAMS["lerp"].problem(SampleInput([column], args=([column], [row], False)))
    assert lerp is not None and "end, weight" in lerp[1], lerp
    assert FLOATING_PARAMS["lerp"].problem(SampleInput([column], args=([column], 0.5, False))) is None
