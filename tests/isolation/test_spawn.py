"""The spawned isolation pool on cpu, forced with `start="spawn"`: one pool runs items that pass, fail,
abort and hang; the records are those of an in-process run (plus `isolated`, `isolated_by`), a dead or
hung worker is replaced and later items keep running, and nothing outlives the run.

The test-only scenario properties live in a custom suite folder the manifest names, so the worker
loads them as it loads a user's suites. No outcome depends on the machine's speed: only the item
that hangs (for an hour) runs under a short timeout, and the timeout counts from the worker's ready
message, so a slow start of torch is never a hang.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import attrs
import pytest

from torchcts.cases.replay_items import ReplayItem
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.engine.spawn_messages import SpawnMessageError, item_from, item_json, settings_json
from torchcts.engine.spawned_item_worker import settings_from
from torchcts.engine.spawned_items import items_pool
from torchcts.isolation import spawn
from torchcts.isolation.policy import IsolationPolicy
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan.build import PlanItem

HANG_TIMEOUT_S = 4  # only ever given to the item that sleeps for an hour
ABS = PlanItem("forward", "abs", "function", "float32", 1)
COMPARED = ("outcome", "reason", "error", "examples", "fingerprints", "distinct_cases", "max_examples",
            "cpu_contract_cases", "unavailable_cases", "max_abs_error", "max_rel_error", "max_ulp", "counterexample")

SUITE = '''
"""Scenario properties that pass, fail, abort the process or hang, for the spawned pool's tests."""

import os
import time

from torchcts.plan.registry import ScenarioItems, register_property

ITEMS = ScenarioItems(["probe"], ["float32"])


@register_property("spawn_probe_passes", capability="inference", level=1, items=ITEMS)
def test_spawn_probe_passes(cts):
    print("the probe passes", flush=True)


@register_property("spawn_probe_fails", capability="inference", level=1, items=ITEMS)
def test_spawn_probe_fails(cts):
    raise AssertionError("the probe differs from CPU")


@register_property("spawn_probe_aborts", capability="inference", level=1, items=ITEMS)
def test_spawn_probe_aborts(cts):
    print("the probe aborts now", flush=True)
    os.abort()


