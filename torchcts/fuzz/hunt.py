"""`torchcts fuzz`: budgeted bug hunting with random seeds; new counterexamples go to the corpus.

The parent process plans the items (as `run` does), schedules them, and hands one task at a
time (an item, a fresh seed, a number of examples) to worker processes that run the property
exactly as `run` would (shrinking and reducing a failure, storing it in the corpus). The
scheduler visits every item once, then draws items with weights that grow when an item shows
new behaviour (a new corpus case, a larger error than it has shown before: the properties call
`hypothesis.target` on the error while fuzzing) and halve when it shows none. A worker that
dies (segfault, abort) or overruns the task timeout is replaced; its item is recorded as
`crashed` or `timed_out` and not scheduled again, and the hunt goes on. A crashed visit is run
once more with the same seed, each case in its own forked child, so the crash shrinks into a
corpus case (each case has its own timeout; the task timeout does not cut this replay).
Ctrl-C, SIGTERM and SIGHUP stop the workers; every case already found is on disk, and the hunt
exits 128 + the signal's number (130, 143, 129).

The budget is time, a number of visits, or both (whichever runs out first). Every choice the
scheduler makes comes from one seeded generator and the visits' results, so with one worker a
visit budget makes a hunt independent of the machine's speed: the same seed, corpus and
versions give the same visits, seeds and cases on any machine, busy or idle.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import queue
import random
import re
import signal
import time
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts import interrupts

PROGRESS_EVERY_S = 10.0
BUDGET_GRACE_S = 15.0  # a visit still running this long after the budget is dropped
CRASH_CASE_TIMEOUT_S = 30.0  # per case, while a crash is reproduced and shrunk case by case
CRASH_REPLAY_LIMIT_S = 1800.0  # a whole crash replay (hundreds of forked cases) past this is dropped; the item stays crashed
MAX_WEIGHT, MIN_WEIGHT = 16.0, 1 / 64
DETERMINISTIC_PROPERTIES = ("errors",)  # fixed OpInfo error inputs: one visit says everything


@attrs.frozen
class FuzzOptions:
    device: str
    manifest: Path
    budget_s: float | None  # None: no time limit (then max_visits bounds the hunt)
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    level: int | None = None
    corpus_dir: Path = Path("corpus")
    results_dir: Path = Path("results")
    workers: int = 1
    examples_per_task: int = 10
    task_timeout_s: float = 120.0
    compile_backend: str | None = None
    seed: int | None = None
    max_visits: int | None = None  # scheduled visits, crash replays not counted; None: no limit

    def __attrs_post_init__(self) -> None:
        if self.budget_s is None and self.max_visits is None:
            raise ValueError("a hunt needs a budget: a time (budget_s), a number of visits (max_visits), or both")

    def describe_budget(self) -> str:
        parts = ([f"{self.budget_s:.0f} s"] if self.budget_s is not None else []) + \
            ([f"{self.max_visits} visits"] if self.max_visits is not None else [])
        return " or ".join(parts)


@attrs.define
class ItemStats:
    """What the hunt has seen of one (property, op, variant, dtype) item."""

    item: Any
    weight: float = 1.0
    tasks: int = 0
    examples: int = 0
    failures: int = 0
    new_cases: list[dict[str, Any]] = attrs.field(factory=list)
    max_ulp: int = 0
    first_failure_s: float | None = None
    first_failure_visit: int | None = None  # the hunt's visit number: unlike seconds, the same on any machine
    outcome: str = ""  # crashed, timed_out, unavailable, or "" while it can still be scheduled

    def as_json(self) -> dict[str, Any]:
        return {"item": self.item.id, "tasks": self.tasks, "examples": self.examples, "failures": self.failures,
                "new_cases": self.new_cases, "max_ulp": self.max_ulp, "first_failure_s": self.first_failure_s,
                "first_failure_visit": self.first_failure_visit, "final_weight": round(self.weight, 4),
                "outcome": self.outcome or "hunted"}


class Scheduler:
    """Chooses the next item: unvisited ones first, then by weight (novelty raises it, none halves it)."""

    def __init__(self, items: list[Any], rng: random.Random):
        self.stats = {item.id: ItemStats(item) for item in items}
        self.rng = rng
        self._unvisited = [item.id for item in items]
        rng.shuffle(self._unvisited)

    def next_item(self, busy: set[str]) -> ItemStats | None:
        while self._unvisited:
            item_id = self._unvisited.pop()
            if item_id not in busy:
                return self.stats[item_id]
        open_items = [s for s in self.stats.values() if not s.outcome and s.item.id not in busy]
        if not open_items:
            return None
        return self.rng.choices(open_items, weights=[s.weight for s in open_items])[0]

    def finished(self, stats: ItemStats, result: dict[str, Any], elapsed_s: float, visit: int = 0) -> None:
        stats.tasks += 1
        stats.examples += result.get("examples", 0)
        novel = False
        if result["status"] == "failed":
            stats.failures += 1
            case = result.get("counterexample") or {}
            if case.get("new"):
                novel = True
                stats.new_cases.append(case)
            if stats.first_failure_s is None:
                stats.first_failure_s, stats.first_failure_visit = round(elapsed_s, 1), visit
        elif result["status"] == "unavailable" and not stats.outcome:
            stats.outcome = "unavailable"
        if result.get("max_ulp", 0) > stats.max_ulp:
            novel = novel or stats.tasks > 1  # the first visit sets the baseline
            stats.max_ulp = result["max_ulp"]
        if stats.item.property in DETERMINISTIC_PROPERTIES and not stats.outcome:
            stats.outcome = "exhausted"
        stats.weight = min(stats.weight * 2, MAX_WEIGHT) if novel else max(stats.weight / 2, MIN_WEIGHT)

    def lost(self, stats: ItemStats, outcome: str, elapsed_s: float, visit: int = 0) -> None:
        stats.tasks += 1
        stats.outcome = stats.outcome or outcome  # a crash replay that overruns leaves the item `crashed`
        if stats.first_failure_s is None:
            stats.first_failure_s, stats.first_failure_visit = round(elapsed_s, 1), visit


# -- workers ---------------------------------------------------------------------------------

def _worker(options: FuzzOptions, tasks: Any, results: Any) -> None:
    """Run tasks until told to stop: each is (item, seed, examples, crash_hunt); each answer a dict.

    A crash hunt runs every case in a forked child, so a case that kills the process is caught,
    shrunk like any failure and stored as a `crashed` case."""
    from torchcts.parent_death import die_with_parent

    for sig in interrupts.SIGNALS:  # Ctrl-C, SIGTERM, SIGHUP are the parent's to handle: it stops the workers
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupts.SIGNALS)  # blocked since its start (see `spawn`)
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        die_with_parent(parent.pid)  # a parent killed outright (SIGKILL) takes its workers along
    import pytest
    import torch

    from torchcts import dtypes as dtype_names
    from torchcts.cases.store import store_failure
    from torchcts.engine.context import BackendError, CaseContext, CaseCrashed
    from torchcts.manifest import load_manifest
    from torchcts.plan.catalog import find_op
    from torchcts.plugin.session import HARNESS_THREADS, _import_backend
    from torchcts.engine.targets import Target

    manifest, _ = load_manifest(options.manifest)
    _import_backend(manifest)
    torch.set_num_threads(HARNESS_THREADS)
    target = Target(options.device, options.compile_backend)
    functions = _property_functions()
    flags = f"--device {options.device}" + (f" --compile {options.compile_backend}" if options.compile_backend else "")
    results.put({"ready": multiprocessing.current_process().pid})
    while True:
        task = tasks.get()
        if task is None:
            return
        item, seed, examples, crash_hunt = task
        context = CaseContext(item=item, op=find_op(item.op), dtype=dtype_names.lookup(item.dtype), target=target,
                              manifest=manifest, level=options.level or manifest.semantic_level,
                              max_examples=examples, seed=seed, deadline_ms=None, targeting=not crash_hunt,
                              case_timeout_s=CRASH_CASE_TIMEOUT_S if crash_hunt else None)
        answer: dict[str, Any] = {"item": item.id}
        try:
            functions[item.property](context)
            answer["status"] = "passed"
        except pytest.skip.Exception as exc:
            answer.update(status="unavailable", reason=str(exc))
        except Exception as exc:  # noqa: BLE001 - every failure is a finding to store
            outcome = "crashed" if isinstance(exc, CaseCrashed) else \
                "error" if isinstance(exc, BackendError) or not isinstance(exc, AssertionError) else "failed"
            answer.update(status="failed", outcome=outcome, error=f"{type(exc).__name__}: {exc}"[:2000])
            if context.failing_case is not None:
                answer.update(store_failure(context, outcome=outcome, error=answer["error"],
                                            corpus_dir=options.corpus_dir, replay_flags=flags,
                                            found={"fuzz_seed": seed, "derandomize": False}))
        answer.update(examples=context.examples, max_ulp=int(context.worst.max_ulp))
        results.put(answer)


def _property_functions() -> dict[str, Callable[[Any], None]]:
    """The property test functions of `torchcts.properties`, by property name."""
    import importlib
    import pkgutil

    import torchcts.properties

    functions = {}
    for module_info in pkgutil.iter_modules(torchcts.properties.__path__):
        module = importlib.import_module(f"torchcts.properties.{module_info.name}")
        for name in dir(module):
            if name.startswith("test_") and callable(getattr(module, name)):
                functions[name.removeprefix("test_")] = getattr(module, name)
    return functions


@attrs.define
class _Slot:
    process: Any
    tasks: Any
    stats: ItemStats | None = None
    task: tuple = ()
    started: float = 0.0
    visit: int = 0  # the hunt's number for the task in hand (a crash replay keeps its visit's)
    ready: bool = False  # the worker has imported torch and the op database; task time counts from here


# -- the hunt --------------------------------------------------------------------------------

def hunt(options: FuzzOptions, items: list[Any], echo: Callable[[str], None]) -> dict[str, Any]:
    """Fuzz `items` for the budget; a summary (also written to RESULTS_DIR/<run-id>/fuzz.json)."""
    from torchcts.results.writer import new_run_id

    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    scheduler = Scheduler(items, rng)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    slots: list[_Slot] = []
    started = time.monotonic()
    last_progress = started
    interrupted = False
    visits = 0  # visits scheduled so far (crash replays not counted: they finish a visit's work)
    crash_hunts: list[tuple[ItemStats, tuple, int]] = []  # crashed visits to replay case by case, forked

    def spawn() -> _Slot:
        tasks = context.Queue()
        process = context.Process(target=_worker, args=(options, tasks, results), daemon=True)
        resource_tracker.ensure_running()  # started later, it would unblock SIGINT and SIGTERM for the worker
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, interrupts.SIGNALS)  # the worker starts deaf to them
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return _Slot(process, tasks)

    echo(f"torchcts fuzz: {len(items)} items, budget {options.describe_budget()}, {options.workers} worker(s), "
         f"seed {seed}, corpus {options.corpus_dir}")
    signals = contextlib.ExitStack()  # Ctrl-C, SIGTERM (a CI cancelling the job), SIGHUP end the hunt cleanly
    signals.enter_context(interrupts.handling())
    try:
        slots = [spawn() for _ in range(max(1, options.workers))]
        while True:
            interrupts.check()  # a signal whose exception a finalizer swallowed still ends the hunt
            now = time.monotonic()
            elapsed = now - started
            busy = {slot.stats.item.id for slot in slots if slot.stats is not None}
            for slot in slots:
                if slot.stats is None and (options.budget_s is None or elapsed < options.budget_s):
                    if crash_hunts:  # a crashed visit again, each case in its own child: shrink the crash
                        stats, task, visit = crash_hunts.pop(0)
                    else:
                        if options.max_visits is not None and visits >= options.max_visits:
                            break
                        stats = scheduler.next_item(busy)
                        if stats is None:
                            break
                        visits += 1
                        task, visit = (stats.item, rng.randrange(2**63), options.examples_per_task, False), visits
                    slot.stats, slot.started, slot.task, slot.visit = stats, now, task, visit
                    busy.add(stats.item.id)
                    slot.tasks.put(task)
                    if not slot.ready:
                        slot.started = float("inf")  # the timeout starts when the worker is ready
            if all(slot.stats is None for slot in slots):
                break
            try:
                answer = results.get(timeout=0.5)
            except queue.Empty:
                answer = None
            if answer is not None and "ready" in answer:
                for slot in slots:
                    if slot.process.pid == answer["ready"]:
                        slot.ready, slot.started = True, time.monotonic()
                answer = None
            if answer is not None:
                slot = next((s for s in slots if s.stats is not None and s.stats.item.id == answer["item"]), None)
            if answer is not None and slot is not None:
                scheduler.finished(slot.stats, answer, time.monotonic() - started, slot.visit)
                if answer["status"] == "failed" and (answer.get("counterexample") or {}).get("new"):
                    case = answer["counterexample"]
                    echo(f"  new case: {answer['item']} ({case['elements']} elements) -> {case['path']}")
                slot.stats = None
            for index, slot in enumerate(slots):
                if slot.stats is None:
                    continue
                lost = None
                if not slot.process.is_alive():
                    lost = "crashed"
                elif options.budget_s is not None and time.monotonic() - started > options.budget_s + BUDGET_GRACE_S:
                    slot.process.kill()  # out of time: the visit is dropped, not held against the item
                    slot.process.join(timeout=5)
                    slot.stats = None
                    continue
                elif slot.ready and slot.task[3] and \
                        time.monotonic() - slot.started > max(options.task_timeout_s, CRASH_REPLAY_LIMIT_S):
                    slot.process.kill()  # a crash replay without end (no time budget): its item is already crashed
                    slot.process.join(timeout=5)
                    echo(f"  crash replay of {slot.stats.item.id} dropped after {CRASH_REPLAY_LIMIT_S:.0f} s; "
                         "the item stays crashed")
                    slot.stats = None
                    slots[index] = spawn()
                    continue
                elif slot.ready and not slot.task[3] and time.monotonic() - slot.started > options.task_timeout_s:
                    lost = "timed_out"  # not a crash replay: slow (a fork per case), bounded case by case
                    slot.process.kill()
                if lost:
                    slot.process.join(timeout=5)
                    detail = f" (exit code {slot.process.exitcode})" if lost == "crashed" else ""
                    echo(f"  {lost}: {slot.stats.item.id}{detail}; the hunt goes on")
                    scheduler.lost(slot.stats, lost, time.monotonic() - started, slot.visit)
                    if lost == "crashed" and not slot.task[3]:
                        crash_hunts.append((slot.stats, (*slot.task[:3], True), slot.visit))
                    slots[index] = spawn()
            if time.monotonic() - last_progress >= PROGRESS_EVERY_S:
                last_progress = time.monotonic()
                echo(_progress_line(scheduler, time.monotonic() - started, options, visits))
    except KeyboardInterrupt:
        interrupted = True
        echo("torchcts fuzz: interrupted; every case found so far is in the corpus")
    finally:
        with interrupts.deferred(raise_at_end=False):  # a second Ctrl-C must not leave workers running
            for slot in slots:
                if slot.process.is_alive():
                    slot.process.kill()
                slot.process.join(timeout=5)
        signals.close()
        interrupted = interrupted or interrupts.requested() is not None  # also when swallowed on the way
    elapsed = time.monotonic() - started
    summary = {
        "seed": seed, "budget_s": options.budget_s, "max_visits": options.max_visits, "visits": visits,
        "elapsed_s": round(elapsed, 1), "interrupted": interrupted, "signal": interrupts.signal_name(),
        "device": options.device, "compile": options.compile_backend, "workers": options.workers,
        "corpus": str(options.corpus_dir), "examples": sum(s.examples for s in scheduler.stats.values()),
        "items": [s.as_json() for s in scheduler.stats.values()],
    }
    folder = Path(options.results_dir) / f"fuzz-{new_run_id()}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fuzz.json").write_text(json.dumps(summary, indent=1) + "\n")
    summary["folder"] = str(folder)
    return summary


def parse_budget(text: str) -> float:
    """Seconds in a budget such as `90`, `90s`, `10m`, `1h30m`; ValueError otherwise."""
    parts = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not parts or not any(parts.groups()):
        raise ValueError(f"{text[:40]!r} is not a duration (examples: 90s, 10m, 1h)")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0 or not math.isfinite(total):  # a 400-digit budget is infinity, which fuzz.json cannot hold
        raise ValueError(f"{text[:40]!r}: the budget must be a positive, finite duration")
    return total


def _progress_line(scheduler: Scheduler, elapsed: float, options: FuzzOptions, visits: int) -> str:
    stats = scheduler.stats.values()
    covered = sum(1 for s in stats if s.tasks)
    examples = sum(s.examples for s in stats)
    failures = sum(len(s.new_cases) for s in stats)
    lost = sum(1 for s in stats if s.outcome in ("crashed", "timed_out"))
    seconds = f"{elapsed:.0f}" + (f"/{options.budget_s:.0f}" if options.budget_s is not None else "")
    count = f"{visits}" + (f"/{options.max_visits}" if options.max_visits is not None else "")
    return (f"torchcts fuzz: {seconds} s, {count} visits, {covered}/{len(scheduler.stats)} items covered, "
            f"{examples / max(elapsed, 1e-9):.1f} examples/s, {failures} new cases, {lost} crashed or hung")


def new_cases(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(item["item"], case) for item in summary["items"] for case in item["new_cases"]]


def print_summary(summary: dict[str, Any], echo: Callable[[str], None]) -> None:
    found = new_cases(summary)
    lost = [item for item in summary["items"] if item["outcome"] in ("crashed", "timed_out")]
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
    lost = any(item["outcome"] in ("crashed", "timed_out") for item in summary["items"])
    return 1 if new_cases(summary) or lost else 0

