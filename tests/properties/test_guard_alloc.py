"""The allocator-guard suite (`torchcts.properties.suites.guard_alloc`): out-of-memory raises on CPU and the clean
faulty device, a backend that dies instead is a finding (the child process, not the run, dies), the manifest's
memory keys size the request and `oom_recoverable=False` is accounted, and each seeded bug is caught and fires only
under its condition."""

from __future__ import annotations

import types

import attrs
import pytest
import torch

from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.guard_alloc import (SCENARIOS, device_memory_bytes, fragmentation, oom_raises,
                                                  run_in_child, usable_bytes)
from torchcts.testing.faulty.bug_model import OUT_OF_MEMORY_STEP
from torchcts.testing.faulty.suite_bugs.guard_alloc import BUGS
from tests.properties.conftest import complete_manifest, item_for
from tests import warm_programs

BUG = {bug.name: bug for bug in BUGS}


@pytest.fixture(scope="module")
def run_guard(tmp_path_factory):
    """Run one guard_alloc item on `device` (manifest changes as keywords: hardware=..., resource_limits=...)."""
    root = tmp_path_factory.mktemp("guard_alloc")

    def run(scenario, device="faulty", bugs=(), max_examples=4, shrink=True, **changes):
        from torchcts.testing import faulty

        faulty.disable_bugs()
        if bugs:
            faulty.enable_bugs(*bugs)
        manifest = attrs.evolve(complete_manifest(root, device), **changes)
        settings = EngineSettings(target=Target(device), manifest=manifest, level=8, max_examples=max_examples,
                                  versions=versions(), shrink=shrink)
        try:
            return run_item(item_for("guard_alloc", scenario, "float32"), settings)
        finally:
            faulty.disable_bugs()

    return run


def test_the_suite_is_registered_with_the_guard_alloc_capability():
    registry.load()
    spec = registry.get("guard_alloc")
    assert (spec.capability, spec.level, spec.items.scenarios) == ("guard_alloc", 6, SCENARIOS)


def test_cpu_refuses_an_impossible_size_with_its_documented_error():
    (observation,) = oom_raises("cpu", 2**50)
    assert observation.holds and "can't allocate memory" in observation.seen, observation
    assert all(o.holds for o in fragmentation("cpu", [3, 1, 4, 1, 5], [True, False, True, False, False], [2, 6]))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_passes_on_cpu_and_clean_faulty(run_guard, scenario):
    assert run_guard(scenario)["outcome"] is Outcome.PASSED
    record = run_guard(scenario, device="cpu")
    if scenario == "reusable_after_oom":  # CPU counts no allocated bytes
        assert record["outcome"] is Outcome.RUNTIME_UNAVAILABLE and "memory_allocated" in record["reason"], record
    else:
        assert record["outcome"] is Outcome.PASSED, record


def test_a_crash_in_the_child_is_a_finding_naming_the_signal():
    """The allocation that aborts kills the child only: the parent gets a failing observation naming SIGABRT."""
    from torchcts.testing import faulty

    faulty.enable_bugs("oom_aborts_on_huge_request")
    try:
        (observation,) = run_in_child("faulty", "oom_raises", (2**33,))
    finally:
        faulty.disable_bugs()
    assert not observation.holds and "SIGABRT" in observation.seen, observation


def test_the_request_is_sized_past_every_memory_the_manifest_or_runtime_gives(tmp_path):
    from torchcts.testing import faulty  # noqa: F401

    manifest = complete_manifest(tmp_path, "faulty")

    def sized(**changes):
        cts = types.SimpleNamespace(target=Target("faulty"), manifest=attrs.evolve(manifest, **changes),
                                    on_device_call=lambda run, sample, what="": run(None, sample, None))
        return device_memory_bytes(cts, torch.faulty)

    assert sized() == torch.faulty.get_device_properties(0).total_memory  # nothing in the manifest: the runtime's
    assert sized(hardware=attrs.evolve(manifest.hardware, device_memory_gb=(64.0,))) == 64 * 2**30
    small, large = (attrs.evolve(manifest.resource_limits, max_device_memory_mb=mb) for mb in (1024, 10 * 2**10))
    assert sized(resource_limits=small) == 4 * 2**30 and sized(resource_limits=large) == 10 * 2**30  # the largest
    tight = attrs.evolve(manifest.resource_limits, max_device_memory_mb=8)
    assert usable_bytes(types.SimpleNamespace(manifest=attrs.evolve(manifest, resource_limits=tight))) == 2 * 2**20


