"""The order of the selftest's runs and what their records say: every phase's clean run (in shards when
several workers share it), then, as each phase's clean run ends, one run per seeded bug its records say
can act (`selftest_reach`), all through one `selftest_pool.RunPool`."""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from torchcts.testing.selftest_pool import RunPool, RunRequest, RunResult
from torchcts.testing.selftest_reach import PROBLEMS, BugReach, bug_reach, fired_bugs, group_reaches

DETECTS = ("failed", "error")  # a seeded bug is detected by an item failing or erroring with it on
LONG_FIRST = ("compile",)  # phases whose clean run starts first: few items, each minutes long


def shards(workers: int) -> tuple[str | None, ...]:
    """The `--shard` of each part of a clean run: one per worker (a single worker: the whole run)."""
    return (None,) if workers <= 1 else tuple(f"{k}/{workers}" for k in range(1, workers + 1))


@attrs.define
class _PhaseState:
    phase: Any
    shards_left: int
    records: list[dict[str, Any]] = attrs.Factory(list)


@attrs.define
class Schedule:
    """The runs of one selftest: the clean runs queued at the start, the bug runs as their phase's clean run ends;
    `run` drives a pool until none is left (a signal stops it: `collect` what the stopped runs left)."""

    planned: tuple[Any, ...]
    chosen: list[Any]  # the seeded bugs tested
    owned: set[str]  # the suites some phase's bug_suites names (`Phase.runs`)
    results_dir: Path
    workers: int
    ops: tuple[str, ...] = ()  # selftest --ops: narrows the clean runs
    progress: Callable[[str], None] = print
    queue: collections.deque = attrs.Factory(collections.deque)
    states: dict[str, _PhaseState] = attrs.Factory(dict)
    clean_records: list[dict[str, Any]] = attrs.Factory(list)
    failed_clean: dict[str, set[str]] = attrs.Factory(dict)  # phase -> items its clean run fails
    failing: dict[str, list[str]] = attrs.Factory(dict)  # bug -> items that show it
    reached: dict[str, set[str]] = attrs.Factory(dict)  # bug -> ops or scenarios that reach it
    reaches: list[tuple[str, BugReach]] = attrs.Factory(list)  # (phase, reach) of every bug of every phase
    incomplete: list[str] = attrs.Factory(list)
    owners: dict[str, dict[str, str]] = attrs.Factory(dict)  # group run's name -> item -> the bug that fires in it
    done: int = 0

    def __attrs_post_init__(self) -> None:
        self.failing = {bug.name: [] for bug in self.chosen}
        self.reached = {bug.name: set() for bug in self.chosen}
        parts = shards(self.workers)
        ordered = sorted(self.planned, key=lambda phase: phase.name not in LONG_FIRST)
        for phase in ordered:
            self.states[phase.name] = _PhaseState(phase, len(parts))
            self.failed_clean[phase.name] = set()
            folder = self.results_dir / phase.name / "clean"
            for shard in parts:
                where = folder if shard is None else folder / f"shard-{shard.replace('/', '-of-')}"
                self.queue.append(RunRequest(phase.name, where, phase.level, phase.properties, phase.dtypes,
                                             self.ops or phase.ops, shard=shard))

    def run(self, pool: RunPool) -> None:
        """Start runs while the pool has room; take in each that ends; until every run is done."""
        while self.queue or pool.running:
            while self.queue and pool.has_room():
                request = self.queue.popleft()
                self.progress(self._starting(request))
                pool.start(request)
            for result in pool.wait():
                self.take(result)

    def take(self, result: RunResult) -> None:
        """Read a run that ended (or was stopped): a clean part, or a bug's run."""
        request = result.request
        self.done += 1
        if not result.complete:
            self.incomplete.append(request.name)
        self.progress(f"selftest: {request.name} done in {result.seconds:.0f}s"
                      + ("" if result.complete else " (incomplete)") + f" [{self.done} runs done, "
                      f"{len(self.queue)} waiting]")
        if not request.bug:
            self._take_clean(result)
            return
        failed = self.failed_clean[request.phase]  # only items the clean backend passes can show a bug
        if request.name not in self.owners:
            bug = self._bug(request.bug)
            self.failing[bug.name] += [r["item"] for r in result.records if r["outcome"] in DETECTS
                                       and r["item"] not in failed and detects(bug, r)]
            return
        owners, members, alone = self.owners.pop(request.name), set(request.bug.split(",")), {}
        for record in result.records:
            owner = owners.get(record["item"])
            if owner is None or "device_ops" not in record:  # an item no bug of the run fires: it ran as clean
                continue
            if fired_bugs(record["device_ops"]) & members - {owner}:  # another bug acted too: rerun with its own
                alone.setdefault(owner, []).append(record)
            elif record["outcome"] in DETECTS and record["item"] not in failed and detects(self._bug(owner), record):
                self.failing[owner].append(record["item"])
        for owner, records in alone.items():
            self.queue.append(RunRequest(
                request.phase, self.results_dir / request.phase / owner, request.level,
                tuple(sorted({r["property"] for r in records})), request.dtypes,
                (_pattern(sorted({r["op"] for r in records})),), bug=owner,
                detail=f"alone: {len(records)} items where another bug of its run acted too"))

    def _bug(self, name: str) -> Any:
        return next(bug for bug in self.chosen if bug.name == name)

    def not_started(self) -> list[str]:
        """The runs still queued (a signal stopped the selftest before they started)."""
        return [request.name for request in self.queue]

    def _take_clean(self, result: RunResult) -> None:
        state = self.states[result.request.phase]
        # the items that ran (a trace: passed, failed, or found their runtime unavailable ...) or failed without one
        executed = [r for r in result.records if "device_ops" in r or r["outcome"] in PROBLEMS]
        state.records += executed
        self.clean_records += executed
        self.failed_clean[state.phase.name].update(r["item"] for r in executed if r["outcome"] in PROBLEMS)
        state.shards_left -= 1
        if state.shards_left == 0:
            self._queue_bug_runs(state)

    def _queue_bug_runs(self, state: _PhaseState) -> None:
        """The runs of the phase's bugs: precise ones grouped (`selftest_reach.group_reaches`), the others alone."""
        phase, precise = state.phase, []
        for bug in (bug for bug in self.chosen if phase.runs(bug, self.owned)):
            reach = bug_reach(state.records, bug, phase.properties)
            self.reaches.append((phase.name, reach))
            self.reached[bug.name].update(reach.reached_ops)
            if reach.runs and bug.precise:
                precise.append(reach)
            elif reach.runs:
                self.queue.append(RunRequest(phase.name, self.results_dir / phase.name / bug.name, phase.level,
                                             reach.properties, phase.dtypes, (reach.ops_pattern(),), bug=bug.name,
                                             detail=f"{len(reach.reached_ops)} ops or scenarios reach it"))
            elif reach.reached_ops:
                self.progress(f"selftest: {phase.name}: {bug.name}: {len(reach.reached_ops)} ops or scenarios reach "
                              f"it, no item the clean backend passes meets its condition ({bug.condition}): not rerun")
        for number, group in enumerate(group_reaches(precise, state.records), 1):
            items = sum(len(reach.firing_items) for reach in group.reaches)
            if len(group.reaches) == 1:
                (reach,) = group.reaches
                self.queue.append(RunRequest(
                    phase.name, self.results_dir / phase.name / reach.bug, phase.level, reach.properties,
                    phase.dtypes, (reach.ops_pattern(),), bug=reach.bug,
                    detail=f"{len(reach.reached_ops)} ops or scenarios reach it, {items} items meet its condition"))
                continue
            request = RunRequest(phase.name, self.results_dir / phase.name / f"group-{number}", phase.level,
                                 group.properties, phase.dtypes, (group.ops_pattern(),), bug=",".join(group.names),
                                 label="+".join(group.names),
                                 detail=f"{len(group.names)} bugs no item meets two conditions of, {items} items")
            self.owners[request.name] = group.owners
            self.queue.append(request)

    def _starting(self, request: RunRequest) -> str:
        if request.bug:
            return f"selftest: {request.phase}: {request.label or request.bug} ({request.detail}) ..."
        shard = f" (shard {request.shard})" if request.shard else ""
        return f"selftest: clean run of the {request.phase} phase against the faulty device{shard} ..."


def _pattern(ops: Iterable[str]) -> str:
    return "^(" + "|".join(re.escape(op) for op in ops) + ")$"


def detects(bug: Any, record: dict[str, Any]) -> bool:
    """Whether a failing record shows the bug: a missing-kernel bug only as a missing-kernel error."""
    return bug.kind != "missing-kernel" or record.get("error_kind") == "missing_kernel"


def clean_failures(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["outcome"] in PROBLEMS]
