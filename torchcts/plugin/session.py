"""One conformance run inside a pytest session: the plan's items, run by the engine, recorded, presented.

The plugin's hooks delegate here. `RunSession.start` checks the options and starts the run
(`run_setup.start`, its input read by `plugin.options`); the session gives each property function its
items, runs each item with `engine.run.run_item` (which forks it when the isolation policy says so),
appends the record,
presents it to pytest (a pass returns, a not-run outcome skips with its reason, a finding fails
with its error line), shows it on the console (`plugin.console`) once pytest has reported it, and
closes the run as complete or partial; a conformance run that executed no item says why and
fails (`nothing_ran`). Under `torchcts run` it also writes the report into the run folder.
"""

from __future__ import annotations

import collections
import re
import time
from typing import Any

import pytest

from torchcts import interrupts
from torchcts.cases.replay_items import ReplayItem
from torchcts.engine import device_findings
from torchcts.engine.hypothesis_profile import StatisticsTotals
from torchcts.engine.run import run_item
from torchcts.core.outcomes import EXECUTED, NOT_RUN, PROBLEMS, Outcome
from torchcts.coverage.summary import report_section
from torchcts.isolation.fork import fork_safe
from torchcts.isolation.spawn import close_pools
from torchcts.plan.build import PlanItem, capabilities_tested
from torchcts.probe.records import end_lines, probe_run
from torchcts.disk import WriteError
from torchcts.plugin import distributed
from torchcts.plugin.console import Console, PlainPytestScreen, error_line
from torchcts.plugin.options import start_run
from torchcts.report.render import write_report
from torchcts.run_setup.errors import AuditDone, SessionError  # noqa: F401 - the hooks import them from here
from torchcts.run_setup.start import RunStart


