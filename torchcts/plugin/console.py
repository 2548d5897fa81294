"""The console of a conformance run: a header, one progress line, one line per finding, a summary.

A backend in development fails hundreds of items, most of them on missing kernels; pytest's own
output (a dot per item, a FAILURES section of error blocks, the warnings summary) then runs to
100,000 lines. Under `torchcts run` (and `torchcts replay`) `QuietReporter` takes the place of
pytest's terminal reporter: it keeps pytest's bookkeeping and the reporter other plugins write to
(Hypothesis statistics, JUnit XML), and prints only what `Console` gives it:

- the run's header lines;
- one progress line (items done/total, failures so far, elapsed, estimate left) that rewrites
  itself on a terminal, or a plain line per tenth of the items (and at least once a minute) when
  stdout is not a terminal (CI logs);
- each failure, error, crash or hang as ONE line: item id, outcome, the record's `error_line`, the
  replay command of its counterexample;
- a missing kernel once per overload, the first time it is hit (later items only counted);
- a summary: outcome counts, the missing kernels grouped (top 10), where the results, the report
  and the corpus are.

So a run prints at most: header (< 10) + one line per failing item that is not a missing kernel +
one line per distinct missing overload + the summary (< 15) + (off a terminal) 10 progress lines
and one per minute. pytest's own output comes back on request, after `--`: `-v` adds its line per
item, `--tb=short` (any --tb) its FAILURES section, `-rA` (any -r) its short summary; `-q` drops
the progress line. Under plain `pytest` the usual reporter stays and only the progress and summary
lines come from here.
"""

from __future__ import annotations

import collections
import re
import sys
import time
import types
from typing import Any, Callable, Protocol

import pytest
from pytest import TerminalReporter

from torchcts.core.outcomes import PROBLEMS

PLAIN_STEPS = 10  # off a terminal: a progress line per tenth of the items ...
PLAIN_EVERY_S = 60.0  # ... and at least one a minute
PLAIN_PYTEST_EVERY_S = 15.0  # under plain pytest (its own reporter prints the items): a line every 15 s
TTY_EVERY_S = 0.2  # on a terminal: the progress line is rewritten at most 5 times a second
TOP_MISSING = 10  # missing overloads named in the summary (all of them are in run.json and the report)
ERROR_LINE_CHARS = 300
DEFAULT_REPORT_CHARS = "fE"  # pytest's default -r: a different value was asked for
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # terminal colours and cursor moves an error text may carry


# pytest >= 8.4 times the session with a clock object (`_session_start.elapsed().seconds`), older ones with a float
_PYTEST_TIMES_WITH_CLOCK = pytest.version_tuple[:2] >= (8, 4)


class _Elapsed:
    """A span of the session: its `seconds`, as pytest's summary reads them."""

    def __init__(self, seconds: float):
        self.seconds = seconds


class SessionClock:
    """When the session began, in the shape pytest's terminal summary reads (`elapsed().seconds`): pytest's own
    clock lives in its private modules, which TorchCTS does not import."""

    def __init__(self) -> None:
        self.time = time.time()
        self.perf_count = time.perf_counter()

    def elapsed(self) -> _Elapsed:
        return _Elapsed(time.perf_counter() - self.perf_count)


class Screen(Protocol):
    """Where the console writes: whole lines, and (on a terminal) a status line rewritten in place."""

    tty: bool

    def line(self, text: str) -> None: ...

    def status(self, text: str) -> None: ...

    def end_status(self) -> None: ...


def error_line(record: dict[str, Any]) -> str:
    """The one line a console shows of a record's error: the engine's `error_line`, else the first
    non-empty line of `error`, else the reason."""
    line = record.get("error_line")
    if not line:
        text = str(record.get("error") or "")
        line = next((part.strip() for part in text.splitlines() if part.strip()), "") or str(record.get("reason") or "")
    line = " ".join(_ANSI.sub("", str(line)).split())
    line = "".join(char if char.isprintable() else "?" for char in line)  # no escape reaches the terminal
    return line if len(line) <= ERROR_LINE_CHARS else line[:ERROR_LINE_CHARS - 3] + "..."


def missing_overload(record: dict[str, Any]) -> tuple[str, str] | None:
    """(overload, dispatch key) when the record's error is a missing kernel, else None."""
    missing = record.get("missing_kernel")
    if record.get("error_kind") != "missing_kernel" or not isinstance(missing, dict):
        return None
    return str(missing.get("overload") or "?"), str(missing.get("dispatch_key") or "?")


