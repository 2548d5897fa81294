"""The device API suite (`torchcts.properties.suites.device_api`): the programs' invariants hold on CPU (where it has
the facility) and on the clean faulty device, CPU's missing facilities are runtime_unavailable with the reason,
and each seeded runtime bug is caught and fires only under its condition."""

from __future__ import annotations

import attrs
import pytest
import torch

from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.device_api import SCENARIOS, availability, memory_stats, set_device
from torchcts.testing.faulty.bug_model import DEVICE_COUNT_STEP, MEMORY_STATS_STEP, SET_DEVICE_STEP
from torchcts.testing.faulty.suite_bugs.device_api import BUGS
from tests.properties.conftest import complete_manifest, item_for

BUG = {bug.name: bug for bug in BUGS}
CPU_HAS = ("availability", "set_device", "synchronize")


@pytest.fixture(scope="module")
def run_api(tmp_path_factory):
    """Run one device_api item on `device` with a manifest claiming the device's count (faulty: 2)."""
    root = tmp_path_factory.mktemp("device_api")

    def run(scenario, device="faulty", bugs=(), max_examples=6, **changes):
        from torchcts.testing import faulty

        faulty.disable_bugs()
        if bugs:
            faulty.enable_bugs(*bugs)
        changes.setdefault("device_count", 2 if device == "faulty" else 1)
        manifest = attrs.evolve(complete_manifest(root, device), **changes)
        settings = EngineSettings(target=Target(device), manifest=manifest, level=8, max_examples=max_examples,
                                  versions=versions())
        try:
            return run_item(item_for("device_api", scenario, "float32"), settings)
        finally:
            faulty.disable_bugs()

    return run


def test_the_suite_is_registered_with_the_device_api_capability():
    registry.load()
    spec = registry.get("device_api")
    assert (spec.capability, spec.level, spec.items.scenarios) == ("device_api", 6, SCENARIOS)


def test_the_programs_observe_cpus_runtime():
    assert all(o.holds for o in availability("cpu", 1, [0, 3])), list(availability("cpu", 1, [0]))
    assert not next(o for o in availability("cpu", 2, [0]) if "manifest" in o.what).holds  # CPU has one device
    assert all(o.holds for o in set_device("cpu", 5, 3))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_passes_on_clean_faulty_and_on_cpu_where_cpu_has_it(run_api, scenario):
    assert run_api(scenario)["outcome"] is Outcome.PASSED
    record = run_api(scenario, device="cpu")
    if scenario in CPU_HAS:
        assert record["outcome"] is Outcome.PASSED, record
    else:
        assert record["outcome"] is Outcome.RUNTIME_UNAVAILABLE and "torch.cpu has no" in record["reason"], record


def test_a_manifest_claiming_more_devices_than_the_runtime_has_fails(run_api):
    record = run_api("availability", device_count=3, max_examples=2)
    assert record["outcome"] is Outcome.FAILED and "device_count() >= the manifest's device_count 3" in str(record)


@pytest.mark.parametrize("bug, scenarios", [
    ("device_count_after_switch", ("availability",)),
    ("set_device_ignored_above_0", ("set_device", "device_guard")),
    ("memory_allocated_stale_after_large_free", ("memory_stats",)),
    ("peak_from_reserved", ("peak_and_cache",)),
])
def test_each_seeded_bug_is_detected(run_api, bug, scenarios):
    for scenario in scenarios:
        record = run_api(scenario, bugs=(bug,), max_examples=10)
        assert record["outcome"] is Outcome.FAILED, (scenario, record)


def test_the_bugs_fire_only_under_their_condition():
    from torchcts.testing import faulty  # noqa: F401 - registers the device
    from torchcts.testing.faulty import runtime

    count, switch = BUG["device_count_after_switch"], BUG["set_device_ignored_above_0"]
    assert count.ops == (DEVICE_COUNT_STEP,) and switch.ops == (SET_DEVICE_STEP,)
    assert not count.fires(DEVICE_COUNT_STEP, (), {})  # device 0 current
    with torch.faulty.device(1):
        assert count.fires(DEVICE_COUNT_STEP, (), {}) and count.perturb(DEVICE_COUNT_STEP, (), {}, 2) == 1
    assert runtime.current() == 0
    assert switch.fires(SET_DEVICE_STEP, (0, 1), {}) and not switch.fires(SET_DEVICE_STEP, (1, 0), {})
    assert not switch.fires(SET_DEVICE_STEP, (1, 1), {})