class RunStopped(pytest.exit.Exception):  # pytest.exit's exception: pytest stops the session
    """A file of the run could not be written: pytest stops the session (the quiet console shows no banner
    for it; the summary's last line is the WriteError's)."""


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
        self.replaying = start.replaying  # replay items when --replay is given, instead of the plan's
        self.total = len(start.replaying) if start.replaying is not None else len(start.plan.items)
        self.corpus_dir = start.corpus_dir
        self.isolation = start.isolation
        self.new_cases = 0
        self.done = 0
        self.problems = 0
        self.started = time.monotonic()
        self.finished = False
        self.final_write = interrupts.FinalWrite()  # run.json's last version: by `finish`, or `finish_when_stuck`
        self.console = Console(self.total)  # a tally until a screen is attached (`plugin.launch`, or `reported`)
        self.last_record: dict[str, Any] | None = None  # the record of the item pytest reports next
        self.write_report = False  # `torchcts run` writes the report at the end (unless --no-report)
        self.report_line: str | None = None  # where the report went, or why it did not
        self.nothing_ran: str | None = None  # why a conformance run executed no item (it then fails)
        self.engine = start.engine  # `run_setup.settings.engine_settings`
        self.draw = start.draw
        self.statistics = StatisticsTotals()  # --hypothesis-show-statistics: the summary line's totals
        self.probes: dict[str, Any] | None = None  # their summary (None: none ran)
        self.probe_lines: list[str] = []  # what they say, shown with the first item's report
        self.role = start.role  # "single", or the "controller" or a "worker" of a pytest-xdist run
        self.probed = self.role == "worker"  # the probes run once, before the first item; a controller's for all
        self.write_error: WriteError | None = None  # a file of the run that could not be written (the run stopped)

    @classmethod
    def start(cls, config: pytest.Config) -> "RunSession":
        """The session of a conformance run; SessionError (bad input) or AuditDone instead."""
        return cls(config, start_run(config))

    def header(self) -> list[str]:
        seed = "derandomized (seeds from item ids)" if self.run_seed is None else f"seed {self.run_seed} (--seed to repeat)"
        manifest = self.manifest.source if self.manifest else "none"
        if self.replaying is not None:
            return [f"torchcts: replaying {self.total} corpus cases on {self.target.describe()}, manifest {manifest}, "
                    f"results in {self.writer.folder}"]
        return [f"torchcts: device {self.target.describe()}, manifest {manifest}, level {self.level}, {seed}",
                self.draw.header(derandomize=self.run_seed is None, seed=self.run_seed, shrink=self.engine.shrink),
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
        self.probe_once()
        self.writer.mark_started(item.id)
        record = run_item(item, self.engine)
        self.writer.record(record)
        self._count(record)
        self.statistics.add(record)
        unstored = record.get("counterexample_unwritable")
        if unstored:  # the corpus is on a full disk: the record says so, and the run stops (`run_or_stop`)
            raise WriteError(unstored["path"], unstored["reason"])
        return record

    def run_or_stop(self, item: PlanItem | ReplayItem, pytest_session: pytest.Session | None = None) -> dict[str, Any]:
        """`run`; a file that cannot be written (a full disk: a record, a stored case, the probes) stops the
        run at once with one line (`RunStopped`; a pytest-xdist worker stops through its controller): what was
        written stays readable, and later items would only fail the same way."""
        try:
            return self.run(item)
        except WriteError as exc:
            self.write_error = exc
            if self.role == "worker" and pytest_session is not None:
                distributed.stop_worker(self.config, pytest_session, exc)
            raise RunStopped(str(exc), returncode=pytest.ExitCode.USAGE_ERROR) from None

    def _count(self, record: dict[str, Any]) -> None:
        self.new_cases += bool((record.get("counterexample") or {}).get("new"))
        self.done += 1
        self.problems += record["outcome"] in PROBLEMS
        self.last_record = record

    def remote_record(self, record: dict[str, Any]) -> None:
        """A pytest-xdist worker ran an item and wrote its record (`plugin.distributed`): count it, show it."""
        self._count(record)
        self.reported()

    def worker_died(self, node_id: str, what: str) -> None:
        """The pytest-xdist worker running `node_id` died (a crash outside isolation): the item's record is
        `crashed`, written here, as an isolated child's would be; pytest-xdist replaces the worker."""
        item_id = node_id[node_id.find("[") + 1:-1] if node_id.endswith("]") else None
        item = next((i for i in self.plan.items if i.id == item_id), None) if item_id else None
        if item is None:  # not a plan item (another test, a replayed case): pytest-xdist reports it
            return
        record = worker_died_record(item, what)
        self.writer.record(record)
        self._count(record)
        self.reported()

    def probe_once(self) -> None:
        """The probes, before the first item of a run (not in a replay, not in a pytest-xdist worker)."""
        if not self.probed and self.replaying is None and self.plan.items:
            self._probe()

    def reported(self) -> None:
        """pytest reported the item just run: show its record on the console (here, outside pytest's
        capture of the item's output). Under plain pytest, whose reporter shows the items, the console
        only adds a progress line every 15 s."""
        record, self.last_record = self.last_record, None
        if record is None:
            return
        if self.console.screen is None:
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                self.console.screen, self.console.findings = PlainPytestScreen(reporter), False
        self._show_probe_lines()
        self.console.item(record)

    def _probe(self) -> None:
        """Before the first item: probe the run's dtypes and the declared capabilities its items test on the device
        (`torchcts.probe`: probes.jsonl, run.json's `probes`), forked where items can be. Probes change
        no claim, item or outcome; they explain the failures that follow."""
        self.probed = True
        fork = fork_safe(self.target.device_type) and getattr(self.isolation, "can_fork", True)
        self.probes = probe_run(self.device, self.manifest, {item.dtype for item in self.plan.items},
                                self.writer.folder, fork=fork, plan_capabilities=capabilities_tested(self.plan.items),
                                say=self.probe_lines.append)
        if self.probes is not None:  # None: TORCHCTS_PROBES=off
            self.writer.set_probes(self.probes)

    def _show_probe_lines(self) -> None:
        """The probes' lines, once (outside pytest's capture); plain pytest's screen would hold them back."""
        lines, self.probe_lines = self.probe_lines, []
        screen = self.console.screen
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        for line in lines:
            if screen is not None and not isinstance(screen, PlainPytestScreen):
                screen.line(line)
            elif reporter is not None:
                if getattr(reporter._tw, "width_of_current_line", 0):  # after pytest's progress characters
                    reporter.write("\n")
                reporter.write_line(line)

    def record_deselected(self, item: PlanItem | ReplayItem, reason: str) -> None:
        self.writer.record(deselected_record(item, reason))
        self.console.total -= 1

    # -- end -----------------------------------------------------------------------------------

    def finish(self, interrupted: bool) -> None:
        if self.finished:
            return
        self.finished = True
        if not self.final_write.claim():  # the interrupt watchdog wrote run.json: the run was stuck
            return
        close_pools()  # the spawned isolation workers end with the run

        with interrupts.deferred(raise_at_end=False):  # a second Ctrl-C or SIGTERM now must not leave run.json `running`
            signal = interrupts.signal_name()  # set even when the signal's exception was swallowed
            interrupted = interrupted or signal is not None
            complete = not interrupted and self.done >= self.total and self.write_error is None
            try:
                self.writer.close("complete" if complete else "partial",
                                  interrupted={"signal": signal} if interrupted else None)
            except WriteError as exc:  # run.json keeps its last whole version (`running`: read as partial)
                self.write_error = self.write_error or exc
            finally:
                self.final_write.done()
        if self.role == "worker":  # the controller counts, judges and reports the whole run
            return
        if self.write_error is not None:
            if self.write_report:
                self.report_line = (f"torchcts: report not written (a file could not be written); once there is "
                                    f"room, `torchcts report --from {self.writer.folder}` writes it")
            return
        if not interrupted and self.writer.run_kind == "run":
            option = self.config.getoption
            self.nothing_ran = nothing_ran(self.plan, self.writer.outcomes, self.done, option("torchcts_ops") or (),
                                           option("torchcts_dtypes") or (), option("torchcts_properties") or ())
        if self.write_report and self.writer.run_kind != "collect_only":
            if interrupted:  # the user asked to stop: the report (seconds for a large run) waits for them to ask
                self.report_line = (f"torchcts: report not written (interrupted); `torchcts report --from "
                                    f"{self.writer.folder}` writes it")
            else:
                self.report_line = self._write_report()

    def finish_when_stuck(self) -> None:
        """From the interrupt watchdog's thread, ending a run that did not stop (stuck in backend code): run.json
        partial, as `finish` would leave it, unless `finish` began first (then its write is let end)."""
        if not self.final_write.claim():
            self.final_write.wait()
            return
        try:
            self.writer.close("partial", interrupted={"signal": interrupts.signal_name()})
        finally:
            self.final_write.done()

    def _write_report(self) -> str:
        """Write the report into the run folder; the line that says where it is, or why it is not there.
        A report that fails changes neither the results (already closed) nor the exit status."""
        try:
            written = write_report(self.writer.folder, results_dir=self.writer.folder.parent,
                                   corpus_dir=self.corpus_dir,  # the cases the run stored may sit outside it
                                   coverage_html=report_section)
        except KeyboardInterrupt:  # a second Ctrl-C (or signal) while it was written
            return (f"torchcts: report not written (interrupted); `torchcts report --from {self.writer.folder}` "
                    f"writes it")
        except WriteError as exc:  # a full disk: the results are kept, the run exits 2 with the line
            self.write_error = exc
            return (f"torchcts: report not written; the results are kept (`torchcts report --from "
                    f"{self.writer.folder}` retries)")
        except Exception as exc:  # noqa: BLE001 - the run's results are kept whatever the report does
            text = " ".join(str(exc).split())[:300] or type(exc).__name__
            return (f"torchcts: report not written: {text}; the results are kept "
                    f"(`torchcts report --from {self.writer.folder}` retries)")
        folder = next(iter(written.values())).parent if written else self.writer.folder
        return f"torchcts: report in {folder}/ ({', '.join(path.name for path in written.values())})"

    def summary_lines(self) -> list[str]:
        self.console.end()
        counts = ", ".join(f"{name} {count}" for name, count in sorted(self.writer.outcomes.items()))
        seed = "derandomized" if self.run_seed is None else f"seed {self.run_seed} (--seed {self.run_seed} repeats it)"
        if self.replaying is not None:
            seed = "corpus replay"
        lines = [f"torchcts: nothing ran: {self.nothing_ran}"] if self.nothing_ran else []
        missing = self.console.missing_line()
        lines += [missing] if missing else []
        findings = self.writer.environment.get("findings")  # said once, with the items they cause
        lines += device_findings.end_lines(findings, self.writer.folder / "records.jsonl")
        if self.probes is not None:
            lines += end_lines(self.probes, self.writer.folder)
        lines.append(f"torchcts: results in {self.writer.folder} ({counts}); {seed}")
        lines += [self.report_line] if self.report_line else []
        statistics = self.statistics.line()
        if statistics is not None:
            lines.append(statistics)
        if self.new_cases:
            lines.append(f"torchcts: {self.new_cases} new counterexample(s) in {self.corpus_dir}; each failing "
                         f"record names its replay command")
        if self.write_error is not None:  # last: the one line that says why the run stopped (exit 2)
            lines.append(str(self.write_error))
        return lines


def nothing_ran(plan: Any, outcomes: Any, done: int, op_patterns: Any = (), dtypes: Any = (),
                properties: Any = ()) -> str | None:
    """Why a conformance run executed no item (which filter left nothing), or None when one executed.

    `op_patterns`, `dtypes`, `properties`: the command line's selection, to name the reasons of the items
    it asked for. A run that tests nothing must not look green: `torchcts run` exits 3, pytest fails."""
    if sum(n for outcome, n in outcomes.items() if outcome in EXECUTED):
        return None
    if not plan.items:
        if not plan.accounting:
            return "the manifest's claims give no item to run (no registered property applies)"
        ops = sorted({str(getattr(entry.item, "op", "")) for entry in plan.accounting})
        if op_patterns and not any(pattern_matches(p, op) for p in op_patterns for op in ops):
            return (f"--ops {' '.join(repr(p) for p in op_patterns)} matches none of the {len(ops)} OpInfo and "
                    f"scenario names (`torchcts show-skips --list` lists them)")
        asked = [entry for entry in plan.accounting if _asked_for(entry.item, op_patterns, dtypes, properties)]
        reasons = collections.Counter(f"{entry.outcome}: {entry.reason}" for entry in asked or plan.accounting)
        ranked = reasons.most_common()
        shown = "; ".join(f"{key} ({count})" for key, count in ranked[:3])
        more = f"; and {len(ranked) - 3} more reasons" if len(ranked) > 3 else ""
        return (f"every item of the selection is filtered out or not claimed: {shown}{more} "
                f"(`torchcts show-skips` explains each)")
    if done == 0:
        return (f"none of the {len(plan.items)} selected items was run: pytest deselected or did not collect them "
                f"(-k, -m, --deselect, or test paths after --)")
    not_run = ", ".join(f"{o} {n}" for o, n in sorted(outcomes.items()) if o not in EXECUTED and n)
    return f"none of the {done} items run executed a case ({not_run})"


def _asked_for(item: Any, op_patterns: Any, dtypes: Any, properties: Any) -> bool:
    """Whether the command line's --ops, --dtype and --property keep `item` (the manifest may still not)."""
    names = {part.strip().removeprefix("torch.") for value in dtypes or () for part in str(value).split(",")}
    return ((not op_patterns or any(pattern_matches(p, str(getattr(item, "op", ""))) for p in op_patterns))
            and (not names or str(getattr(item, "dtype", "")) in names)
            and (not properties or getattr(item, "property", None) in properties))


def pattern_matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


def present(record: dict[str, Any], folder: Any = None) -> None:
    """Show a record to pytest: return for passed, skip with the reason for a not-run outcome, fail
    (without a Python traceback) for a finding with a short text: the error's first line, the replay
    command, and where the full detail is (`folder`: the run folder)."""
    outcome = record["outcome"]
    if outcome in NOT_RUN:
        reason = str(record["reason"])
        pytest.skip(reason if reason.startswith(str(outcome)) else f"{outcome}: {reason}")
    if outcome in PROBLEMS:
        lines = [f"{outcome}: {record['reason']}"]
        if record.get("isolated"):
            lines[0] += f" (isolated: {record['isolated']})"
        line = error_line(record)
        if line and line != record["reason"]:
            lines.append(line)
        replay = (record.get("counterexample") or {}).get("replay")
        if replay:
            lines.append(f"replay: {replay}")
        if folder is not None:
            lines.append(f"full error: {folder}/records.jsonl (item {record.get('item')}); "
                         f"report: torchcts report --from {folder}")
        pytest.fail("\n".join(lines), pytrace=False)


def worker_died_record(item: PlanItem, what: str) -> dict[str, Any]:
    """The `crashed` record of an item whose pytest-xdist worker died running it (`what`: pytest-xdist's words)."""
    reason = "the pytest-xdist worker running it died"
    return {**item.as_json(), "outcome": Outcome.CRASHED, "reason": reason, "error": what, "error_line": reason,
            "duration_s": None, "signal": None, "isolated": None, "counterexample": None}


def deselected_record(item: PlanItem | ReplayItem, reason: str) -> dict[str, Any]:
    """The record of an item pytest deselected (-k, -m, --deselect) or a shard leaves to another."""
    return {**item.as_json(), "outcome": Outcome.DESELECTED, "reason": reason}
