"""The gradient-check suites (`torchcts.properties.suites.gradcheck`): `gradcheck` runs torch.autograd.gradcheck in
float64 on the device, `double_backward` compares second-order gradients with CPU's; clean CPU and faulty pass; the
seeded gradient bugs are caught, the double-backward one by its own suite only, and stay silent without their
condition."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.testing.faulty.suite_bugs.gradcheck import BUGS

BUG = {bug.name: bug for bug in BUGS}
aten = torch.ops.aten


def test_the_suites_are_registered_with_their_capabilities():
    registry.load()
    gradcheck, double = registry.get("gradcheck"), registry.get("double_backward")
    assert (gradcheck.capability, gradcheck.level, gradcheck.variant) == ("gradcheck", 4, "function")
    assert (double.capability, double.level, double.variant) == ("double_backward", 4, "function")
    assert {bug.suite for bug in BUGS} == {"gradcheck", "double_backward"}


@pytest.mark.parametrize("prop, op, dtype", [("gradcheck", "tanh", "float64"), ("gradcheck", "log_softmax", "float64"),
                                             ("double_backward", "sigmoid", "float32"),
                                             ("double_backward", "log_softmax", "float64")])
def test_clean_cpu_and_faulty_pass(run_suite, prop, op, dtype):
    assert run_suite(prop, op, dtype, max_examples=4)["outcome"] is Outcome.PASSED
    record = run_suite(prop, op, dtype, device="faulty", max_examples=4)
    assert record["outcome"] is Outcome.PASSED, record


def test_an_op_cpu_cannot_check_is_cpu_contract_not_a_pass(run_suite):
    """as_strided_scatter's analytical gradient disagrees with finite differences on CPU itself: the device's
    failing gradcheck is then no finding, and the item is cpu_contract, never passed."""
    for device in ("cpu", "faulty"):
        record = run_suite("gradcheck", "as_strided_scatter", "float64", device=device, max_examples=3)
        assert record["outcome"] is Outcome.CPU_CONTRACT, record


@pytest.mark.parametrize("bug, prop, op, dtype", [
    ("log_softmax_backward_float64_drops_sum", "gradcheck", "log_softmax", "float64"),
    ("backward_reuses_grad_output", "double_backward", "tanh", "float32"),
])
def test_each_seeded_bug_is_detected_by_its_suite(run_suite, tmp_path, bug, prop, op, dtype):
    record = run_suite(prop, op, dtype, device="faulty", bugs=(bug,), max_examples=10, corpus_dir=tmp_path,
                       shrink=False)
    assert record["outcome"] is Outcome.FAILED, record
    assert record["counterexample"]["path"], record


def test_the_double_backward_bug_escapes_first_order_checks(run_suite):
    """Its first-order gradients are right: `backward` and `gradcheck` pass with it on."""
    for prop, dtype in (("backward", "float32"), ("gradcheck", "float64")):
        record = run_suite(prop, "tanh", dtype, device="faulty", bugs=("backward_reuses_grad_output",),
                           max_examples=4)
        assert record["outcome"] is Outcome.PASSED, (prop, record)


def test_the_bugs_stay_silent_without_their_condition():
    log_softmax_bug = BUG["log_softmax_backward_float64_drops_sum"]
    backward = aten._log_softmax_backward_data.default
    for dtype, fires in ((torch.float64, True), (torch.float32, False)):
        grad = torch.ones(2, 3, dtype=dtype)
        assert log_softmax_bug.fires(backward, (grad, grad, 1, dtype), {}) is fires

    reuse_bug = BUG["backward_reuses_grad_output"]
    seen = []

    class Spy(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is aten.tanh_backward.default:
                seen.append(reuse_bug.fires(func, args, kwargs or {}))
            return func(*args, **(kwargs or {}))

    x = torch.randn(3, requires_grad=True)
    for create_graph in (False, True):
        with Spy():
            torch.autograd.grad(torch.tanh(x), x, torch.ones(3), create_graph=create_graph)
    grad = torch.ones(3)
    seen.append(reuse_bug.fires(aten.tanh_backward.default, (grad, torch.tanh(x.detach())), {}))  # called directly
    assert seen == [False, True, False]
