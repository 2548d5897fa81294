"""The multi-device suite (`torchcts.properties.suites.multi_device`): copies, ops, placement and mixed-device errors
across faulty:0 and faulty:1 pass on the clean device, one-device targets and manifests are runtime_unavailable with
the reason, and each seeded bug is caught and fires only under its condition."""

from __future__ import annotations

import attrs
import pytest
import torch

from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.multi_device import SCENARIOS, cross_copy, mixed_device_error
from torchcts.testing.faulty.suite_bugs.multi_device import BUGS
from tests.properties.conftest import complete_manifest, item_for

BUG = {bug.name: bug for bug in BUGS}


@pytest.fixture(scope="module")
def run_multi(tmp_path_factory):
    """Run one multi_device item on `device` with a manifest saying `device_count` devices (default 2)."""
    root = tmp_path_factory.mktemp("multi_device")

    def run(scenario, device="faulty", bugs=(), max_examples=5, device_count=2, shrink=True):
        from torchcts.testing import faulty

        faulty.disable_bugs()
        if bugs:
            faulty.enable_bugs(*bugs)
        manifest = attrs.evolve(complete_manifest(root, device), device_count=device_count)
        settings = EngineSettings(target=Target(device), manifest=manifest, level=8, max_examples=max_examples,
                                  versions=versions(), shrink=shrink)
        try:
            return run_item(item_for("multi_device", scenario, "float32"), settings)
        finally:
            faulty.disable_bugs()

    return run


def test_the_suite_is_registered_with_the_multi_device_capability():
    registry.load()
    spec = registry.get("multi_device")
    assert (spec.capability, spec.level, spec.items.scenarios) == ("multi_device", 7, SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_passes_on_clean_faulty_and_is_unavailable_on_cpu(run_multi, scenario):
    assert run_multi(scenario)["outcome"] is Outcome.PASSED
    record = run_multi(scenario, device="cpu", device_count=1)
    assert record["outcome"] is Outcome.RUNTIME_UNAVAILABLE, record
    assert "torch.cpu" in record["reason"], record  # one device (or no device guard) named


def test_a_one_device_manifest_makes_the_items_unavailable(run_multi):
    record = run_multi("cross_copy", device_count=1)
    assert record["outcome"] is Outcome.RUNTIME_UNAVAILABLE and "manifest's device_count is 1" in record["reason"]


def test_the_mixed_device_program_sees_runtime_errors_and_intact_operands():
    from torchcts.testing import faulty  # noqa: F401

    observations = list(mixed_device_error("faulty", 5, 1))
    assert len(observations) == 8 and all(o.holds for o in observations), observations


@pytest.mark.parametrize("bug, scenario", [("peer_copy_drops_last_chunk", "cross_copy"),
                                           ("second_device_cumsum_restarts", "second_device_ops"),
                                           ("guard_exit_keeps_inner_device", "guard_placement"),
                                           ("peer_copy_lands_on_source", "cross_copy"),
                                           ("second_device_memory_counted_on_first", "per_device_memory"),
                                           ("cpu_operand_accepted", "mixed_device_error")])
def test_each_seeded_bug_is_detected(run_multi, bug, scenario):
    record = run_multi(scenario, bugs=(bug,), max_examples=8, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_peer_copy_bug_needs_device_0_to_1_and_more_than_64_kib():
    from torchcts.testing import faulty

    faulty.enable_bugs("peer_copy_drops_last_chunk")
    try:
        big = torch.arange(16385.0)
        assert not all(o.holds for o in cross_copy("faulty", 16385, 0))  # 64 KiB + 4 bytes, 0 -> 1
        assert all(o.holds for o in cross_copy("faulty", 16384, 0))  # exactly 64 KiB
        on_one = big.to("faulty:1")  # CPU -> 1: no peer copy
        assert torch.equal(on_one.to("faulty:1").cpu(), big) and torch.equal(big.to("faulty:0").to("faulty:0").cpu(),
                                                                              big)
        assert torch.equal(on_one.to("faulty:0").cpu(), big)  # 1 -> 0 is right
    finally:
        faulty.disable_bugs()


def test_the_cumsum_bug_needs_device_1_and_more_than_1024_elements():
    from torchcts.testing import faulty

    faulty.enable_bugs("second_device_cumsum_restarts")
    try:
        x = torch.ones(1025)
        assert torch.equal(x.to("faulty:0").cumsum(0).cpu(), x.cumsum(0))
        assert torch.equal(x[:1024].to("faulty:1").cumsum(0).cpu(), x[:1024].cumsum(0))
        assert x.to("faulty:1").cumsum(0).cpu()[-1].item() == 1.0  # restarted at element 1024
    finally:
        faulty.disable_bugs()


def test_the_guard_and_placement_bugs_fire_only_in_their_condition():
    from torchcts.testing import faulty

    guard, placement = BUG["guard_exit_keeps_inner_device"], BUG["peer_copy_lands_on_source"]
    assert guard.fires(None, (1, 0), {}) and not guard.fires(None, (0, 1), {}) and not guard.fires(None, (1, 1), {})
    copy = torch.ops.aten._to_copy.default
    assert placement.fires(None, (copy, 1, 0), {}) and not placement.fires(None, (copy, 0, 1), {})
    x = torch.arange(4.0, device="faulty:0")
    faulty.enable_bugs("guard_exit_keeps_inner_device", "peer_copy_lands_on_source")
    try:
        torch.faulty.set_device(0)
        with torch.faulty.device(1):
            pass
        left_on = torch.faulty.current_device()
        moved, back = x.to("faulty:1"), x.to("faulty:1", copy=True).cpu()
    finally:
        faulty.disable_bugs()
        torch.faulty.set_device(0)
    assert left_on == 1 and moved.device == torch.device("faulty", 0) and back.tolist() == [0.0, 1.0, 2.0, 3.0]
    with torch.faulty.device(1):
        pass
    assert torch.faulty.current_device() == 0 and x.to("faulty:1").device == torch.device("faulty", 1)


def test_the_memory_bug_counts_device_1_on_device_0_only_while_it_holds_memory():
    from torchcts.testing import faulty

    bug = BUG["second_device_memory_counted_on_first"]
    held = torch.empty(1024, device="faulty:1")
    assert bug.fires(None, (0,), {}) and not bug.fires(None, (1,), {})
    faulty.enable_bugs(bug.name)
    try:
        on_first, on_second = torch.faulty.memory_allocated(0), torch.faulty.memory_allocated(1)
    finally:
        faulty.disable_bugs()
    assert on_first == torch.faulty.memory_allocated(0) + on_second and on_second >= 4096
    del held
