"""Items run in spawned workers (`isolation.spawn`), the run's side: one pool per run, one request per item.

`run_spawned` describes the item and the engine's settings as JSON (`engine.spawn_messages`) and sends
them to a worker of the pool started with the entry point `engine.spawned_item_worker:serve_items` and
the run's `WorkerSetup` as its payload; the answer is the item's record and the faulty device's op trace.
"""

from __future__ import annotations

from typing import Any

import attrs

from torchcts.engine.spawn_messages import WorkerSetup, item_json, settings_json
from torchcts.isolation.fork import ForkResult, merge_device_trace
from torchcts.isolation.spawn import SpawnPool, WorkerStart, pool_for

ENTRY = "torchcts.engine.spawned_item_worker:serve_items"


def run_spawned(item: Any, settings: Any, timeout_s: float, *, seed: int | None = None,
                max_examples: int | None = None) -> ForkResult:
    """Run `item` with `settings` in a worker of the run's pool (`items_pool`); a finished result's answer is
    the item's record. SpawnError when no worker could start."""
    request = {"item": item_json(item), "settings": settings_json(settings), "seed": seed,
               "max_examples": max_examples}
    result = items_pool(settings).run(request, timeout_s)
    if result.status != "finished":
        return result
    merge_device_trace(result.answer.get("device_ops", ()))
    return attrs.evolve(result, answer=result.answer["record"])


def items_pool(settings: Any) -> SpawnPool:
    """The pool whose workers serve items of a run with these settings' setup (one per run: another closes it)."""
    setup = WorkerSetup.of(settings)
    return pool_for(WorkerStart.of(ENTRY, setup.as_json(), setup.environment()))