@register_property("spawn_probe_hangs", capability="inference", level=1, items=ITEMS)
def test_spawn_probe_hangs(cts):
    pid_file = os.environ.get("SPAWN_TEST_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as out:
            out.write(str(os.getpid()))
    time.sleep(3600)
'''


def probe(name):
    return PlanItem(f"spawn_probe_{name}", "probe", "scenario", "float32", 1)


@pytest.fixture(scope="module")
def manifest_path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spawn")
    (folder / "suites").mkdir()
    (folder / "suites" / "test_spawn_probes.py").write_text(SUITE)
    path = folder / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu") + '\nmanifest["custom_test_dirs"] = ["suites"]\n')
    return path


@pytest.fixture(scope="module")
def settings(manifest_path):
    manifest, _ = load_manifest(manifest_path)
    yield EngineSettings(target=Target("cpu"), manifest=manifest, level=1, max_examples=2, versions=versions())
    spawn.close_pools()


def spawned(settings, **policy):
    return attrs.evolve(settings, isolation=IsolationPolicy(everything=True, start="spawn", **policy))


@pytest.mark.slow
def test_one_pool_records_a_crash_and_a_hang_replaces_its_worker_and_keeps_other_outcomes(settings):
    isolated = spawned(settings)
    here = run_item(ABS, settings)
    first = run_item(ABS, isolated)
    assert first["isolated"] == "--subprocess-per-test" and first["isolated_by"] == "spawn"
    assert {k: first[k] for k in COMPARED} == {k: here[k] for k in COMPARED}  # derandomized: the same cases
    assert set(first) == set(here) | {"isolated", "isolated_by"}
    pool = items_pool(isolated)
    (worker,) = pool.workers
    assert pool.started == 1 and worker.ready and worker.served == 1

    failed = run_item(probe("fails"), isolated)
    assert failed["outcome"] is Outcome.FAILED and "the probe differs from CPU" in failed["error"]
    assert pool.workers == [worker] and worker.served == 2  # a finding is no reason to replace the worker

    crashed = run_item(probe("aborts"), isolated)
    assert crashed["outcome"] is Outcome.CRASHED and crashed["signal"] == "SIGABRT"
    assert crashed["reason"] == "the process running it died (killed by SIGABRT)"
    assert "Fatal Python error" in crashed["error"] and "test_spawn_probe_aborts" in crashed["error"]
    assert crashed["isolated_by"] == "spawn" and crashed["item"] == probe("aborts").id
    assert pool.workers == [] and worker.process.returncode == -signal.SIGABRT

    passed = run_item(probe("passes"), isolated)
    assert passed["outcome"] is Outcome.PASSED and passed["isolated_by"] == "spawn"
    (replacement,) = pool.workers
    assert pool.started == 2 and replacement.pid != worker.pid

    hung = run_item(probe("hangs"), spawned(settings, timeout_s=HANG_TIMEOUT_S))
    assert hung["outcome"] is Outcome.TIMED_OUT and hung["signal"] is None
    assert hung["reason"].startswith("still running after") and hung["duration_s"] >= HANG_TIMEOUT_S
    assert pool.workers == [] and replacement.process.returncode == -signal.SIGKILL

    after = run_item(ABS, isolated)
    assert {k: after[k] for k in COMPARED} == {k: here[k] for k in COMPARED} and pool.started == 3
    last = pool.workers[0]
    spawn.close_pools()
    assert last.process.returncode is not None and not spawn._pools  # stopped at the run's end


@pytest.mark.slow
def test_a_worker_that_cannot_start_gives_the_item_a_harness_error(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text(render_template("minimal", device_name="cpu"))
    manifest, _ = load_manifest(path)
    path.write_text(render_template("complete", device_name="cpu"))  # the file changes after the run loaded it
    settings = spawned(EngineSettings(target=Target("cpu"), manifest=manifest, level=1, max_examples=1))
    try:
        record = run_item(ABS, settings)
    finally:
        spawn.close_pools()
    assert record["outcome"] is Outcome.ERROR and record["reason"].startswith("harness:")
    assert "changed since the run loaded it" in record["error"] and "status 3 while starting" in record["error"]


INTERRUPTED_PARENT = '''
import sys
from torchcts import interrupts
from torchcts.engine.run import EngineSettings, run_item
from torchcts.engine.targets import Target
from torchcts.isolation.policy import IsolationPolicy
from torchcts.manifest import load_manifest
from torchcts.plan.build import PlanItem

manifest, _ = load_manifest(sys.argv[1])
settings = EngineSettings(target=Target("cpu"), manifest=manifest, level=1, max_examples=1,
                          isolation=IsolationPolicy(everything=True, start="spawn"))
with interrupts.handling():
    try:
        run_item(PlanItem("spawn_probe_hangs", "probe", "scenario", "float32", 1), settings)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(143)
'''


@pytest.mark.slow
def test_an_interrupted_run_kills_its_worker(manifest_path, tmp_path):
    pid_file = tmp_path / "worker.pid"
    parent = subprocess.Popen([sys.executable, "-c", INTERRUPTED_PARENT, str(manifest_path)], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, SPAWN_TEST_PID_FILE=str(pid_file)))
    try:
        deadline = time.monotonic() + 600  # a safety net: the worker imports torch first
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            assert parent.poll() is None
            time.sleep(0.2)
        worker = int(pid_file.read_text())
        parent.send_signal(signal.SIGTERM)
        out, _ = parent.communicate(timeout=120)
    finally:
        if parent.poll() is None:
            parent.kill()
    assert parent.returncode == 143 and "interrupted" in out
    with pytest.raises(ProcessLookupError):  # killed and reaped by the parent: nothing outlives the run
        os.kill(worker, 0)


@pytest.mark.slow
def test_items_and_settings_travel_as_json(settings):
    replay = ReplayItem("corpus/x.json", "forward", "abs", "function", "float32", 1, fingerprint="ab", crash=True,
                        problem=("inputs", "bad"))
    for item in (ABS, replay):
        assert item_from(item_json(item)) == item
    with pytest.raises(SpawnMessageError, match="PlanItem and ReplayItem"):
        item_json(object())
    described = spawned(settings, timeout_s=5.0)
    rebuilt = settings_from(settings_json(described), settings.manifest)
    for field in attrs.fields(EngineSettings):
        if field.name != "isolation":
            assert getattr(rebuilt, field.name) == getattr(described, field.name), field.name
    assert rebuilt.isolation.timeout_s == 5.0 and rebuilt.isolation.rules == described.isolation.rules
    assert not rebuilt.isolation.everything  # a worker never isolates a whole item again


@pytest.mark.slow
def test_a_device_that_cannot_fork_isolates_in_spawned_workers_and_refuses_a_forced_fork(tmp_path):
    from torchcts.isolation.policy import SPAWN, start_method
    from torchcts.run_setup.errors import SessionError
    from torchcts.run_setup.isolation import isolation_policy
    from torchcts.run_setup.request import RunRequest

    request = RunRequest(isolation_start="fork", subprocess_per_test=True, adaptive_isolation="off")
    with pytest.raises(SessionError, match="--isolation-start fork: cuda does not survive a fork once initialised"):
        isolation_policy(request, (), Target("cuda"), tmp_path, {})
    request = attrs.evolve(request, isolation_start="auto")
    policy = isolation_policy(request, (), Target("cuda"), tmp_path, {})  # no longer refused
    assert policy.everything and not policy.can_fork and start_method(policy, "cuda") == SPAWN
    assert policy.reason(ABS) == "--subprocess-per-test"
