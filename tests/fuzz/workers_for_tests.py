"""Stand-in fuzz worker processes for the pool and hunt tests: no torch, the answer depends on the item alone.

A spawned worker imports its function by module name, so the tests put this folder on `sys.path`
(the `stand_ins` fixture) and pass these functions as the pool's or the hunt's worker. By op:
`crash` aborts the process on a normal visit and, run again case by case (a crash hunt), answers
with a stored crash case, as the engine's forked replay does; `hang` never answers; anything else
passes.
"""

from __future__ import annotations

import os
import time
from typing import Any


def answering(options: Any, tasks: Any, results: Any) -> None:
    results.put({"ready": os.getpid()})
    while True:
        task = tasks.get()
        if task is None:
            return
        results.put(answer(task))


def answer(task: Any) -> dict[str, Any]:
    op = task.item.op
    if op == "crash" and not task.crash_hunt:
        os.abort()
    if op == "hang":
        time.sleep(3600)
    result: dict[str, Any] = {"item": task.item.id, "status": "passed", "examples": task.examples, "max_ulp": 0}
    if op == "crash":
        result.update(status="failed", outcome="crashed", counterexample={
            "path": f"corpus/{task.seed % 1000:03d}.json", "fingerprint": str(task.seed), "new": True, "elements": 2,
            "replay": "torchcts replay corpus/x.json --device cpu"})
    return result


def dying_at_start(options: Any, tasks: Any, results: Any) -> None:
    """A worker that dies before it is ready (a backend import that kills its process)."""
    os._exit(3)
