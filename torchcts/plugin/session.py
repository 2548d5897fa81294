"""One conformance run inside a pytest session: the plan's items, run by the engine, recorded, presented.

The plugin's hooks delegate here. `RunSession.start` checks the options and starts the run
(`plugin.options`); the session gives each property function its items, runs each item with
`engine.run.run_item` (which forks it when the isolation policy says so), appends the record,
presents it to pytest (a pass returns, a not-run outcome skips with its reason, a finding fails
with its error), prints progress, and closes the run as complete or partial.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from torchcts.cases.replay_items import ReplayItem, replay_flags
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.outcomes import NOT_RUN, PROBLEMS, Outcome
from torchcts.plan.build import PlanItem
from torchcts.plugin.options import (  # noqa: F401 - AuditDone, SessionError: the hooks import them from here
    AuditDone, RunStart, SessionError, start_run)

PROGRESS_EVERY_S = 15.0
TRACE_ENV = "TORCHCTS_TRACE_DEVICE_OPS"


class RunSession:
    def __init__(self, config: pytest.Config, start: RunStart):
        self.config = config
        self.manifest = start.manifest
        self.target = start.target
        self.device = start.target.device
        self.plan = start.plan
        self.writer = start.writer
        self.run_seed = start.run_seed
        self.level = start.level
        self.replaying = start.replaying  # replay items when --corpus is given, instead of the plan's
        self.total = len(start.replaying) if start.replaying is not None else len(start.plan.items)
        self.corpus_dir = start.corpus_dir
        self.isolation = start.isolation
        self.new_cases = 0
        self.done = 0
        self.problems = 0
        self.started = time.monotonic()
        self.last_progress = self.started
        self.finished = False
        self.engine = self._engine_settings(start)

    @classmethod
    def start(cls, config: pytest.Config) -> "RunSession":
        """The session of a conformance run; SessionError (bad input) or AuditDone instead."""
        return cls(config, start_run(config))

    def _engine_settings(self, start: RunStart) -> EngineSettings:
        manifest, target = start.manifest, start.target
        flags = replay_flags(target.device, target.compile_backend, manifest.source if manifest is not None else None)
        found = {"run_seed": start.run_seed, "derandomize": start.run_seed is None, "run_id": start.writer.run_id,
                 "hardware_key": start.writer.environment.get("hardware_key")}
        return EngineSettings(
            target=target, manifest=manifest, level=start.level, max_examples=start.max_examples,
            run_seed=start.run_seed,
            versions=versions(),
            deadline_ms=manifest.hypothesis.deadline_ms if manifest is not None else None,
            shrink=not self.config.getoption("torchcts_no_shrink"),
            corpus_dir=None if start.replaying is not None else start.corpus_dir,  # a replay stores no new cases
            found=found, replay_flags=flags, isolation=start.isolation,
            # `torchcts selftest` asks the faulty device which aten overloads each item ran
            trace_device_ops=os.environ.get(TRACE_ENV) == "1" and target.device_type == "faulty",
            show_traceback=bool(manifest is not None and manifest.show_traceback), case_limits=start.case_limits)

    def header(self) -> list[str]:
        seed = "derandomized (seeds from item ids)" if self.run_seed is None else f"seed {self.run_seed} (--seed to repeat)"
        manifest = self.manifest.source if self.manifest else "none"
        if self.replaying is not None:
            return [f"torchcts: replaying {self.total} corpus cases on {self.target.describe()}, manifest {manifest}, "
                    f"results in {self.writer.folder}"]
        return [f"torchcts: device {self.target.describe()}, manifest {manifest}, level {self.level}, {seed}",
                f"torchcts: {len(self.plan.items)} items to run, {len(self.plan.accounting)} not run (recorded "
                f"with reasons), results in {self.writer.folder}"]

    # -- items ---------------------------------------------------------------------------------

    def items_for(self, property_name: str) -> list[PlanItem | ReplayItem]:
        """The items the property's test function is parametrized over: the plan's, or the replayed cases'."""
        if self.replaying is not None:
            return [item for item in self.replaying if item.property == property_name]
        return list(self.plan.for_property(property_name))

    def run(self, item: PlanItem | ReplayItem) -> dict[str, Any]:
        """Run one item with the engine, append its record, count it; the record."""
        self.writer.mark_started(item.id)
        record = run_item(item, self.engine)
        self.writer.record(record)
        self.new_cases += bool((record.get("counterexample") or {}).get("new"))
        self.done += 1
        self.problems += record["outcome"] in PROBLEMS
        self._progress()
        return record

    def record_deselected(self, item: PlanItem | ReplayItem, reason: str) -> None:
        self.writer.record({**item.as_json(), "outcome": Outcome.DESELECTED, "reason": reason})

    def _progress(self) -> None:
        now = time.monotonic()
        if now - self.last_progress < PROGRESS_EVERY_S:
            return
        self.last_progress = now
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        line = (f"torchcts: {self.done}/{self.total} items, {self.problems} failed or errored, "
                f"{now - self.started:.0f} s elapsed")
        if reporter is not None:
            reporter.write_line(line)

    # -- end -----------------------------------------------------------------------------------

    def finish(self, interrupted: bool) -> None:
        if self.finished:
            return
        self.finished = True
        from torchcts import interrupts

        with interrupts.deferred(raise_at_end=False):  # a second Ctrl-C or SIGTERM now must not leave run.json `running`
            signal = interrupts.signal_name()  # set even when the signal's exception was swallowed
            interrupted = interrupted or signal is not None
            complete = not interrupted and self.done >= self.total
            self.writer.close("complete" if complete else "partial",
                              interrupted={"signal": signal} if interrupted else None)

    def summary_lines(self) -> list[str]:
        counts = ", ".join(f"{name} {count}" for name, count in sorted(self.writer.outcomes.items()))
        seed = "derandomized" if self.run_seed is None else f"seed {self.run_seed} (--seed {self.run_seed} repeats it)"
        if self.replaying is not None:
            seed = "corpus replay"
        lines = [f"torchcts: results in {self.writer.folder} ({counts}); {seed}"]
        if self.new_cases:
            lines.append(f"torchcts: {self.new_cases} new counterexample(s) in {self.corpus_dir}; each failing "
                         f"record names its replay command")
        return lines


def present(record: dict[str, Any]) -> None:
    """Show a record to pytest: return for passed, skip with the reason for a not-run outcome, fail
    (without a Python traceback: the record has the error) for a finding."""
    outcome = record["outcome"]
    if outcome in NOT_RUN:
        reason = str(record["reason"])
        pytest.skip(reason if reason.startswith(str(outcome)) else f"{outcome}: {reason}")
    if outcome in PROBLEMS:
        lines = [f"{outcome}: {record['reason']}"]
        if record.get("isolated"):
            lines[0] += f" (isolated: {record['isolated']})"
        if record.get("error"):
            lines.append(str(record["error"])[-2000:])
        pytest.fail("\n".join(lines), pytrace=False)
