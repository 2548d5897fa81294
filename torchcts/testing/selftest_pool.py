"""The selftest's runs: `torchcts run` processes against the faulty device, up to N at once.

Each run is a whole `torchcts run` (the same plan, engine, isolation and records as a user's run) in
its own results folder, with its console written to `run.log` there. The pool starts them in their
own sessions, so a terminal's Ctrl-C reaches the selftest alone, which passes the signal on to every
run under way (`stop`): each writes what it ran and marks itself partial, as `torchcts run` does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from torchcts.plugin.launch import latest_run, run_folders
from torchcts.results.files import read_summary
from torchcts.results.writer import read_records
from torchcts.testing.faulty.bugs import ENV_VAR
from torchcts.testing.faulty.would_fire import ENV_VAR as WOULD_FIRE_ENV

TRACE_ENV = "TORCHCTS_TRACE_DEVICE_OPS"  # "1": records name the aten overloads the faulty device ran
PROBES_ENV = "TORCHCTS_PROBES"  # "off": no capability probes before the first item (they change no outcome)
STOP_WAIT_S = 50.0  # a run told to stop and still going this long after is killed (its own watchdog ends it first;
# the selftest's own gives it interrupts.FINISH_GRACE_S, 60 s, to write its report)
POLL_S = 0.2


def usable_cores() -> int:
    """The cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@attrs.frozen
class RunRequest:
    """One `torchcts run` of a phase: clean (`bug` empty) or with seeded bugs on ("a" or "a,b"), over these properties and
    `--ops` regexes (empty: the phase's own), one shard ("K/N") of it or the whole."""

    phase: str
    folder: Path
    level: int
    properties: tuple[str, ...]
    dtypes: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    bug: str = ""
    shard: str | None = None
    detail: str = ""  # said in the progress line
    label: str = ""  # several bugs on ("a+b"): the name of the run

    @property
    def name(self) -> str:
        """"opinfo/clean", "opinfo/clean 2/4", "suites/tile_sum", "suites/a+b": how progress lines and the report
        name it."""
        return f"{self.phase}/{self.label or self.bug or 'clean'}" + (f" {self.shard}" if self.shard else "")

    def command(self, manifest: Path, max_examples: int) -> list[str]:
        args = [sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--manifest", str(manifest),
                "--level", str(self.level), "--derandomize", "--max-examples", str(max_examples),
                "--results-dir", str(self.folder), "--corpus-dir", str(self.folder.parent / "corpus"), "--no-report",
                "--no-shrink"]
        for dtype in self.dtypes:
            args += ["--dtype", dtype]
        for name in self.properties:
            args += ["--property", name]
        for pattern in self.ops:
            args += ["--ops", pattern]
        if self.shard:
            args += ["--shard", self.shard]
        return args

    def environment(self) -> dict[str, str]:
        """The clean run notes where every bug would fire (`would_fire`); a bug run needs no probes (they change no
        outcome, and they cost each run seconds)."""
        env = dict(os.environ, **{ENV_VAR: self.bug, TRACE_ENV: "1"})
        env.pop(WOULD_FIRE_ENV, None)
        if self.bug:
            env[PROBES_ENV] = "off"
        else:
            env[WOULD_FIRE_ENV] = "1"
        return env


@attrs.frozen
class RunResult:
    """What a finished (or stopped) run left: its records and whether it completed."""

    request: RunRequest
    records: list[dict[str, Any]] = attrs.field(eq=False, repr=False)
    complete: bool
    seconds: float


@attrs.define
class _Running:
    request: RunRequest
    process: subprocess.Popen
    before: set[Path]
    started: float


class RunPool:
    """Up to `workers` runs at once; `start` one, `wait` for those that end, `stop` them all on a signal."""

    def __init__(self, workers: int, manifest: Path, max_examples: int):
        self.workers, self.manifest, self.max_examples = max(1, workers), manifest, max_examples
        self.running: list[_Running] = []

    def has_room(self) -> bool:
        return len(self.running) < self.workers

    def start(self, request: RunRequest) -> None:
        request.folder.mkdir(parents=True, exist_ok=True)
        before = run_folders(request.folder)
        with open(request.folder / "run.log", "ab") as log:  # the child keeps its own copy of the descriptor
            process = subprocess.Popen(request.command(self.manifest, self.max_examples), env=request.environment(),
                                       stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.running.append(_Running(request, process, before, time.monotonic()))

    def wait(self) -> list[RunResult]:
        """The runs that ended (at least one, when any runs)."""
        while self.running:
            ended = [run for run in self.running if run.process.poll() is not None]
            if ended:
                self.running = [run for run in self.running if run not in ended]
                return [_result(run) for run in ended]
            time.sleep(POLL_S)
        return []

    def stop(self, signum: int) -> list[RunResult]:
        """Pass `signum` on to every run under way and collect what each left (killed past STOP_WAIT_S)."""
        for run in self.running:
            _signal(run.process, signum)
        deadline = time.monotonic() + STOP_WAIT_S
        for run in self.running:
            try:
                run.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(run.process, signal.SIGKILL)
                run.process.wait()
        stopped, self.running = self.running, []
        return [_result(run) for run in stopped]


def _signal(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)  # its session: the run and the processes it started
    except (ProcessLookupError, PermissionError):
        pass


def _result(run: _Running) -> RunResult:
    """The records of a run that ended; none (incomplete) when it wrote no run folder."""
    folder = latest_run(run.request.folder, run.before)
    seconds = time.monotonic() - run.started
    if folder is None:
        return RunResult(run.request, [], False, seconds)
    try:
        complete = read_summary(folder)["status"] == "complete"
    except (OSError, ValueError, KeyError):
        complete = False
    return RunResult(run.request, read_records(folder), complete, seconds)
