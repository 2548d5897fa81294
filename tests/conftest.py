"""Settings and fixtures for TorchCTS's own tests: Hypothesis derandomized, no database, no deadline."""

import multiprocessing.util
import os
import platform
import signal
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

from torchcts.engine.run import HARNESS_THREADS

# No clock decides an outcome: no deadline, and no `too_slow` health check (it times the draws,
# so a busy machine would fail a test that an idle one passes).
settings.register_profile("torchcts-tests", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("torchcts-tests")

# The faulty device registers only when a test asks (--device faulty, importing it, or TORCHCTS_FAULTY=1 in a
# subprocess's environment): a developer's exported TORCHCTS_FAULTY=1 would take PrivateUse1 from the user-style
# backends (tests/backends) in every subprocess and hide a path that forgets to ask.
os.environ.pop("TORCHCTS_FAULTY", None)

# Ctrl-C as in a terminal: a shell without job control starts background jobs (`make test &`, some CI runners) with
# SIGINT and SIGQUIT ignored, and an ignored disposition is inherited by every program a test starts, so the tests
# that interrupt a run would wait for it to end instead. A handler is not inherited: programs start with the default.
for _signal, _handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGQUIT, signal.SIG_DFL)):
    if signal.getsignal(_signal) == signal.SIG_IGN:
        signal.signal(_signal, _handler)

# The hash seed the `torchcts` command fixes (torchcts.hash_seed), set for the programs tests start: each would
# otherwise start once more to set it. A test of that re-execution gives its own environment.
os.environ.setdefault("PYTHONHASHSEED", "0")

# The OpInfo metadata cache (torchcts.plan.op_metadata) of the test session, never the developer's ~/.cache: one
# folder for every pytest-xdist worker and subprocess (the cache writes atomically; the first builder wins).
os.environ.setdefault("TORCHCTS_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"torchcts-test-cache-{os.getuid()}"))

# The faulty device's compiled part (torchcts.testing.native_build), built into that cache folder now, before the
# program guard below: the first test to register the device would otherwise start the compiler. Once per cache folder
# (the pytest-xdist workers wait on its lock, then load it); seconds, and nothing where no compiler is (then the
# tests that need it say so).
from torchcts.testing import native_build  # noqa: E402 -- after TORCHCTS_CACHE_DIR is set

native_build.load()

# As a run does (torchcts.plugin.options): tests fork children (isolation, the guard_alloc suite's out-of-memory
# child), and an OpenMP pool that ran in the parent deadlocks a forked child's first parallel kernel.
torch.set_num_threads(HARNESS_THREADS)

# A small valid manifest; tests derive bad ones from it (`dict(BASE, key=value)`).
BASE_MANIFEST_SOURCE = '''\
import torch

BASE = {
    "manifest_version": 1,
    "device_name": "cpu",
    "supported_dtypes": {"float32": True, "int64": True, "bool": False},
    "capabilities": {"inference": True, "device_api": True},
}
'''


@pytest.fixture
def write_manifest(tmp_path: Path):
    """Write a manifest file whose body may use BASE (a valid manifest dict); returns its path."""

    def write(body: str, name: str = "manifest.py") -> Path:
        path = tmp_path / name
        path.write_text(BASE_MANIFEST_SOURCE + textwrap.dedent(body), encoding="utf-8")
        return path

    return write


# Test tiers. A test that starts a program (the CLI or a probe in a subprocess, a spawned multiprocessing worker: each
# a new interpreter importing torch, seconds apiece) or runs long is marked `slow`; `make test-fast` runs the others
# (`-m "not slow"`), `make test` all. A fork is no program start: TorchCTS itself forks to load a manifest or isolate
# a case, in milliseconds. A test not marked slow that starts a program fails, in either tier, so the fast tier
# cannot drift into running programs.
_PROGRAM_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.spawn", "os.system", "os.exec",
                             "tests.warm_program"})  # a command forked from the warm interpreter (tests/warm_programs.py)


