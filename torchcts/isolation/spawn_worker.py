"""A spawned isolation worker: `python -u -m torchcts.isolation.spawn_worker REQUESTS_FD ANSWERS_FD PARENT_PID`.

Started by `isolation.spawn`, it first leaves Ctrl-C, SIGTERM and SIGHUP to the parent and arranges to die
with it, turns faulthandler on (a crash's Python stack lands in the output the parent keeps), reads its
`WorkerSetup` (the first request line), takes the parent's `sys.path`, loads the manifest from its file
(user code the user chose to run: its `backend_import` registers the device here as it did in the
parent), registers the faulty device when named, loads the suites (the manifest's `custom_test_dirs`
too) and the op database, and says it is ready. Then it serves items, one request line each, with
`engine.run.run_here` (never isolating an item again) and answers each with its record; an empty line
or the parent closing the pipe ends it. Its stdout and stderr are the parent's file.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

MANIFEST_CHANGED_EXIT = 3  # the manifest file changed since the run loaded it: the worker serves nothing


def main(argv: list[str]) -> int:
    requests_fd, answers_fd, parent = (int(arg) for arg in argv[1:4])
    from torchcts.isolation.fork import detach_from_run

    detach_from_run(parent)
    import faulthandler

    faulthandler.enable(all_threads=False)
    started = time.monotonic()
    requests = os.fdopen(requests_fd, "rb")
    line = requests.readline()
    if not line.strip():
        return 0
    from torchcts.isolation.spawn_messages import WorkerSetup

    setup = WorkerSetup.from_json(json.loads(line))
    sys.path[:] = list(setup.sys_path)  # what the parent imported the backend and the suites from
    manifest = prepare(setup)
    if setup.manifest_hash is not None and manifest.fingerprint() != setup.manifest_hash:
        print(f"torchcts: spawned worker: {setup.manifest} changed since the run loaded it; not serving", flush=True)
        return MANIFEST_CHANGED_EXIT
    send(answers_fd, {"ready": os.getpid(), "startup_s": round(time.monotonic() - started, 3)})
    for line in requests:
        if not line.strip():
            break
        send(answers_fd, serve(json.loads(line), manifest))
    return 0


def _run_selection(setup: Any) -> Any:
    """The part of the run's selection that changes its claims: its depth and the dtypes it claims for every op."""
    from torchcts import dtypes as dtype_names
    from torchcts.plan.selection import Selection

    dtypes = tuple(d for d in map(dtype_names.lookup, setup.whole_dtypes) if d is not None)
    return Selection(level=setup.level, dtypes=dtypes or None)


def prepare(setup: Any) -> Any:
    """Import torch, the backend, the suites and the op database as the run did; the manifest (None without one)."""
    from torchcts.engine.hypothesis_profile import register_manifest_profile
    from torchcts.engine.worker_process import prepare_worker
    from torchcts.manifest import load_manifest
    from torchcts.plan.catalog import all_ops
    from torchcts.plan.effective import run_claims

    manifest = None
    if setup.manifest is not None:
        manifest, _ = load_manifest(Path(setup.manifest))
        manifest = run_claims(manifest, _run_selection(setup)).effective  # the run's claims (--level, --dtype)
        register_manifest_profile(manifest.hypothesis)  # before the backend module, which may build profiles on it
    prepare_worker(manifest, setup.device)
    all_ops()
    return manifest


def serve(request: dict[str, Any], manifest: Any) -> dict[str, Any]:
    """One item's answer: its record and the faulty device's trace, or the traceback of what raised outside
    the engine's own handling (the parent makes that a harness error record)."""
    from torchcts.engine.run import run_here
    from torchcts.isolation.fork import take_device_trace
    from torchcts.isolation.spawn_messages import item_from, settings_from

    try:
        item = item_from(request["item"])
        settings = settings_from(request["settings"], manifest)
        record = run_here(item, settings, seed=request.get("seed"), max_examples=request.get("max_examples"))
    except Exception:  # noqa: BLE001 - the worker keeps serving; the item's record says what raised
        return {"raised": traceback.format_exc()}
    return {"record": record, "device_ops": take_device_trace()}


def send(fd: int, message: dict[str, Any]) -> None:
    """One JSON line, written whole (records hold NaN as JSON's NaN, other values as their text, as forked
    children send them)."""
    view = memoryview((json.dumps(message, default=str) + "\n").encode())
    while view:
        written = os.write(fd, view)
        view = view[written:]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
