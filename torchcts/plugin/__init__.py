"""The TorchCTS pytest plugin (entry point `pytest11: torchcts`): hooks only.

Installed with TorchCTS, so it loads in every pytest session of the environment; it stays inert
(and imports nothing heavy) unless a TorchCTS option is given. `--manifest` alone loads and
validates a manifest. `--device` (or `--validation`) turns a session into a conformance run:
the plan is built once, every item not run is written as an accounting record, the registered
property functions (`torchcts.properties.suites`, collected through the registry's package whatever
their file names, and custom folders' `test_*.py` files) are parametrized over their items, and
each item is run by the engine (`torchcts.engine.run`) in place of the function: its record is
appended and shown to pytest as a pass, a skip with the reason, or a failure with the error;
`run.json` closes the run as complete or partial.
"""

from __future__ import annotations

import argparse
import contextlib
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from torchcts import interrupts  # standard library only, like torchcts.disk: the plugin stays light
from torchcts.ascii_numbers import ascii_float, ascii_int  # no torch: the plugin stays light
from torchcts.disk import WriteError
from torchcts.plugin import suite_modules  # no torch either: finds the suites' folder

if TYPE_CHECKING:
    from torchcts.manifest import Manifest
    from torchcts.plugin.session import RunSession

MANIFEST_KEY = pytest.StashKey["Manifest"]()
SESSION_KEY = pytest.StashKey["RunSession"]()
SIGNALS_KEY = pytest.StashKey[contextlib.ExitStack]()
REMOVED_CORPUS = ("--corpus is gone: --corpus-dir DIR is where new counterexamples go; --replay PATH replays "
                  "corpus cases (torchcts replay PATH from the command line)")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchcts", "TorchCTS backend conformance")
    group.addoption("--manifest", dest="torchcts_manifest", default=None, metavar="PATH",
                    help="TorchCTS: backend manifest (default ./manifest.py when --device is given).")
    group.addoption("--device", dest="torchcts_device", default=None, metavar="D",
                    help="TorchCTS: device under test (cuda, mps, privateuseone, faulty, meta, cpu, ...).")
    group.addoption("--compile", dest="torchcts_compile", default=None, metavar="BACKEND",
                    help="TorchCTS: run every op through torch.compile(backend=BACKEND) on the device and compare "
                         "with eager CPU: any backend torch._dynamo knows once the manifest's backend_import ran "
                         "(inductor, aot_eager, eager, openvino, ...) or module.path:callable.")
    group.addoption("--shape-mode", dest="torchcts_shape_mode", default=None,
                    choices=("static", "dynamic", "automatic"),
                    help="TorchCTS: with a compile target: static (dynamic=False), dynamic (dynamic=True) or "
                         "automatic (torch's default); default: the manifest's compile.dynamic, else automatic. "
                         "Replaying: each case's own mode unless given.")
    group.addoption("--blame-cases", dest="torchcts_blame_cases", type=ascii_int, default=None, metavar="N",
                    help="TorchCTS: with a compile target, blame at most N failing cases per run on a leg (their "
                         "stored case replayed under eager, aot_eager and the backend; docs/compile.md); 0: none. "
                         "Default 100.")
    group.addoption("--validation", dest="torchcts_validation", action="store_true",
                    help="TorchCTS: run against CPU itself to validate the harness (any failure is a harness bug).")
    group.addoption("--level", dest="torchcts_level", type=ascii_int, default=None, metavar="N",
                    help="TorchCTS: the run's depth, replacing the manifest's semantic_level (items above it are "
                         "recorded level_filtered).")
    group.addoption("--dtype", dest="torchcts_dtypes", action="append", default=None, metavar="X",
                    help="TorchCTS: claim these dtypes for every op in this run (the manifest's others are "
                         "deselected); float32, torch.bfloat16, ...; repeatable.")
    group.addoption("--ops", dest="torchcts_ops", action="append", default=None, metavar="REGEX",
                    help="TorchCTS: only OpInfos whose id matches; repeatable.")
    group.addoption("--shard", dest="torchcts_shard", default=None, metavar="K/N",
                    help="TorchCTS: run only shard K of N (1 <= K <= N <= 1000): the items whose id hashes to K; the "
                         "others are recorded deselected. `torchcts report --merge` joins the shards' run folders.")
    group.addoption("--property", dest="torchcts_properties", action="append", default=None, metavar="NAME",
                    help="TorchCTS: only these properties (registered property names); repeatable.")
    group.addoption("--capability", dest="torchcts_capabilities", action="append", default=None, metavar="NAME",
                    help="TorchCTS: only the properties that test this capability (their own, or one they also "
                         "prove: forward proves ieee754); repeatable; with --property, the properties in both.")
    group.addoption("--last-failed-from", dest="torchcts_last_failed_from", default=None, metavar="RUN_FOLDER",
                    help="TorchCTS: rerun only the items that failed, errored, crashed or timed out in this earlier "
                         "run folder; the others are recorded deselected (`torchcts run --last-failed` picks the "
                         "folder).")
    group.addoption("--derandomize", dest="torchcts_derandomize", action="store_true", default=None,
                    help="TorchCTS: seeds from item ids alone: identical cases on every run (release evidence).")
    group.addoption("--seed", dest="torchcts_seed", type=ascii_int, default=None, metavar="S",
                    help="TorchCTS: the run's random seed (printed and recorded when not given).")
    group.addoption("--max-examples", dest="torchcts_max_examples", type=ascii_int, default=None, metavar="M",
                    help="TorchCTS: Hypothesis examples per item (default: the manifest's).")
    group.addoption("--no-shrink", dest="torchcts_no_shrink", action="store_true",
                    help="TorchCTS: report the first failing case of an item without shrinking it (faster triage).")
    group.addoption("--trace-dispatch", dest="torchcts_trace_dispatch", action="store_true",
                    help="TorchCTS: record in each executed item's record the aten overloads its device side "
                         "dispatched (`dispatched`; costs a Python call per op; not with --compile).")
    group.addoption("--replay", dest="torchcts_replay", action="append", default=None, metavar="PATH",
                    help="TorchCTS: replay the corpus cases in PATH (a case file or a folder) instead of drawing "
                         "new cases; repeatable.")
    group.addoption("--corpus", dest="torchcts_removed_corpus", default=None, help=argparse.SUPPRESS)  # REMOVED_CORPUS
    from torchcts.core.case_limits import byte_count  # attrs only: the plugin stays light

    group.addoption("--max-case-bytes", dest="torchcts_max_case_bytes", type=byte_count, default=None, metavar="N",
                    help="TorchCTS: with --replay, a case may decode at most N bytes of storages and build at most "
                         "N bytes of tensors (default 64M; 1G, 512M, or bytes); a case over it is an error "
                         "record naming the limit.")
    group.addoption("--corpus-dir", dest="torchcts_corpus_dir", default=None, metavar="DIR",
                    help="TorchCTS: where the shrunk counterexample of every failing item is written (default ./corpus, "
                         "or RESULTS_DIR/corpus where ./corpus is TorchCTS's own curated corpus).")
    group.addoption("--subprocess-per-test", dest="torchcts_subprocess_per_test", action="store_true",
                    help="TorchCTS: run every item in its own isolated process (forked, or a spawned worker: "
                         "--isolation-start; a crash or hang costs one item).")
    group.addoption("--isolation-start", dest="torchcts_isolation_start", default="auto",
                    choices=("auto", "fork", "spawn"),
                    help="TorchCTS: how isolated items start: auto (default) forks where the device survives it and "
                         "uses spawned worker interpreters where it does not (CUDA, XPU, MPS, HPU); fork or spawn "
                         "forces one.")
    group.addoption("--known-segfault-policy", dest="torchcts_known_segfault_policy", default="isolate",
                    choices=("isolate", "off"),
                    help="TorchCTS: isolate items a known-crash rule matches (default), or ignore the backend "
                         "rules (CPU-oracle rules stay in force).")
    group.addoption("--known-crashes", dest="torchcts_known_crashes", default=None, metavar="PATH",
                    help="TorchCTS: project-local known-crash ledger (default: known_crashes.json next to the manifest).")
    group.addoption("--known-segfault-audit", dest="torchcts_known_segfault_audit", action="store_true",
                    help="TorchCTS: validate every known-crash rule and show the items it matches; run nothing.")
    group.addoption("--adaptive-isolation", dest="torchcts_adaptive_isolation", default="auto", choices=("auto", "off"),
                    help="TorchCTS: isolate items that crashed or hung in earlier runs on the same hardware, device "
                         "and torch minor version (default auto).")
    group.addoption("--item-timeout", dest="torchcts_item_timeout", type=ascii_float, default=None, metavar="S",
                    help="TorchCTS: seconds an isolated item may run before it is killed as timed_out (default 900).")
    group.addoption("--results-dir", dest="torchcts_results_dir", default="results", metavar="DIR",
                    help="TorchCTS: where run folders go (default ./results).")


