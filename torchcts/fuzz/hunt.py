"""The hunt: plan in, visits out, until the budget ends; the summary and RESULTS_DIR/fuzz-<run-id>/fuzz.json.

One loop ties the parts together: the `Scheduler` picks items and the loop draws each visit's
seed from the same seeded generator, the `WorkerPool` runs the visits, and every answer goes back
to the scheduler. A crashed visit is run once more with the same seed, each case in its own
forked child, so the crash shrinks into a corpus case (each case has its own timeout; the task
timeout does not cut this replay). Ctrl-C, SIGTERM and SIGHUP stop the workers; every case
already found is on disk, and the hunt exits 128 + the signal's number (130, 143, 129).
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import time
from pathlib import Path
from typing import Any, Callable

from torchcts import interrupts
from torchcts.disk import WriteError, write_atomic
from torchcts.fuzz.options import CRASH_REPLAY_LIMIT_S, PROGRESS_EVERY_S, FuzzOptions, parse_budget
from torchcts.fuzz.pool import OVER_BUDGET, REPLAY_OVERRAN, Answered, Ended, WorkerPool
from torchcts.fuzz.scheduler import LOST, ItemStats, Scheduler
from torchcts.fuzz.worker import Task, oracle_rules
from torchcts.fuzz.worker import main as worker_main
from torchcts.core.outcomes import Outcome

__all__ = ["FuzzOptions", "exit_status", "hunt", "new_cases", "parse_budget", "print_summary"]

ANSWER_WAIT_S = 0.5  # how long the loop waits for an answer before it checks the workers again


def hunt(options: FuzzOptions, items: list[Any], echo: Callable[[str], None], *,
         worker: Callable[..., None] = worker_main) -> dict[str, Any]:
    """Fuzz `items` for the budget; a summary (also written to RESULTS_DIR/<run-id>/fuzz.json).

    `worker` is the workers' process function (`worker.main`; tests pass stand-ins). A crash ledger
    next to the manifest that cannot be read raises LedgerError before any worker starts."""
    oracle_rules(options)
    run = _Hunt(options, items, echo, worker)
    echo(f"torchcts fuzz: {len(items)} items, budget {options.describe_budget()}, {options.workers} worker(s), "
         f"seed {run.seed}, corpus {options.corpus_dir}")
    try:
        run.run()
    except WriteError:  # a full disk: the cases stored so far stay; the summary too, where it still fits
        with contextlib.suppress(WriteError):
            write_summary(run.summary(), options.results_dir)
        raise
    return write_summary(run.summary(), options.results_dir)


class _Hunt:
    """One hunt's state: the scheduler, the workers, the visits so far and the crashed visits to replay."""

    def __init__(self, options: FuzzOptions, items: list[Any], echo: Callable[[str], None],
                 worker: Callable[..., None] = worker_main):
        self.options, self.echo = options, echo
        self.seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
        self.rng = random.Random(self.seed)  # the scheduler's choices and every visit's seed
        self.scheduler = Scheduler(items, self.rng, fixed_properties=fixed_properties())
        self.pool = WorkerPool(options, worker)
        self.started = self.last_progress = time.monotonic()
        self.visits = 0  # visits scheduled so far (crash replays not counted: they finish a visit's work)
        self.crash_hunts: list[tuple[ItemStats, Task, int]] = []  # crashed visits to replay case by case, forked
        self.interrupted = False

    def run(self) -> None:
        """Visit items until the budget or the items run out, or a signal stops the hunt; workers always stopped."""
        signals = contextlib.ExitStack()  # Ctrl-C, SIGTERM (a CI cancelling the job), SIGHUP end the hunt cleanly
        signals.enter_context(interrupts.handling())
        try:
            self.pool.start()
            while self._step():
                pass
        except KeyboardInterrupt:
            self.interrupted = True
            self.echo("torchcts fuzz: interrupted; every case found so far is in the corpus")
        finally:
            with interrupts.deferred(raise_at_end=False):  # a second Ctrl-C must not leave workers running
                self.pool.stop()
            signals.close()
            self.interrupted = self.interrupted or interrupts.requested() is not None  # also when swallowed

    def _step(self) -> bool:
        """Feed idle workers, take one answer, account ended visits; False when nothing is left to run."""
        interrupts.check()  # a signal whose exception a finalizer swallowed still ends the hunt
        now = time.monotonic()
        self._feed(now, now - self.started)
        if self.pool.all_idle():
            return False
        answered = self.pool.receive(ANSWER_WAIT_S)
        if answered is not None:
            self._answered(answered)
        for ended in self.pool.sweep(self.started):
            self._ended(ended)
        if time.monotonic() - self.last_progress >= PROGRESS_EVERY_S:
            self.last_progress = time.monotonic()
            self.echo(progress_line(self.scheduler, time.monotonic() - self.started, self.options, self.visits))
        return True

    def _feed(self, now: float, elapsed_s: float) -> None:
        """Give every idle worker a visit while the time budget lasts."""
        if self.options.out_of_time(elapsed_s):
            return
        busy = self.pool.busy_items()
        for slot in self.pool.idle_slots():
            visit = self._next_visit(busy)
            if visit is None:
                break
            stats, task, number = visit
            self.pool.assign(slot, stats, task, number, now)
            busy.add(stats.item.id)

    def _next_visit(self, busy: set[str]) -> tuple[ItemStats, Task, int] | None:
        """A crashed visit to replay case by case, else the scheduler's next item with a fresh seed; None when
        the visit budget or the items are used up."""
        if self.crash_hunts:
            return self.crash_hunts.pop(0)
        if self.options.out_of_visits(self.visits):
            return None
        stats = self.scheduler.next_item(busy)
        if stats is None:
            return None
        self.visits += 1
        return stats, Task(stats.item, self.rng.randrange(2**63), self.options.examples_per_task), self.visits

    def _answered(self, done: Answered) -> None:
        answer = done.answer
        self.scheduler.finished(done.stats, answer, time.monotonic() - self.started, done.visit)
        unstored = answer.get("counterexample_unwritable")
        if unstored:  # the corpus is on a full disk: later cases would be lost the same way
            raise WriteError(unstored["path"], unstored["reason"])
        if answer["status"] == Outcome.FAILED and (answer.get("counterexample") or {}).get("new"):
            case = answer["counterexample"]
            leg = f" (compile leg: {answer['leg']})" if answer.get("leg") else ""  # engine.blame, under --compile
            self.echo(f"  new case: {answer['item']} ({case['elements']} elements) -> {case['path']}{leg}")

    def _ended(self, ended: Ended) -> None:
        """A visit without an answer: a crash or hang counts against its item (a crash is replayed to shrink it)."""
        item_id = ended.stats.item.id
        if ended.why == OVER_BUDGET:
            return
        if ended.why == REPLAY_OVERRAN:
            self.echo(f"  crash replay of {item_id} dropped after {CRASH_REPLAY_LIMIT_S:.0f} s; the item stays crashed")
            return
        detail = f" (exit code {ended.exitcode})" if ended.why == Outcome.CRASHED else ""
        self.echo(f"  {ended.why}: {item_id}{detail}; the hunt goes on")
        self.scheduler.lost(ended.stats, ended.why, time.monotonic() - self.started, ended.visit)
        if ended.why == Outcome.CRASHED and not ended.task.crash_hunt:
            self.crash_hunts.append((ended.stats, ended.task.as_crash_hunt(), ended.visit))

    def summary(self) -> dict[str, Any]:
        options, stats = self.options, self.scheduler.stats.values()
        return {
            "seed": self.seed, "budget_s": options.budget_s, "max_visits": options.max_visits, "visits": self.visits,
            "elapsed_s": round(time.monotonic() - self.started, 1), "interrupted": self.interrupted,
            "signal": interrupts.signal_name(), "device": options.device, "compile": options.compile_backend,
            "compile_settings": options.compile_settings,
            "workers": options.workers, "corpus": str(options.corpus_dir), "examples": sum(s.examples for s in stats),
            "items": [s.as_json() for s in stats],
        }


