"""A fuzz worker process: runs tasks (an item, a seed, a number of examples) through the engine.

The worker is a thin adapter over `torchcts.engine.run.run_item`: it builds the engine's settings
once (the manifest, the target, the corpus), then answers each task with what the scheduler needs
from the item's record: `status` (passed, failed or unavailable), the failure's `outcome` and
error (with `error_kind`, `error_line`, `missing_kernel` and the compile `leg` when the record has them), the
`counterexample` reference, `examples` and `max_ulp`. A normal visit steers Hypothesis toward
larger errors (`targeting`); a crash hunt runs every case in a forked child, so a case that
kills the process is caught, shrunk like any failure and stored as a `crashed` case.
"""

from __future__ import annotations

# imports inside functions: torch and the engine, which only the spawned worker needs (fuzz.hunt imports this
# module, and `torchcts fuzz` imports fuzz.hunt before it checks its options)

import multiprocessing
from pathlib import Path
from typing import Any

import attrs

from torchcts.core.record import FAILURE_FIELDS
from torchcts.crashes.ledger import LOCAL_NAME, ledger_rules
from torchcts.crashes.versions import torch_minor
from torchcts.engine.compile_target import run_compile_spec
from torchcts.fuzz.options import CRASH_CASE_TIMEOUT_S, FuzzOptions
from torchcts.fuzz.scheduler import UNAVAILABLE
from torchcts.isolation.fork import detach_from_run, fork_safe
from torchcts.isolation.policy import IsolationPolicy
from torchcts.core.outcomes import PROBLEMS, Outcome, parse


@attrs.frozen
class Task:
    """One visit of an item: a fresh seed and a number of examples; `crash_hunt` runs it case by case, forked."""

    item: Any
    seed: int
    examples: int
    crash_hunt: bool = False

    def as_crash_hunt(self) -> "Task":
        return attrs.evolve(self, crash_hunt=True)


def main(options: FuzzOptions, tasks: Any, results: Any) -> None:
    """The worker process: announce itself ready ({"ready": pid}), then answer tasks until a None comes."""
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:  # Ctrl-C and SIGTERM are the parent's (it stops us)
        detach_from_run(parent.pid)  # blocked since our start (see `pool`): ignored, then unblocked
    settings = engine_settings(options)
    results.put({"ready": multiprocessing.current_process().pid})
    while True:
        task = tasks.get()
        if task is None:
            return
        results.put(run_task(task, settings))


def engine_settings(options: FuzzOptions) -> Any:
    """The engine's settings for every task of this hunt (imports torch, the backend and the properties,
    the manifest's custom suites included)."""
    from torchcts.engine.targets import Target
    from torchcts.engine.worker_process import prepare_worker
    from torchcts.manifest import load_manifest

    from torchcts import dtypes as dtype_names
    from torchcts.plan.effective import run_claims
    from torchcts.plan.selection import Selection
    from torchcts.run_setup.device import worker_device_setup  # imports torch
    from torchcts.run_setup.settings import engine_settings as run_engine_settings  # imports torch and the engine

    declared, _ = load_manifest(options.manifest)
    chosen = tuple(dtype_names.lookup(part.strip()) for name in options.dtypes for part in name.split(","))
    manifest = run_claims(declared, Selection(level=options.level, dtypes=chosen or None)).effective  # as `run`
    prepare_worker(manifest, options.device, worker_device_setup(options.device))
    target = Target(options.device, run_compile_spec(manifest.compile, options.compile_backend, options.shape_mode))
    return run_engine_settings(target, manifest, max_examples=options.examples_per_task, corpus_dir=options.corpus_dir,
                               targeting=True, isolation=oracle_isolation(options, target.device_type),
                               show_traceback=False,
                               # no leg blame in a hunt: its legs would spend the visit's --task-timeout, and a slow
                               # leg would turn a found failure into a hang; the new case's replay under `run` blames it
                               blame_cases=0)


def oracle_isolation(options: FuzzOptions, device_type: str) -> Any:
    """As in `run`, the cases of an item a CPU-oracle rule of the crash ledger matches (packaged, or in
    known_crashes.json next to the manifest) each run in a forked child, and the oracle crashing on one is
    `cpu_contract`, not a finding. Backend rules isolate nothing here: a worker that dies is the pool's to
    replace, and the crash is what the hunt reports. LedgerError names a bad ledger file."""
    return IsolationPolicy(rules=oracle_rules(options), device_type=device_type, torch_version=torch_minor(),
                           can_fork=fork_safe(device_type))


def oracle_rules(options: FuzzOptions) -> tuple[Any, ...]:
    """The crash ledger's CPU-oracle rules (policy `off` keeps only those); LedgerError names a bad file.
    The hunt reads them once before it starts workers, so a bad ledger stops it there."""
    return tuple(ledger_rules("off", Path(options.manifest).parent / LOCAL_NAME))


def run_task(task: Task, settings: Any) -> dict[str, Any]:
    """Run one task through the engine; the scheduler's answer (see `answer_from`)."""
    from torchcts.engine.run import run_item

    record = run_item(task.item, task_settings(task, settings), seed=task.seed, max_examples=task.examples)
    return answer_from(task, record)


def task_settings(task: Task, settings: Any) -> Any:
    """The hunt's settings for one task: its seed recorded in stored cases; a normal visit steers toward
    larger errors, a crash hunt runs each case in a forked child with its own timeout."""
    return attrs.evolve(settings, found={"fuzz_seed": task.seed, "derandomize": False}, targeting=not task.crash_hunt,
                        case_timeout_s=CRASH_CASE_TIMEOUT_S if task.crash_hunt else None)


def answer_from(task: Task, record: dict[str, Any]) -> dict[str, Any]:
    """The scheduler's answer from an item's record: status passed, failed (with the outcome, the error and
    the stored case) or unavailable (nothing could run: a not-run outcome, with its reason)."""
    outcome = parse(record.get("outcome")) or Outcome.ERROR
    answer: dict[str, Any] = {"item": task.item.id}
    if outcome in PROBLEMS:
        answer.update(status=Outcome.FAILED, outcome=outcome, error=record.get("error"))
        for key in FAILURE_FIELDS:  # the record's failure view (`core.record`)
            if record.get(key) is not None:
                answer[key] = record[key]
    elif outcome == Outcome.PASSED:
        answer["status"] = Outcome.PASSED
    else:
        answer.update(status=UNAVAILABLE, reason=record.get("reason", ""))
    answer.update(examples=record.get("examples", 0), max_ulp=int(record.get("max_ulp") or 0))
    if isinstance(record.get("distinct_cases"), int):  # absent where the item's process died
        answer["distinct_cases"] = record["distinct_cases"]
    return answer