def test_a_manifest_saying_the_device_does_not_recover_accounts_the_reuse_scenario(run_guard, tmp_path):
    hardware = attrs.evolve(complete_manifest(tmp_path, "faulty").hardware, oom_recoverable=False)
    record = run_guard("reusable_after_oom", hardware=hardware)
    assert record["outcome"] is Outcome.CAPABILITY_NOT_DECLARED and "oom_recoverable" in record["reason"], record


@pytest.mark.parametrize("bug, scenario", [("oom_aborts_on_huge_request", "oom_raises"),
                                           ("oom_leaks_split_block", "reusable_after_oom"),
                                           ("fragmented_fill_partial", "fragmentation")])
def test_each_seeded_bug_is_detected(run_guard, bug, scenario):
    record = run_guard(scenario, bugs=(bug,), max_examples=4, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_oom_bugs_fire_only_for_their_requests():
    aborts, leaks = BUG["oom_aborts_on_huge_request"], BUG["oom_leaks_split_block"]
    assert aborts.ops == leaks.ops == (OUT_OF_MEMORY_STEP,)
    assert aborts.fires(OUT_OF_MEMORY_STEP, (0, 2**32), {}) and not aborts.fires(OUT_OF_MEMORY_STEP, (0, 2**31), {})
    from torchcts.testing.faulty import memory

    held = torch.ones(8, device="faulty:1")
    assert leaks.fires(OUT_OF_MEMORY_STEP, (1, 2**40), {}) == (memory.allocated(1) > 0)
    del held


def test_the_fill_bug_fires_only_among_32_live_blocks():
    import gc

    fill = BUG["fragmented_fill_partial"]
    gc.collect()

    few = [torch.empty(4, device="faulty:1") for _ in range(3)]
    few[0].fill_(1.0)
    assert not fill.fires(torch.ops.aten.fill_.Scalar, (few[0]._data, 1.0), {})
    many = few + [torch.empty(4, device="faulty:1") for _ in range(40)]
    many[-1].fill_(1.0)
    assert fill.fires(torch.ops.aten.fill_.Scalar, (many[-1]._data, 1.0), {})
    assert not fill.fires(torch.ops.aten.fill_.Scalar, (torch.empty(1), 1.0), {})  # one element: nothing to halve



@pytest.mark.slow
def test_a_case_stores_the_factor_so_no_stored_case_names_a_grantable_request(tmp_path):
    """A hostile case naming bytes (8 GiB: grantable on CPU) is unreadable, naming the field, exit 2; a stored
    factor replays as a request past the replaying device's memory (2**50 bytes on CPU: refused, passed)."""
    import json
    import os
    import subprocess
    import sys

    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.cases.files import case_path, new_case, save_case

    def replay(factor):
        case = new_case(prop="guard_alloc", op="oom_raises", variant="scenario", dtype="float32", device_type="cpu",
                        backend=None, sample=SampleInput(torch.zeros(1), args=(factor,)),
                        failure={"outcome": "failed", "message": "hostile"}, found={})
        folder = tmp_path / str(factor)
        path = case_path(folder, case)
        save_case(path, case)
        done = warm_programs.run([sys.executable, "-m", "torchcts", "replay", str(path), "--device", "cpu",
                               "--results-dir", str(folder / "results")], capture_output=True, text=True,
                              cwd=tmp_path, timeout=600, env=dict(os.environ))
        records = [json.loads(line) for line in (next((folder / "results").iterdir()) / "records.jsonl").open()]
        return done, records

    done, _ = replay(2**33)
    assert done.returncode == 2 and "inputs.args[0] (factor)" in done.stdout, done.stdout[-2000:] + done.stderr
    done, records = replay(3)
    assert done.returncode == 0 and [r["outcome"] for r in records] == ["passed"], (done.stdout[-2000:], records)
