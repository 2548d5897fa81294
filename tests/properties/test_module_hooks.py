"""The module-hooks suite (`torchcts.properties.suites.module_hooks`): hooks on a device module fire in CPU's order
with CPU's values, their replacements take effect; clean faulty passes; the seeded hook bugs are caught."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.module_hooks import MODELS, MODULE_COUNTS, hooked_module
from torchcts.testing.faulty.suite_bugs.module_hooks import BUGS

BUG = {bug.name: bug for bug in BUGS}
aten = torch.ops.aten
NO_REPLACEMENT = [-1, -1, -1, -1]  # no module index: every hook returns None


def test_the_suite_is_registered_with_the_module_hooks_capability():
    registry.load()
    spec = registry.get("module_hooks")
    assert (spec.capability, spec.level, set(spec.items.scenarios)) == ("module_hooks", 4, set(MODELS))


@pytest.mark.parametrize("model", MODELS)
def test_the_program_logs_every_hook_in_order(model):
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(0))
    events, seen, *_, keys, _ = hooked_module(x, model, [3, 4, 2], 7, NO_REPLACEMENT, [0.5, 2.0, -1.0, 2.0])
    count = MODULE_COUNTS[model]
    forward = [e for e in events if e.startswith("forward")]
    backward = [e for e in events if e.startswith("backward")]
    assert len(forward) == len(backward) == 2 * count
    assert forward[0] == "forward_pre net" and forward[-1] == "forward net"
    assert backward[0] == "backward_pre net" and backward[-1] == "backward net"
    assert events[-4:][0].startswith("state_dict_pre") and events[-1] == "load_post [] []"
    assert keys == sorted(keys) and all(t is None or isinstance(t, torch.Tensor) for t in seen)


def test_each_replacement_takes_effect():
    """A hook that returns a value replaces what the module passes on: the results differ from a run where every
    hook returns None, and scaling the output by -1 negates the model's output."""
    x = torch.randn(3, 2, generator=torch.Generator().manual_seed(1)).t()
    plain = hooked_module(x, "mlp", [3, 4, 2], 5, NO_REPLACEMENT, [0.5, -1.0, 2.0, 2.0])
    negated = hooked_module(x, "mlp", [3, 4, 2], 5, [-1, 0, -1, -1], [0.5, -1.0, 2.0, 2.0])
    assert torch.equal(negated[2], -plain[2])
    for targets, result in (([1, -1, -1, -1], 2), ([-1, -1, 0, -1], 3), ([-1, -1, -1, 3], 3)):
        changed = hooked_module(x, "mlp", [3, 4, 2], 5, targets, [0.5, -1.0, 2.0, 2.0])
        assert not torch.equal(changed[result], plain[result]), targets
    torch.manual_seed(5)
    fresh = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    # the state-dict post-hook scaled "0.bias" by the output scale, the load pre-hook shifted "2.weight"
    weight0, bias0, weight2, bias2 = plain[6]
    assert torch.equal(bias0, fresh[0].bias * -1.0) and torch.equal(weight2, fresh[2].weight + 0.5)
    assert torch.equal(weight0, fresh[0].weight) and torch.equal(bias2, fresh[2].bias)


@pytest.mark.parametrize("model", ["mlp", "nested"])
def test_a_model_passes_on_cpu_and_clean_faulty(run_suite, model):
    assert run_suite("module_hooks", model, max_examples=4)["outcome"] is Outcome.PASSED
    record = run_suite("module_hooks", model, device="faulty", max_examples=4)
    assert record["outcome"] is Outcome.PASSED, record


# one shrunk, one not (shrinking a hooked model takes seconds per step); a failing case is stored either way
@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@pytest.mark.parametrize("bug, model, shrink", [("hook_alias_ignores_strides", "norm", True),
                                                ("backward_hook_scales_twice", "mlp", False)])
def test_each_seeded_bug_is_detected(run_suite, tmp_path, bug, model, shrink):
    record = run_suite("module_hooks", model, device="faulty", bugs=(bug,), max_examples=15, shrink=shrink,
                       corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED, record
    assert record["counterexample"]["path"], record


def test_the_bugs_stay_silent_without_their_condition():
    transposed, view = torch.ones(3, 2).t(), aten.view.default
    alias = BUG["hook_alias_ignores_strides"]
    with torch.no_grad():
        assert alias.fires(view, (transposed, [2, 3]), {})
        assert not alias.fires(view, (transposed.contiguous(), [2, 3]), {})  # contiguous
        assert not alias.fires(view, (torch.ones(6), [2, 3]), {})  # another shape
    assert not alias.fires(view, (transposed, [2, 3]), {})  # grad mode on
    twice, mul = BUG["backward_hook_scales_twice"], aten.mul.Tensor
    assert not twice.fires(mul, (torch.ones(2), 2.0), {})  # no backward pass running
    fired = []
    x = torch.ones(2, requires_grad=True)
    (x * 3).sum().backward()  # a plain backward: the mul's node is MulBackward0, not a hook's
    linear = torch.nn.Linear(2, 2)
    linear.register_full_backward_hook(lambda m, gi, go: fired.append(twice.fires(mul, (go[0], 2.0), {})))
    linear(x).sum().backward()
    assert fired == [True]