def fixed_properties() -> frozenset[str]:
    """The properties whose cases are a fixed list (the registry's `draws=False`): one visit runs them all.
    Every registered property counts: the installed ones and the custom suites the plan loaded."""
    from torchcts.plan import registry  # torch: `torchcts fuzz` checks its options before loading it

    registry.load()
    return frozenset(spec.name for spec in registry.properties() if not spec.draws)


def write_summary(summary: dict[str, Any], results_dir: Path) -> dict[str, Any]:
    """Write RESULTS_DIR/fuzz-<run-id>/fuzz.json; the summary with its `folder`."""
    from torchcts.results.writer import new_run_id  # torch: `torchcts fuzz` checks its options before loading it

    folder = Path(results_dir) / f"fuzz-{new_run_id()}"
    write_atomic(folder / "fuzz.json", json.dumps(summary, indent=1) + "\n")  # WriteError: a full disk
    return {**summary, "folder": str(folder)}


def progress_line(scheduler: Scheduler, elapsed: float, options: FuzzOptions, visits: int) -> str:
    stats = scheduler.stats.values()
    covered = sum(1 for s in stats if s.tasks)
    examples = sum(s.examples for s in stats)
    failures = sum(len(s.new_cases) for s in stats)
    lost = sum(1 for s in stats if s.outcome in LOST)
    seconds = f"{elapsed:.0f}" + (f"/{options.budget_s:.0f}" if options.budget_s is not None else "")
    count = f"{visits}" + (f"/{options.max_visits}" if options.max_visits is not None else "")
    return (f"torchcts fuzz: {seconds} s, {count} visits, {covered}/{len(scheduler.stats)} items covered, "
            f"{examples / max(elapsed, 1e-9):.1f} examples/s, {failures} new cases, {lost} crashed or hung")


def new_cases(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(item["item"], case) for item in summary["items"] for case in item["new_cases"]]


def print_summary(summary: dict[str, Any], echo: Callable[[str], None]) -> None:
    found = new_cases(summary)
    lost = [item for item in summary["items"] if item["outcome"] in LOST]
    echo(f"torchcts fuzz: {summary['elapsed_s']:.0f} s, {summary['visits']} visits, {summary['examples']} examples, "
         f"{sum(1 for i in summary['items'] if i['tasks'])}/{len(summary['items'])} items covered, "
         f"{len(found)} new cases, {len(lost)} items crashed or hung; summary in {summary['folder']}/fuzz.json")
    for item_id, case in found:
        echo(f"  {item_id}: {case['elements']} elements\n    {case['replay']}")
    for item in lost:
        echo(f"  {item['item']}: {item['outcome']}")


def exit_status(summary: dict[str, Any]) -> int:
    """1 when new failures (or crashes, hangs) were found, else 0; 128 + the signal's number when one stopped the hunt."""
    if summary.get("signal"):
        return interrupts.exit_code(signal.Signals[summary["signal"]])
    lost = any(item["outcome"] in LOST for item in summary["items"])
    return 1 if new_cases(summary) or lost else 0