def duration(seconds: float) -> str:
    """45s, 3m05s, 1h02m."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Console:
    """Tallies the records of a run as they come, and shows them on a `Screen` (none: tally only).

    `findings`: print a line per failing item and per new missing kernel (a replay prints its own
    verdicts instead); `progress`: show the progress line."""

    def __init__(self, total: int, screen: Screen | None = None, *, findings: bool = True, progress: bool = True,
                 clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.screen = screen
        self.findings = findings
        self.progress = progress
        self.clock = clock
        self.started = clock()
        self.done = 0
        self.problems = 0
        self.missing: collections.Counter[tuple[str, str]] = collections.Counter()  # (overload, key) -> items
        self._last_line = self.started  # the last plain progress line
        self._last_status = float("-inf")
        self._last_step = 0

    # -- items ---------------------------------------------------------------------------------

    def item(self, record: dict[str, Any]) -> None:
        """Count one executed item's record; print its finding and the progress."""
        self.done += 1
        problem = record.get("outcome") in PROBLEMS
        self.problems += problem
        overload = missing_overload(record)
        if overload is not None:
            self.missing[overload] += 1
        if self.screen is None:
            return
        if problem and self.findings and (overload is None or self.missing[overload] == 1):
            self.screen.line(self.finding_line(record, overload))
            self._last_status = float("-inf")  # redraw the progress line under it at once
        if self.progress:
            self._show_progress()

    def finding_line(self, record: dict[str, Any], overload: tuple[str, str] | None) -> str:
        """ONE line for a finding: a new missing kernel, or outcome, item id, error line; the replay command."""
        if overload is not None:
            text = f"MISSING {overload[0]} ({overload[1]}): first hit by {record.get('item')}"
        else:
            outcome = str(record.get("outcome")).upper()
            text = f"{outcome} {record.get('item')}: {error_line(record)}"
            if record.get("isolated"):
                text += f" (isolated: {record['isolated']})"
        replay = (record.get("counterexample") or {}).get("replay")
        return f"{text} | {replay}" if replay else text

    def progress_line(self) -> str:
        now = self.clock()
        elapsed = now - self.started
        line = (f"torchcts: {self.done}/{self.total} items, {self.problems} failed or errored, "
                f"{duration(elapsed)} elapsed")
        if 0 < self.done < self.total:
            line += f", ~{duration(elapsed / self.done * (self.total - self.done))} left"
        return line

    def _show_progress(self) -> None:
        assert self.screen is not None
        now = self.clock()
        if self.screen.tty:
            if now - self._last_status >= TTY_EVERY_S or self.done >= self.total:
                self._last_status = now
                self.screen.status(self.progress_line())
            return
        step = self.done * PLAIN_STEPS // max(self.total, 1)
        if step > self._last_step or now - self._last_line >= PLAIN_EVERY_S or self.done == self.total:
            self._last_step, self._last_line = step, now
            self.screen.line(self.progress_line())

    def end(self) -> None:
        """The run ended: the progress line (on a terminal) becomes an ordinary line."""
        if self.screen is not None:
            self.screen.end_status()

    # -- summary -------------------------------------------------------------------------------

    def missing_line(self) -> str | None:
        """'N distinct kernels missing (M items): aten::zero_ 18 items, ... (top 10; ...)', or None."""
        if not self.missing:
            return None
        ranked = sorted(self.missing.items(), key=lambda entry: (-entry[1], entry[0]))
        shown = ", ".join(f"{overload} {count} item{'s' * (count != 1)}"
                          for (overload, _), count in ranked[:TOP_MISSING])
        more = f" (top {TOP_MISSING}; full list in the report and run.json)" if len(ranked) > TOP_MISSING else ""
        return (f"torchcts: {len(ranked)} distinct kernel{'s' * (len(ranked) != 1)} missing "
                f"({sum(self.missing.values())} items): {shown}{more}")


class PlainPytestScreen:
    """Under plain pytest, whose reporter prints the items: a progress line every 15 s, nothing else."""

    tty = False

    def __init__(self, reporter: Any, clock: Callable[[], float] = time.monotonic):
        self.reporter = reporter
        self.clock = clock
        self.last = clock()

    def line(self, text: str) -> None:
        if text.startswith("torchcts: ") and self.clock() - self.last >= PLAIN_PYTEST_EVERY_S:
            self.last = self.clock()
            self.reporter.write_line(text)

    def status(self, text: str) -> None:
        self.line(text)

    def end_status(self) -> None:
        pass


class ReporterScreen:
    """The quiet reporter's terminal: lines, and a status line rewritten in place with `\\r` on a terminal."""

    def __init__(self, reporter: TerminalReporter):
        self.reporter = reporter
        self.tty = bool(reporter.isatty())
        self.open = False  # a status line is on the screen, without its newline

    def line(self, text: str) -> None:
        if self.open:
            self.reporter.rewrite(text, erase=True)
            self.reporter.write("\n", flush=True)
            self.open = False
            self.reporter.currentfspath = None
        else:
            self.reporter.write_line(text)
            self.reporter.flush()

    def status(self, text: str) -> None:
        width = max(self.reporter._tw.fullwidth - 1, 20)
        self.reporter.rewrite(text[:width], erase=True)
        self.reporter.flush()
        self.open = True
        self.reporter.currentfspath = -2  # pytest's "the current line has text": another plugin's line starts anew

    def end_status(self) -> None:
        if self.open:
            self.reporter.write("\n", flush=True)
            self.open = False
            self.reporter.currentfspath = None