@pytest.hookimpl(tryfirst=True)  # before Hypothesis's plugin loads --hypothesis-profile: the backend module registers it
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("torchcts_removed_corpus") is not None:
        raise pytest.UsageError(REMOVED_CORPUS)
    device = config.getoption("torchcts_device")
    validation = config.getoption("torchcts_validation")
    manifest_path = config.getoption("torchcts_manifest")
    if device is None and not validation:
        if manifest_path is not None:
            _load_manifest_only(config, manifest_path)
        return
    # session: torch and the engine, which only a run needs (the plugin loads in every pytest session)
    from torchcts.plugin.session import AuditDone, RunSession, SessionError

    # SIGTERM and SIGHUP stop a run like Ctrl-C, also under plain `pytest` (pytest_unconfigure restores them)
    config.stash[SIGNALS_KEY] = stack = contextlib.ExitStack()
    stack.enter_context(interrupts.handling())
    # Python drops a signal's exception raised in a gc callback or finalizer; the run stops anyway (interrupts.check),
    # so pytest's "Exception ignored" warning about it says nothing (the filter lasts as long as the session)
    warnings.filterwarnings("ignore", r"(?s)Exception ignored.*torchcts\.interrupts\.Interrupted",
                            pytest.PytestUnraisableExceptionWarning)
    try:
        session = RunSession.start(config)
    except SessionError as exc:
        raise pytest.UsageError(str(exc)) from None
    except WriteError as exc:  # a full disk before the first item: one line (`torchcts run` exits 2)
        raise pytest.UsageError(str(exc)) from None
    except AuditDone as audit:
        print("\n".join(audit.lines))
        pytest.exit("known-crash audit done" if audit.ok else "known-crash audit: some rules match no item",
                    returncode=0 if audit.ok else pytest.ExitCode.USAGE_ERROR)  # `torchcts run` exits 2
    config.stash[SESSION_KEY] = session
    config.stash[MANIFEST_KEY] = session.manifest
    if session.role != "worker":  # a run stuck past a signal still leaves run.json partial (its controller's, with workers)
        stack.enter_context(interrupts.when_stuck(session.finish_when_stuck))
    config.pluginmanager.register(ItemReports(session), "torchcts-item-reports")
    if session.role != "single":  # a pytest-xdist controller or worker (`plugin.distributed`)
        from torchcts.plugin import distributed  # core.record (attrs): only a distributed run needs it

        side = distributed.Controller(session) if session.role == "controller" else distributed.Worker(session)
        config.pluginmanager.register(side, "torchcts-distributed")
    _collect_custom_suites(config, session)