class ProgramInFastTest(BaseException):
    """A fast-tier test started a program (a BaseException: code under test that catches Exception does not hide it)."""


class _ProgramGuard:
    """While a fast-tier test runs: refuse and remember every program it starts (in this process, not in children)."""

    def __init__(self) -> None:
        self.nodeid: str | None = None
        self.pid = os.getpid()
        self.started: list[str] = []
        self.fixture: tuple[str, str] | None = None  # the module- or session-wide fixture being set up, if one is
        self.program_fixtures: set[tuple[str, str]] = set()  # such fixtures that started a program

    def check(self, event: str, args: tuple) -> None:
        if os.getpid() != self.pid:
            return
        if self.fixture is not None:
            self.program_fixtures.add(self.fixture)
        if self.nodeid is None:
            return
        command = args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else ()
        what = " ".join(a.decode(errors="replace") if isinstance(a, bytes) else str(a) for a in command) or event
        self.started.append(f"{event}: {what[:200]}")
        raise ProgramInFastTest(self.message())

    def message(self) -> str:
        return (f"{self.nodeid} starts a program ({self.started[0]}) but is not marked slow: mark it "
                "@pytest.mark.slow (the fast tier, `make test-fast`, starts no programs)")


_GUARD = _ProgramGuard()
_TESTS_FOLDER = Path(__file__).resolve().parent
platform.uname().processor  # runs `uname -p` once, here, and caches it: no test is blamed for the first call
sys.addaudithook(lambda event, args: _GUARD.check(event, args) if event in _PROGRAM_EVENTS else None)
_spawnv_passfds = multiprocessing.util.spawnv_passfds  # multiprocessing's spawn and forkserver: no audit event


def _guarded_spawnv_passfds(path, args, passfds):
    _GUARD.check("multiprocessing.spawn", (path, args))
    return _spawnv_passfds(path, args, passfds)


multiprocessing.util.spawnv_passfds = _guarded_spawnv_passfds


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    # only this folder's tests: a `torchcts run` started in the checkout loads this conftest too, and its items (the
    # suites, which may spawn isolated workers) are no tests of ours
    ours = Path(str(item.path)).resolve().is_relative_to(_TESTS_FOLDER)
    _GUARD.nodeid = None if item.get_closest_marker("slow") or not ours else item.nodeid
    _GUARD.pid = os.getpid()
    try:
        return (yield)
    finally:
        _GUARD.nodeid = None


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Remember the wider-scoped fixtures that start a program, whichever test sets them up."""
    if fixturedef.scope == "function":
        return (yield)
    outer, _GUARD.fixture = _GUARD.fixture, (fixturedef.baseid, fixturedef.argname)
    try:
        return (yield)
    finally:
        _GUARD.fixture = outer


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """A fast test that uses a fixture which started a program fails even when a slow test set it up first: the
    order of the tests must not decide whether the fast tier starts programs."""
    result = yield
    info = getattr(item, "_fixtureinfo", None)
    if _GUARD.nodeid == item.nodeid and info is not None:
        used = {(d.baseid, d.argname) for defs in info.name2fixturedefs.values() for d in defs}
        starting = sorted(name for _, name in used & _GUARD.program_fixtures)
        if starting:
            raise ProgramInFastTest(f"{item.nodeid} uses {', '.join(starting)}, a fixture that starts a program, but "
                                    "is not marked slow: mark it @pytest.mark.slow (the fast tier, `make test-fast`, "
                                    "starts no programs)")
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A program start that the code under test caught still fails the test."""
    report = yield
    if _GUARD.started and _GUARD.nodeid == item.nodeid:
        if report.passed:
            report.outcome = "failed"
            report.longrepr = _GUARD.message()
        else:
            report.sections.append(("program started in a fast test", _GUARD.message()))
        _GUARD.started = []
    return report
