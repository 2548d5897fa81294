"""A fuzz worker process: runs tasks (an item, a seed, a number of examples) through the engine.

The worker is a thin adapter over `torchcts.engine.run.run_item`: it builds the engine's settings
once (the manifest, the target, the corpus), then answers each task with what the scheduler needs
from the item's record: `status` (passed, failed or unavailable), the failure's `outcome` and
error, the `counterexample` reference, `examples` and `max_ulp`. A normal visit steers Hypothesis
toward larger errors (`targeting`); a crash hunt runs every case in a forked child, so a case that
kills the process is caught, shrunk like any failure and stored as a `crashed` case.
"""

from __future__ import annotations

import multiprocessing
import signal
from typing import Any

import attrs

from torchcts import interrupts
from torchcts.fuzz.options import CRASH_CASE_TIMEOUT_S, FuzzOptions
from torchcts.outcomes import PROBLEMS, Outcome, parse

UNAVAILABLE = "unavailable"  # an answer's status when no case could run (the record's outcome is a not-run one)


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
    _detach_from_signals()
    settings = engine_settings(options)
    results.put({"ready": multiprocessing.current_process().pid})
    while True:
        task = tasks.get()
        if task is None:
            return
        results.put(run_task(task, settings))


def _detach_from_signals() -> None:
    """Ctrl-C, SIGTERM, SIGHUP are the parent's to handle (it stops the workers); a parent killed
    outright (SIGKILL) takes its workers along."""
    from torchcts.parent_death import die_with_parent

    for sig in interrupts.SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupts.SIGNALS)  # blocked since its start (see `pool`)
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        die_with_parent(parent.pid)


def engine_settings(options: FuzzOptions) -> Any:
    """The engine's settings for every task of this hunt (imports torch, the backend and the properties)."""
    import torch

    from torchcts.engine.run import EngineSettings
    from torchcts.engine.targets import Target
    from torchcts.manifest import load_manifest
    from torchcts.manifest.load import import_backend
    from torchcts.plugin.options import HARNESS_THREADS

    manifest, _ = load_manifest(options.manifest)
    if manifest.backend_import is not None:  # the parent imported it already: a failure here kills only this worker
        import_backend(manifest.backend_import)
    torch.set_num_threads(HARNESS_THREADS)
    flags = f"--device {options.device}" + (f" --compile {options.compile_backend}" if options.compile_backend else "")
    return EngineSettings(target=Target(options.device, options.compile_backend), manifest=manifest,
                          level=options.level or manifest.semantic_level, max_examples=options.examples_per_task,
                          deadline_ms=None, corpus_dir=options.corpus_dir, replay_flags=flags, targeting=True)


def run_task(task: Task, settings: Any) -> dict[str, Any]:
    """Run one task through the engine; the scheduler's answer (see `answer_from`)."""
    from torchcts.engine.run import run_item

    settings = attrs.evolve(settings, found={"fuzz_seed": task.seed, "derandomize": False},
                            targeting=not task.crash_hunt,
                            case_timeout_s=CRASH_CASE_TIMEOUT_S if task.crash_hunt else None)
    return answer_from(task, run_item(task.item, settings, seed=task.seed, max_examples=task.examples))


def answer_from(task: Task, record: dict[str, Any]) -> dict[str, Any]:
    """The scheduler's answer from an item's record: status passed, failed (with the outcome, the error and
    the stored case) or unavailable (nothing could run: a not-run outcome, with its reason)."""
    outcome = parse(record.get("outcome")) or Outcome.ERROR
    answer: dict[str, Any] = {"item": task.item.id}
    if outcome in PROBLEMS:
        answer.update(status=Outcome.FAILED, outcome=outcome, error=record.get("error"))
        for key in ("counterexample", "counterexample_error"):
            if record.get(key) is not None:
                answer[key] = record[key]
    elif outcome == Outcome.PASSED:
        answer["status"] = Outcome.PASSED
    else:
        answer.update(status=UNAVAILABLE, reason=record.get("reason", ""))
    answer.update(examples=record.get("examples", 0), max_ulp=int(record.get("max_ulp") or 0))
    return answer
