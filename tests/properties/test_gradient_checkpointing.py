"""The gradient-checkpointing suite (`torchcts.properties.suites.gradient_checkpointing`): a checkpointed block on the
device equals its plain run (dropout masks replayed) and CPU's eval-mode results; clean faulty passes; the seeded
recompute bugs are caught."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.gradient_checkpointing import MODES, checkpointed_block
from torchcts.testing.faulty.suite_bugs.gradient_checkpointing import BUGS

BUG = {bug.name: bug for bug in BUGS}
aten = torch.ops.aten


def test_the_suite_is_registered_with_the_gradient_checkpointing_capability():
    registry.load()
    spec = registry.get("gradient_checkpointing")
    assert (spec.capability, spec.level, set(spec.items.scenarios)) == ("gradient_checkpointing", 4, set(MODES))


@pytest.mark.parametrize("mode, segments, reentrant", [("reentrant", 1, True), ("non_reentrant", 1, False),
                                                       ("sequential", 3, True), ("sequential", 2, False)])
def test_on_cpu_the_checkpointed_run_equals_the_plain_one(mode, segments, reentrant):
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    state = torch.get_rng_state()
    differences, draw, evaluated = checkpointed_block(x, mode, [4, 5, 3], 7, 0.5, segments, reentrant, 11)
    assert all(torch.equal(d, torch.zeros_like(d)) for d in [*differences, draw])
    output, input_grad, *grads = evaluated
    assert output.shape == (3, 3) and input_grad.shape == x.shape and len(grads) == 8
    assert torch.equal(torch.get_rng_state(), state)  # the program's seeding stays inside it


def test_the_differences_see_a_wrong_mask():
    """Without the replayed RNG state the recompute draws other masks: the same program with `preserve_rng_state`
    off gives non-zero differences (so the suite's zero is evidence, not a tautology)."""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))
    x = torch.randn(3, 4, requires_grad=True)
    torch.manual_seed(11)
    checkpoint(net, x, use_reentrant=False, preserve_rng_state=False).square().sum().backward()
    unreplayed, x.grad = x.grad, None
    torch.manual_seed(11)
    net(x).square().sum().backward()
    assert not torch.equal(unreplayed, x.grad)


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_passes_on_cpu_and_clean_faulty(run_suite, mode):
    assert run_suite("gradient_checkpointing", mode, max_examples=4)["outcome"] is Outcome.PASSED
    record = run_suite("gradient_checkpointing", mode, device="faulty", max_examples=4)
    assert record["outcome"] is Outcome.PASSED, record


@pytest.mark.parametrize("bug, mode", [("recompute_dropout_redraws", "non_reentrant"),
                                       ("recompute_addmm_adds_bias_twice", "sequential")])
def test_each_seeded_bug_is_detected(run_suite, tmp_path, bug, mode):
    # unshrunk: shrinking a checkpointed block takes seconds per case; the first failing case is stored all the same
    record = run_suite("gradient_checkpointing", mode, device="faulty", bugs=(bug,), max_examples=15, shrink=False,
                       corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED, record
    assert record["counterexample"]["path"], record


def test_the_bugs_stay_silent_outside_a_recompute():
    dropout, addmm = aten.native_dropout.default, aten.addmm.default
    redraws, twice = BUG["recompute_dropout_redraws"], BUG["recompute_addmm_adds_bias_twice"]
    x = torch.ones(2, 2)
    assert not redraws.fires(dropout, (x, 0.5, True), {})  # a plain forward
    assert not twice.fires(addmm, (x, x, x), {})
    seen = []

    def fired():
        return (twice.fires(addmm, (x, x, x), {}), redraws.fires(dropout, (x, 0.5, True), {}),
                redraws.fires(dropout, (x, 0.5, False), {}))

    def spy(grad):
        seen.append(fired())
        with torch.enable_grad():  # as checkpoint's recompute runs
            seen.append(fired())
        return grad

    y = torch.ones(2, requires_grad=True)
    y.register_hook(spy)
    (y * 2).sum().backward()
    assert seen == [(False, False, False), (True, True, False)]  # a plain backward runs with grad mode off