def _collect_custom_suites(config: pytest.Config, session: "RunSession") -> None:
    """The manifest's `custom_test_dirs` are collected after the given arguments (`torchcts.properties`):
    their registered property functions are parametrized like the installed ones."""
    folders = session.manifest.custom_test_dirs if session.manifest is not None else ()
    for folder in folders:
        if Path(folder).is_dir() and str(folder) not in config.args:
            config.args.append(str(folder))


def _load_manifest_only(config: pytest.Config, path: str) -> None:
    from torchcts.manifest import ManifestError, load_manifest  # torch: only --manifest needs it

    try:
        manifest, warnings = load_manifest(path)
    except ManifestError as exc:
        raise pytest.UsageError(f"TorchCTS manifest is invalid:\n{exc.render()}") from None
    config.stash[MANIFEST_KEY] = manifest
    for problem in warnings:
        config.issue_config_time_warning(pytest.PytestConfigWarning(f"{path}: {problem.render()}"), stacklevel=2)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        return session.header()
    manifest = config.stash.get(MANIFEST_KEY, None)
    if manifest is None:
        return None
    return [f"torchcts: manifest {manifest.source} (fingerprint {manifest.fingerprint()[:16]}), "
            f"device {manifest.device_name}, semantic level {manifest.semantic_level}"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The installed suites (`torchcts.properties.suites.<area>`) are collected through the registry's package,
    whatever their file names; a suite file named on the command line goes through `pytest_pycollect_makemodule`."""
    if parent.session.isinitpath(file_path):
        return None
    return suite_modules.collect(file_path, parent)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """A suite file given as an argument is imported under its registered name too (one module, one registration)."""
    return suite_modules.collect(module_path, parent)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A registered property's check is parametrized over its items (the plan's, or the replayed cases')."""
    name = _property_name(metafunc)
    if name is None:
        return
    session = metafunc.config.stash.get(SESSION_KEY, None)
    if session is None:
        raise pytest.UsageError("torchcts.properties run against a device: pass --device D (or --validation)")
    items = session.items_for(name)
    metafunc.parametrize("cts", items, ids=[item.id for item in items])


def _property_name(metafunc: pytest.Metafunc) -> str | None:
    """The property a test function checks (`@register_property` marks it); None for other test functions.

    Read from the function's mark (`torchcts.plan.registry.ATTRIBUTE`), so sessions without TorchCTS
    options import nothing."""
    name = getattr(metafunc.function, "__torchcts_property__", None)
    return name if isinstance(name, str) else None


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        session = item.config.stash.get(SESSION_KEY, None)
        plan_item = _plan_item(item)
        if session is not None and plan_item is not None and _records_deselection(item.config):
            session.record_deselected(plan_item, "deselected by pytest (-k, -m or --deselect)")


def _records_deselection(config: pytest.Config) -> bool:
    """Every pytest-xdist worker deselects the same items; one of them records it."""
    from torchcts.plugin import distributed  # core.record (attrs): not for pytest sessions without TorchCTS options

    return not hasattr(config, "workerinput") or distributed.is_first_worker(config)


def _plan_item(item: pytest.Item) -> Any:
    """The plan item a test item runs, or None (other tests; an empty parametrization)."""
    callspec = getattr(item, "callspec", None)
    value = callspec.params.get("cts") if callspec is not None else None
    return value if hasattr(value, "as_json") else None  # a PlanItem or a ReplayItem


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a property item with the engine instead of calling the function; present its record."""
    session = pyfuncitem.config.stash.get(SESSION_KEY, None)
    plan_item = _plan_item(pyfuncitem)
    if session is None or plan_item is None:
        return None
    from torchcts.plugin.session import present  # torch: loaded by now in a run; the plugin itself stays light

    interrupts.check()  # a signal whose exception was swallowed (a gc callback, a finalizer) stops the run here
    record = session.run_or_stop(plan_item, pyfuncitem.session)
    if isinstance(record.get("hypothesis_statistics"), dict):  # Hypothesis's plugin prints them in its summary
        pyfuncitem.hypothesis_statistics = f"{pyfuncitem.nodeid}:\n\n{record['hypothesis_statistics']['text']}"
    present(record, session.writer.folder)
    return True


class ItemReports:
    """Hands pytest's report of each item to the run session, whose console then shows its record (outside
    pytest's capture of the item's output). A registered object: the hook gets no config to find the session by."""

    def __init__(self, session: "RunSession"):
        self.session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.session.reported()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    session = config.stash.get(SESSION_KEY, None)
    if session is not None:
        for line in session.summary_lines():
            terminalreporter.write_line(line)


@pytest.hookimpl(tryfirst=True)  # before fixture teardown: a second Ctrl-C there must not leave run.json `running`
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = session.config.stash.get(SESSION_KEY, None)
    if run is not None and run.role != "controller":  # a controller closes once its workers are down (`distributed`)
        finish_run(session, run, exitstatus)


def finish_run(session: pytest.Session, run: "RunSession", exitstatus: int) -> None:
    """Close the run (complete or partial) and judge it: a run that tested nothing is not green."""
    stopped = exitstatus == pytest.ExitCode.INTERRUPTED or bool(session.shouldstop)  # pytest-xdist: also a write error
    run.finish(interrupted=stopped and run.write_error is None)
    if run.write_error is not None:  # a file could not be written: the summary's last line says which; exit 2
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    if run.nothing_ran and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED


def pytest_unconfigure(config: pytest.Config) -> None:
    stack = config.stash.get(SIGNALS_KEY, None)
    if stack is not None:
        stack.close()