def test_the_memory_bugs_fire_only_after_a_large_free_or_a_reset_with_cached_blocks():
    from torchcts.testing import faulty  # noqa: F401

    stale, peak = BUG["memory_allocated_stale_after_large_free"], BUG["peak_from_reserved"]
    assert stale.ops == peak.ops == (MEMORY_STATS_STEP,)
    torch.faulty.empty_cache()
    small = torch.empty(1024, dtype=torch.uint8, device="faulty")
    assert not stale.fires(MEMORY_STATS_STEP, (0,), {})
    del small
    assert not stale.fires(MEMORY_STATS_STEP, (0,), {})  # a small free settles at once
    large = torch.empty(2**20, dtype=torch.uint8, device="faulty")
    assert not stale.fires(MEMORY_STATS_STEP, (0,), {})
    del large
    assert stale.fires(MEMORY_STATS_STEP, (0,), {})  # >= 1 MiB freed, no allocation since
    again = torch.empty(1, device="faulty")
    assert not stale.fires(MEMORY_STATS_STEP, (0,), {})  # the next allocation settles it
    del again
    assert not peak.fires(MEMORY_STATS_STEP, (0,), {})  # no reset: the peak covers the reserved bytes
    torch.faulty.reset_peak_memory_stats()
    assert peak.fires(MEMORY_STATS_STEP, (0,), {})  # reset while 1 MiB stays cached
    torch.faulty.empty_cache()
    assert not peak.fires(MEMORY_STATS_STEP, (0,), {})


def test_the_memory_program_sees_a_stale_counter(run_api):
    """The program itself, with the stale bug on: the fall after `del` of 1 MiB is missing, nothing else is."""
    from torchcts.testing import faulty

    faulty.enable_bugs("memory_allocated_stale_after_large_free")
    try:
        broken = [o.what for o in memory_stats("faulty", 2**20) if not o.holds]
    finally:
        faulty.disable_bugs()
    assert len(broken) == 1 and broken[0].startswith("memory_allocated falls back"), broken


def test_a_stored_claim_is_checked_only_where_the_replaying_manifest_claims_as_many(tmp_path):
    """An availability case stores the device_count of the manifest it was found with (here 2, with a seeded bug):
    replayed under a manifest claiming 1 device it is runtime_unavailable naming both counts (another team's claim
    is no failure of this backend); under one claiming 2 it still fails."""
    from torchcts.cases.replay_items import replay_items
    from torchcts.testing import faulty

    manifest = complete_manifest(tmp_path, "faulty")
    faulty.disable_bugs()
    faulty.enable_bugs("device_count_after_switch")
    try:
        settings = EngineSettings(target=Target("faulty"), manifest=attrs.evolve(manifest, device_count=2), level=8,
                                  max_examples=20, versions=versions(), corpus_dir=tmp_path / "corpus")
        found = run_item(item_for("device_api", "availability", "float32"), settings)
        assert found["outcome"] is Outcome.FAILED, found
        path = found["counterexample"]["path"]

        def replay(device_count):
            claiming = attrs.evolve(manifest, device_count=device_count)
            settings = EngineSettings(target=Target("faulty"), manifest=claiming, level=8, max_examples=1,
                                      versions=versions())
            return run_item(replay_items([path])[0], settings)

        fewer, as_many = replay(1), replay(2)
    finally:
        faulty.disable_bugs()
    assert fewer["outcome"] is Outcome.RUNTIME_UNAVAILABLE, fewer
    assert "claims 2 devices" in fewer["reason"] and "this run's manifest claims 1" in fewer["reason"], fewer
    assert as_many["outcome"] is Outcome.FAILED and "device_count() stays 2" in str(as_many), as_many


def test_the_rows_are_invariants_of_the_device_alone_given_the_case_by_name():
    """Each row of the table is a Custom check with no program of its own (a runtime program has no CPU result to
    compare and nothing an exported script could check), and its program gets the case's values by name."""
    import torchcts.properties.suites.device_api as suite
    from torchcts.cases.scenario_case import scenario_case
    from torchcts.properties.runtime_checks import by_name
    from torchcts.properties.scenario_table import Custom

    registry.load()
    rows = suite.test_device_api.scenarios
    assert tuple(rows) == SCENARIOS and registry.get("device_api").items.programs == {}
    assert all(isinstance(row.comparison, Custom) and row.program is None for row in rows.values())
    params = rows["set_device"].params
    case = scenario_case("set_device", torch.float32, params, {"input": torch.zeros(1), "elements": 3, "target": 5},
                         "set_device[5, 3]")
    assert case.sample.args == (5, 3)  # stored in declaration order, whatever order the values came in
    assert by_name(params, case.sample) == {"target": 5, "elements": 3}
    observed = list(set_device("cpu", **by_name(params, case.sample)))
    assert all(o.holds for o in observed) and "torch.empty(3, device='cpu')" in observed[-1].what, observed
