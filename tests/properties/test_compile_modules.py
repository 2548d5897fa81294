"""The whole-model compile suite (`torchcts.properties.suites.compile_modules`): the training workloads with their
forward compiled give eager CPU's results, and the record counts dynamo's graphs and graph breaks."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.compile_modules import SCENARIOS
from torchcts.properties.suites.training import train_steps
from torchcts.testing import faulty  # noqa: F401 - registered before autograd's engine starts (its device queues)


def test_the_suite_is_registered_with_the_compile_capability():
    registry.load()
    spec = registry.get("compile_modules")
    assert (spec.capability, spec.level, len(spec.items.scenarios)) == ("compile", 6, 8)
    assert set(SCENARIOS) == {f"{m}_{b}" for m in ("mlp", "cnn", "transformer", "rnn")
                              for b in ("aot_eager", "inductor")}


def test_the_compiled_program_trains_like_eager():
    input, target = torch.randn(3, 4, generator=torch.Generator().manual_seed(1)), torch.tensor([0, 1, 1])
    eager = train_steps(input, target, "mlp", [4, 5, 2], 3, 2, 0.1)
    compiled = train_steps(input, target, "mlp", [4, 5, 2], 3, 2, 0.1, "aot_eager")
    torch.testing.assert_close(compiled, eager)


def test_an_item_passes_on_cpu_and_records_dynamo_counts(run_suite):
    record = run_suite("compile_modules", "mlp_aot_eager", max_examples=2)
    assert record["outcome"] is Outcome.PASSED, record
    assert record["compile_stats"] == {"graph_breaks": 0, "graphs": 2}  # one graph per case: each starts afresh


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_training_bug_is_caught_through_compile(run_suite):
    record = run_suite("compile_modules", "cnn_aot_eager", device="faulty", bugs=("batch_norm_keeps_running_var",),
                       max_examples=2, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def _train(device, model, bugs=(), backend=None):
    """`train_steps` for a small `model` on `device` with the faulty device's `bugs` on (eager, or compiled)."""
    from torchcts.testing import faulty as device_module

    generator = torch.Generator().manual_seed(1)
    if model == "mlp":
        input, target, sizes = torch.randn(3, 4, generator=generator), torch.tensor([0, 1, 1]), [4, 5, 2]
    else:
        input, target, sizes = torch.randn(2, 2, 4, 4, generator=generator), torch.tensor([0, 1]), [2, 3, 2]
    device_module.disable_bugs()
    if bugs:
        device_module.enable_bugs(*bugs)
    try:
        result = train_steps(input.to(device), target.to(device), model, sizes, 3, 2, 0.1, backend)
        return [[t.cpu() for t in part] for part in result]
    finally:
        device_module.disable_bugs()


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@pytest.mark.parametrize("bug, model", [("compiled_addmm_drops_bias", "mlp"),
                                        ("compiled_batch_norm_biased_running_var", "cnn")])
def test_a_compile_bug_fires_only_in_compiled_code(bug, model):
    expected = _train("cpu", model)
    torch.testing.assert_close(_train("faulty", model, (bug,)), expected)  # eager on the device: right
    torch.testing.assert_close(_train("faulty", model, (), "aot_eager"), expected)  # compiled, no bug: right
    with pytest.raises(AssertionError):  # compiled with the bug: wrong
        torch.testing.assert_close(_train("faulty", model, (bug,), "aot_eager"), expected)


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@pytest.mark.parametrize("bug, scenario", [("compiled_addmm_drops_bias", "mlp_aot_eager"),
                                           ("compiled_batch_norm_biased_running_var", "cnn_aot_eager")])
def test_the_suite_catches_its_compile_bugs(run_suite, bug, scenario):
    clean = run_suite("compile_modules", scenario, device="faulty", max_examples=1, shrink=False)
    assert clean["outcome"] is Outcome.PASSED, clean
    record = run_suite("compile_modules", scenario, device="faulty", bugs=(bug,), max_examples=1, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record
