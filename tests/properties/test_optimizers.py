"""The optimizer suites (`torchcts.properties.suites.optimizers`): foreach and fused `torch.optim` steps on the device
equal CPU's single-tensor loop, clean faulty passes, and the seeded fused-kernel bugs are caught."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.optimizers import FOREACH, FUSED, optimizer_steps
from torchcts.testing.faulty.suite_bugs.optimizers import BUGS

BUG = {bug.name: bug for bug in BUGS}
aten = torch.ops.aten


def test_both_suites_are_registered_with_their_capabilities():
    registry.load()
    foreach, fused = registry.get("foreach_optimizer"), registry.get("fused_optimizer")
    assert (foreach.capability, fused.capability) == ("foreach", "fused_optimizer")
    assert set(foreach.items.scenarios) == {f"foreach_{name}" for name in FOREACH}
    assert set(fused.items.scenarios) == {f"fused_{name}" for name in FUSED}


def test_the_program_returns_parameters_and_state_and_leaves_its_inputs_alone():
    params = [torch.ones(2), torch.zeros(())]
    grads = [[torch.full((2,), 0.5), torch.tensor(1.0)]] * 2
    before = [p.clone() for p in params]
    leaves, states = optimizer_steps(params, grads, "sgd", "single", {"lr": 0.1, "momentum": 0.9})
    assert all(torch.equal(a, b) for a, b in zip(params, before))  # the case's tensors are not stepped
    # two momentum steps: buffer 0.5 then 0.95; parameter 1 - 0.1 * (0.5 + 0.95)
    assert torch.allclose(leaves[0], torch.full((2,), 1 - 0.1 * 1.45)) and len(states) == 2
    assert torch.allclose(states[0][0], torch.full((2,), 0.95))
    fused, _ = optimizer_steps(params, grads, "sgd", "fused", {"lr": 0.1, "momentum": 0.9})
    assert all(torch.allclose(a, b) for a, b in zip(fused, leaves))


@pytest.mark.parametrize("prop, scenario", [("foreach_optimizer", "foreach_adam"),
                                            ("foreach_optimizer", "foreach_rmsprop"),
                                            ("fused_optimizer", "fused_adamw"), ("fused_optimizer", "fused_sgd")])
def test_a_scenario_passes_on_cpu_and_clean_faulty(run_suite, prop, scenario):
    assert run_suite(prop, scenario, max_examples=6)["outcome"] is Outcome.PASSED
    record = run_suite(prop, scenario, device="faulty", max_examples=6)
    assert record["outcome"] is Outcome.PASSED, record


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@pytest.mark.parametrize("bug, scenario", [("fused_adam_repeats_past_four", "fused_adam"),
                                           ("fused_adam_repeats_past_four", "fused_adamw"),
                                           ("fused_sgd_forgets_momentum", "fused_sgd")])
def test_each_seeded_bug_is_detected_and_shrunk(run_suite, tmp_path, bug, scenario):
    record = run_suite("fused_optimizer", scenario, device="faulty", bugs=(bug,), max_examples=20,
                       corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED, record
    assert record["counterexample"]["path"], record


def test_the_bugs_stay_silent_without_their_condition():
    short, long = [torch.ones(1)] * 4, [torch.ones(1)] * 5
    assert BUG["fused_adam_repeats_past_four"].fires(aten._fused_adam_.default, (long,), {})
    assert not BUG["fused_adam_repeats_past_four"].fires(aten._fused_adam_.default, (short,), {})
    sgd = aten._fused_sgd_.default
    assert BUG["fused_sgd_forgets_momentum"].fires(sgd, (short, short, short), {"momentum": 0.9})
    assert not BUG["fused_sgd_forgets_momentum"].fires(sgd, (short, short, []), {"momentum": 0.0})
