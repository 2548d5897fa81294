"""The fuzz worker pool and the hunt loop, with stand-in workers (tests/fuzz/workers_for_tests.py):
a worker that dies is replaced and its visit reported, a hung visit times out, a crash replay is
bounded by its own limit, a visit past the budget is dropped, and a hunt with a visit budget repeats."""

from __future__ import annotations

import importlib
import json
import signal
import time
from pathlib import Path

import pytest

from torchcts.fuzz import hunt as fuzz_hunt
from torchcts.fuzz.options import CRASH_REPLAY_LIMIT_S, FuzzOptions
from torchcts.fuzz.pool import OVER_BUDGET, REPLAY_OVERRAN, WorkerPool
from torchcts.fuzz.worker import Task
from torchcts.core.outcomes import Outcome
from torchcts.plan.items import PlanItem

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

SAFETY_S = 300.0  # a hang detector for the test itself, never reached when the pool works


def item(op: str) -> PlanItem:
    return PlanItem("forward", op, "function", "float32", 1)


class Stats:  # what the pool needs of the scheduler's ItemStats
    def __init__(self, op: str):
        self.item = item(op)


@pytest.fixture
def stand_ins(monkeypatch):
    """The stand-in workers' module, importable by name in spawned workers."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    return importlib.import_module("workers_for_tests")


def options(tmp_path: Path, **kwargs) -> FuzzOptions:
    return FuzzOptions(**{"device": "cpu", "manifest": tmp_path / "manifest.py", "budget_s": None, "max_visits": 10,
                          "corpus_dir": tmp_path / "corpus", "results_dir": tmp_path / "results", **kwargs})


def wait_for(pool: WorkerPool, started: float, condition) -> list:
    """Receive and sweep until `condition(answers, ended)` holds; (answers, ended)."""
    answers, ended = [], []
    deadline = time.monotonic() + SAFETY_S
    while not condition(answers, ended):
        assert time.monotonic() < deadline, "the pool never got there"
        done = pool.receive(0.2)
        if done is not None:
            answers.append(done)
        ended += pool.sweep(started)
    return answers, ended


def test_a_worker_that_dies_is_replaced_and_the_new_one_answers(tmp_path, stand_ins):
    pool = WorkerPool(options(tmp_path), stand_ins.answering)
    try:
        pool.start()
        (slot,) = pool.slots
        first_pid = slot.process.pid
        pool.assign(slot, Stats("crash"), Task(item("crash"), seed=5, examples=3), visit=1, now=time.monotonic())
        assert slot.busy and pool.busy_items() == {"forward::crash::function::float32"}
        _, ended = wait_for(pool, time.monotonic(), lambda answers, ended: ended)
        assert [(e.why, e.visit, e.exitcode, e.task.seed) for e in ended] == [(Outcome.CRASHED, 1, -signal.SIGABRT, 5)]
        (slot,) = pool.slots
        assert slot.process.pid != first_pid and slot.process.is_alive() and not slot.busy
        pool.assign(slot, Stats("abs"), Task(item("abs"), seed=6, examples=4), visit=2, now=time.monotonic())
        answers, _ = wait_for(pool, time.monotonic(), lambda answers, ended: answers)
        assert answers[0].answer == {"item": "forward::abs::function::float32", "status": "passed", "examples": 4,
                                     "max_ulp": 0}
        assert answers[0].visit == 2 and pool.all_idle()
    finally:
        pool.stop()
    assert not any(slot.process.is_alive() for slot in pool.slots)


def test_a_task_is_timed_from_when_its_worker_is_ready(tmp_path, stand_ins):
    pool = WorkerPool(options(tmp_path), stand_ins.answering)
    try:
        pool.start()
        (slot,) = pool.slots
        if not slot.ready:  # a spawned worker imports for a while before it is ready: that time is not the task's
            pool.assign(slot, Stats("abs"), Task(item("abs"), seed=1, examples=1), visit=1, now=time.monotonic())
            assert slot.started == float("inf")
        wait_for(pool, time.monotonic(), lambda answers, ended: slot.ready and not slot.busy)
        assert slot.started != float("inf")
        pool.assign(slot, Stats("neg"), Task(item("neg"), seed=2, examples=1), visit=2, now=123.0)
        assert slot.started == 123.0
    finally:
        pool.stop()


def test_a_hung_visit_times_out_and_its_worker_is_replaced(tmp_path, stand_ins):
    pool = WorkerPool(options(tmp_path, task_timeout_s=1.0), stand_ins.answering)
    try:
        pool.start()
        (slot,) = pool.slots
        hung_pid = slot.process.pid
        pool.assign(slot, Stats("hang"), Task(item("hang"), seed=1, examples=1), visit=1, now=time.monotonic())
        _, ended = wait_for(pool, time.monotonic(), lambda answers, ended: ended)
        assert [e.why for e in ended] == [Outcome.TIMED_OUT] and pool.slots[0].process.pid != hung_pid
    finally:
        pool.stop()


def test_a_crash_replay_has_its_own_limit_and_the_budget_drops_any_visit(tmp_path, stand_ins):
    pool = WorkerPool(options(tmp_path, task_timeout_s=1.0, budget_s=60.0), stand_ins.answering)
    try:
        pool.start()
        (slot,) = pool.slots
        wait_for(pool, time.monotonic(), lambda answers, ended: slot.ready)
        replay = Task(item("hang"), seed=1, examples=1).as_crash_hunt()
        pool.assign(slot, Stats("hang"), replay, visit=1, now=time.monotonic() - 100.0)
        assert pool.sweep(time.monotonic()) == []  # past the task timeout: a crash replay is bounded case by case
        slot.started = time.monotonic() - CRASH_REPLAY_LIMIT_S - 1
        assert [e.why for e in pool.sweep(time.monotonic())] == [REPLAY_OVERRAN] and pool.slots[0].process.is_alive()
        (slot,) = pool.slots
        pool.assign(slot, Stats("hang"), Task(item("hang"), seed=2, examples=1), visit=2, now=time.monotonic())
        assert pool.sweep(time.monotonic() - 70.0) == []  # past the budget, within its grace
        ended = pool.sweep(time.monotonic() - 80.0)
        assert [e.why for e in ended] == [OVER_BUDGET] and not pool.slots[0].process.is_alive()  # no new worker
    finally:
        pool.stop()


def test_a_worker_that_dies_before_it_is_ready_loses_its_visit(tmp_path, stand_ins):
    pool = WorkerPool(options(tmp_path), stand_ins.dying_at_start)
    try:
        pool.start()
        pool.assign(pool.slots[0], Stats("abs"), Task(item("abs"), seed=1, examples=1), visit=1, now=time.monotonic())
        _, ended = wait_for(pool, time.monotonic(), lambda answers, ended: ended)
        assert [(e.why, e.exitcode) for e in ended] == [(Outcome.CRASHED, 3)]
    finally:
        pool.stop()


def hunt_once(tmp_path: Path, name: str, worker) -> dict:
    items = [item(op) for op in ("abs", "crash", "neg", "exp")]
    lines: list[str] = []
    summary = fuzz_hunt.hunt(options(tmp_path / name, max_visits=7, seed=4, examples_per_task=3), items,
                             lines.append, worker=worker)
    summary["lines"] = lines
    return summary


def test_a_hunt_replays_a_crash_goes_on_and_repeats_for_its_seed(tmp_path, stand_ins):
    summary = hunt_once(tmp_path, "first", stand_ins.answering)
    items = {entry["item"]: entry for entry in summary["items"]}
    crashed = items["forward::crash::function::float32"]
    assert summary["visits"] == 7 and sum(entry["tasks"] for entry in summary["items"]) == 7 + 1  # + the crash replay
    assert crashed["outcome"] == "crashed" and crashed["tasks"] == 2 and len(crashed["new_cases"]) == 1
    assert crashed["first_failure_visit"] in range(1, 5)  # every item is visited once first
    assert all(entry["outcome"] == "hunted" for key, entry in items.items() if key != crashed["item"])
    assert any(line.startswith("  crashed: forward::crash::function::float32 (exit code -6)") for line in summary["lines"])
    assert any(line.startswith("  new case: forward::crash::function::float32") for line in summary["lines"])
    written = json.loads((Path(summary["folder"]) / "fuzz.json").read_text())
    assert written == {k: v for k, v in summary.items() if k not in ("folder", "lines")}
    assert fuzz_hunt.exit_status(summary) == 1 and not summary["interrupted"] and summary["signal"] is None

    again = hunt_once(tmp_path, "again", stand_ins.answering)
    without_clock = [{k: v for k, v in entry.items() if k != "first_failure_s"} for entry in summary["items"]]
    assert without_clock == [{k: v for k, v in entry.items() if k != "first_failure_s"} for entry in again["items"]]
