"""A spawned item worker's side (`engine.spawned_items` is the run's): prepared once, then item after item.

`serve_items` is the entry point `isolation.spawn_worker` calls with the run's `WorkerSetup`: it loads the
manifest from its file (user code the user chose to run: its `backend_import` registers the device here
as it did in the parent), runs the run's setup of its device (`device_setup.DeviceSetup`), loads the suites (the manifest's
`custom_test_dirs` too) and the op database, and returns the handler that runs each item with
`engine.run.run_here` (never isolating an item again), answering with its record and the faulty device's
op trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts import dtypes as dtype_names
from torchcts.engine.hypothesis_profile import register_manifest_profile
from torchcts.engine.run import EngineSettings, run_here
from torchcts.engine.spawn_messages import WorkerSetup, item_from, settings_values
from torchcts.engine.worker_process import prepare_worker
from torchcts.isolation.fork import take_device_trace
from torchcts.manifest import load_manifest
from torchcts.plan.catalog import all_ops
from torchcts.plan.effective import run_claims
from torchcts.plan.selection import Selection

MANIFEST_CHANGED_EXIT = 3  # the manifest file changed since the run loaded it: the worker serves nothing


def serve_items(payload: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """In the worker: import torch, the backend, the suites and the op database as the run did; the handler of
    each item request. A manifest file changed since the run loaded it ends the worker (MANIFEST_CHANGED_EXIT)."""
    setup = WorkerSetup.from_json(payload)
    manifest = prepare(setup)
    if setup.manifest_hash is not None and manifest.fingerprint() != setup.manifest_hash:
        print(f"torchcts: spawned worker: {setup.manifest} changed since the run loaded it; not serving", flush=True)
        raise SystemExit(MANIFEST_CHANGED_EXIT)
    return lambda request: serve(request, manifest)


def prepare(setup: WorkerSetup) -> Any:
    """Import torch, the backend, the suites and the op database as the run did; the manifest (None without one)."""
    manifest = None
    if setup.manifest is not None:
        manifest, _ = load_manifest(Path(setup.manifest))
        manifest = run_claims(manifest, _run_selection(setup)).effective  # the run's claims (--level, --dtype)
        register_manifest_profile(manifest.hypothesis)  # before the backend module, which may build profiles on it
    prepare_worker(manifest, setup.device, setup.device_setup)
    all_ops()
    return manifest


def _run_selection(setup: WorkerSetup) -> Any:
    """The part of the run's selection that changes its claims: its depth and the dtypes it claims for every op."""
    dtypes = tuple(d for d in map(dtype_names.lookup, setup.whole_dtypes) if d is not None)
    return Selection(level=setup.level, dtypes=dtypes or None)


def serve(request: dict[str, Any], manifest: Any) -> dict[str, Any]:
    """One item's answer: its record and the faulty device's trace (what raises is the worker's to answer)."""
    item = item_from(request["item"])
    settings = settings_from(request["settings"], manifest)
    record = run_here(item, settings, seed=request.get("seed"), max_examples=request.get("max_examples"))
    return {"record": record, "device_ops": take_device_trace()}


def settings_from(data: dict[str, Any], manifest: Any) -> EngineSettings:
    """The engine's settings a worker runs an item with: `data` (from `spawn_messages.settings_json`) over its
    own manifest."""
    names = {field.name for field in attrs.fields(EngineSettings)}  # a field the parent has and we lack is dropped
    return EngineSettings(manifest=manifest, **{k: v for k, v in settings_values(data).items() if k in names})
