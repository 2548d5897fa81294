"""One conformance run over pytest-xdist workers (`torchcts run -n auto`, `pytest -n 4`).

The controller process starts the run as a single process would (options checked, plan built, run
folder made, accounting records written, probes run) but executes no item. It hands every worker the
run's id and seed (`pytest_configure_node`); each worker builds the same plan, joins the run folder and
appends its items' records and start marks to the run's files as they finish. Each worker's report of
an item carries the item's record (`torchcts_record`, a small attribute pytest-xdist serialises), so the
controller's console shows findings as they come; a worker that dies in an item leaves the controller a
`crashed` record for it. The controller closes `run.json` once the workers are down, with the counts of
every record on disk. A signal that stops the controller (SIGTERM to it alone, as `docker stop` sends) is
passed on to the workers, and a worker still running WORKER_STOP_S later (stuck in its item) is killed:
pytest-xdist would wait 10 s for each.
Derandomized seeds come from item ids alone, so which worker runs an item changes none of its cases.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import os

import pytest

from torchcts import interrupts
from torchcts.core.record import CONSOLE_FIELDS
from torchcts.disk import WriteError

if TYPE_CHECKING:
    from torchcts.plugin.session import RunSession

SINGLE, CONTROLLER, WORKER = "single", "controller", "worker"
WORKER_STOP_S = 2.0  # how long an interrupted run's workers may take to end before they are killed
RUN_ID_KEY, SEED_KEY = "torchcts_run_id", "torchcts_run_seed"
RECORD_ATTRIBUTE = "torchcts_record"  # on a worker's TestReport: the item's record, shown by the controller
WRITE_ERROR_KEY = "torchcts_write_error"  # a worker's workeroutput: [file, reason] of a file it could not write
RECORD_FIELDS = CONSOLE_FIELDS  # what the console shows: the record's console view (`core.record`)


def role(config: pytest.Config) -> str:
    """SINGLE (no pytest-xdist, or `-n 0`, or --collect-only), CONTROLLER or WORKER."""
    if hasattr(config, "workerinput"):
        return WORKER
    distributed = config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))
    return CONTROLLER if distributed and not config.getoption("collectonly", False) else SINGLE


def joined_run(config: pytest.Config) -> tuple[str, int | None]:
    """A worker's (run id, run seed) as its controller handed them over."""
    given = config.workerinput  # type: ignore[attr-defined]
    try:
        return str(given[RUN_ID_KEY]), given[SEED_KEY]
    except KeyError:
        raise RuntimeError("this pytest-xdist worker got no TorchCTS run from its controller: the controller "
                           "runs without the TorchCTS plugin (-p no:torchcts?)") from None


def is_first_worker(config: pytest.Config) -> bool:
    """Whether this worker is the one that records what pytest deselected (every worker deselects the same)."""
    return getattr(config, "workerinput", {}).get("workerid") == "gw0"


def compact_record(record: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record the controller's console needs; JSON types only (pytest-xdist serialises them)."""
    compact = {name: record.get(name) for name in RECORD_FIELDS if name in record}
    compact["outcome"] = str(record["outcome"])
    counterexample = record.get("counterexample")
    if isinstance(counterexample, dict):
        compact["counterexample"] = {key: counterexample.get(key) for key in ("new", "replay", "path")}
    return {key: value if isinstance(value, (str, int, float, bool, dict, type(None))) else str(value)
            for key, value in compact.items()}


class Controller:
    """pytest-xdist's controller side of a run: hands the run to each worker, probes before the workers
    start, shows the workers' records, and records an item whose worker died as `crashed`."""

    def __init__(self, session: "RunSession"):
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_ID_KEY] = self.session.writer.run_id
        node.workerinput[SEED_KEY] = self.session.run_seed

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Any) -> None:
        self.session.probe_once()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, RECORD_ATTRIBUTE, None)
        if report.when == "call" and isinstance(record, dict):
            self.session.remote_record(record)

    @pytest.hookimpl(wrapper=True)  # around pytest-xdist's own: once its workers are down, none writes any more
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Any:
        from torchcts.plugin import finish_run

        stop_workers_on_interruption(session.config)
        try:
            return (yield)
        finally:  # also when a second Ctrl-C stops the workers' shutdown: run.json must not stay `running`
            finish_run(session, self.session, exitstatus)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        self.session.worker_died(crashitem, str(report.longrepr))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker that stopped on a file it could not write (`stop_worker`): the run ends with its line, exit 2."""
        unwritten = (getattr(node, "workeroutput", None) or {}).get(WRITE_ERROR_KEY)
        if unwritten and self.session.write_error is None:
            self.session.write_error = WriteError(*unwritten)


def stop_worker(config: pytest.Config, session: pytest.Session, error: Exception) -> None:
    """In a worker, a file that cannot be written (`torchcts.disk.WriteError`): the item fails with its line, the
    worker stops after it (pytest-xdist then stops the others), and the controller learns the file and reason."""
    config.workeroutput[WRITE_ERROR_KEY] = [str(error.path), error.reason]  # type: ignore[attr-defined]
    session.shouldstop = str(error)
    pytest.fail(str(error), pytrace=False)


def stop_workers_on_interruption(config: pytest.Config) -> None:
    """In an interrupted controller, before pytest-xdist takes its workers down: pass the signal on to each worker
    (one sent to the controller alone reaches no worker; a worker that had it already is hurried: see
    `interrupts`) and kill any still running after WORKER_STOP_S instead of pytest-xdist's 10 s."""
    signum = interrupts.requested()
    dsession = config.pluginmanager.get_plugin("dsession")
    manager = getattr(dsession, "nodemanager", None)
    if signum is None or manager is None:
        return
    manager.EXIT_TIMEOUT = WORKER_STOP_S
    for gateway in list(getattr(manager, "group", ())):
        process = getattr(getattr(gateway, "_io", None), "popen", None)  # execnet's popen gateway: the worker
        if process is not None and process.poll() is None:
            try:
                os.kill(process.pid, signum)
            except OSError:
                pass


class Worker:
    """A pytest-xdist worker's side: its report of an item carries the item's record to the controller."""

    def __init__(self, session: "RunSession"):
        self.session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Any:
        report = yield
        record = self.session.last_record
        if call.when == "call" and record is not None:
            setattr(report, RECORD_ATTRIBUTE, compact_record(record))
        return report