class QuietReporter(TerminalReporter):
    """pytest's terminal reporter, quiet unless asked (`-v`, an explicit `--tb` or `-r`): see the module doc.

    Only plain hooks and helper methods are overridden (pytest's hook wrappers stay as they are)."""

    def __init__(self, config: pytest.Config, header: Callable[[], list[str]]):
        super().__init__(config)
        self._header = header
        self._warnings_told = 0

    @property
    def quiet(self) -> bool:
        return self.verbosity <= 0

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if not self.quiet:
            super().pytest_sessionstart(session)
            return
        self._start(session)
        for line in self._header():
            self.write_line(line)

    def _start(self, session: pytest.Session) -> None:
        self._session = session
        # what pytest's own sessionstart (skipped when quiet) sets: its summary line times the session from it
        self._session_start = SessionClock() if _PYTEST_TIMES_WITH_CLOCK else time.time()

    def pytest_collection(self) -> None:
        if not self.quiet:
            super().pytest_collection()

    def report_collect(self, final: bool = False) -> None:
        if not self.quiet or self.config.getoption("collectonly"):
            super().report_collect(final)

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        if not self.quiet:
            super().pytest_runtest_logstart(nodeid, location)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.quiet:
            super().pytest_runtest_logreport(report)
            return
        self._tests_ran = True
        category = self.config.hook.pytest_report_teststatus(report=report, config=self.config)[0]
        self._add_stats(category, [report])

    def summary_failures(self) -> None:
        if not self.quiet or self.config.option.tbstyle != "auto":  # --tb given: pytest's FAILURES section
            super().summary_failures()

    def short_test_summary(self) -> None:
        if not self.quiet or self.config.option.reportchars != DEFAULT_REPORT_CHARS:  # -r given
            super().short_test_summary()

    def summary_warnings(self) -> None:
        if not self.quiet:
            super().summary_warnings()
            return
        count = len(self.stats.get("warnings", []))
        if count > self._warnings_told:
            self.write_line(f"torchcts: {count} pytest warning{'s' * (count != 1)} outside the items "
                            f"(items' own warnings are in their records; `-- -v` shows these)")
            self._warnings_told = count

    def summary_stats(self) -> None:
        if not self.quiet:
            super().summary_stats()

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        from torchcts.plugin import SESSION_KEY

        run = self.config.stash.get(SESSION_KEY, None)
        if run is None or run.write_error is None:  # a file that cannot be written: the summary's last line says it
            try:
                super().pytest_keyboard_interrupt(excinfo)
            except Exception:  # noqa: BLE001 -- pytest cannot render the traceback (below): drop its unlined frames
                self._keyboardinterrupt_memo = _renderable(excinfo).getrepr(funcargs=True)

    def _report_keyboardinterrupt(self) -> None:
        if self._keyboardinterrupt_memo is not None:  # None: the run stopped on a write error (above)
            super()._report_keyboardinterrupt()


def _renderable(excinfo: pytest.ExceptionInfo[BaseException]) -> pytest.ExceptionInfo[BaseException]:
    """`excinfo` without the traceback entries that have no line number. CPython 3.11 gives a frame none
    when a signal's exception is raised at an instruction without one (a second SIGTERM during a `with`
    block's exit); pytest's rendering then raises TypeError, which ended an interrupted run with exit 1
    instead of 128 + the signal's number. The exception itself is kept: only its traceback is cut."""
    kept = []
    entry = excinfo.tb
    while entry is not None:
        if entry.tb_lineno is not None:
            kept.append(entry)
        entry = entry.tb_next
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    if rebuilt is None:  # not one frame with a line: the exception where it surfaced
        rebuilt = types.TracebackType(None, sys._getframe(1), sys._getframe(1).f_lasti, sys._getframe(1).f_lineno)
    return pytest.ExceptionInfo.from_exc_info((excinfo.type, excinfo.value, rebuilt))


def install_quiet_reporter(config: pytest.Config, header: Callable[[], list[str]]) -> ReporterScreen | None:
    """Put a `QuietReporter` in the place of pytest's terminal reporter (as pytest-sugar does); its screen.
    None under `-p no:terminal`."""
    standard = config.pluginmanager.get_plugin("terminalreporter")
    if standard is None:
        return None
    quiet = QuietReporter(config, header)
    config.pluginmanager.unregister(standard)
    config.pluginmanager.register(quiet, "terminalreporter")
    return ReporterScreen(quiet)
