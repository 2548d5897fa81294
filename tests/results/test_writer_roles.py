"""One run, several writers: a pytest-xdist controller and its workers share a run folder (`RunWriter.role`).

The controller alone writes run.json; workers append records and start marks and write no summary; the
controller's counts are the records on disk whoever wrote them, and an interrupted run names an item
a worker started and never recorded.
"""

from __future__ import annotations

import json

import pytest

from torchcts.core.outcomes import Outcome
from torchcts.plugin.distributed import compact_record
from torchcts.results.writer import RunFolderError, RunWriter


def _summary(folder):
    return json.loads((folder / "run.json").read_text())


def _identity(item: str) -> dict:
    """A whole record's identity fields (the writer checks every line against the typed record)."""
    return {"item": item, "property": "forward", "op": "x", "variant": None, "dtype": "float32", "level": 1}


def test_workers_append_to_the_controllers_run_and_write_no_summary(tmp_path):
    controller = RunWriter(tmp_path, {"device": "cpu"}, role="controller")
    before = (controller.folder / "run.json").read_text()
    workers = [RunWriter(tmp_path, {"device": "cpu"}, run_id=controller.run_id, role="worker") for _ in range(2)]
    for n, worker in enumerate(workers):
        worker.mark_started(f"item{n}")
        worker.record({**_identity(f"item{n}"), "outcome": Outcome.PASSED})
        worker.set_probes({"total": 1})  # a worker never rewrites the controller's summary
        worker.close("complete")
    assert (controller.folder / "run.json").read_text() == before
    controller.record({**_identity("skipped"), "outcome": Outcome.DESELECTED, "reason": "--ops leaves it out"})
    controller.close("complete")
    summary = _summary(controller.folder)
    assert summary["status"] == "complete" and summary["counts"] == {"deselected": 1, "passed": 2}
    assert summary["executed"] == 2


def test_an_interrupted_controller_names_the_item_a_worker_left_without_a_record(tmp_path):
    controller = RunWriter(tmp_path, {}, role="controller")
    worker = RunWriter(tmp_path, {}, run_id=controller.run_id, role="worker")
    worker.mark_started("done")
    worker.record({**_identity("done"), "outcome": "failed"})
    worker.mark_started("running")
    with open(controller.folder / "started.jsonl", "ab") as started:
        started.write(b'{"item": "torn')  # a worker killed mid-write
    controller.close("partial", interrupted={"signal": "SIGINT"})
    summary = _summary(controller.folder)
    assert summary["interrupted"] == {"signal": "SIGINT", "item": "running"}
    assert summary["counts"] == {"failed": 1}


def test_a_worker_cannot_join_a_run_that_does_not_exist(tmp_path):
    with pytest.raises(RunFolderError, match="no run.json"):
        RunWriter(tmp_path, {}, run_id="20260101T000000Z-abcdef", role="worker")
    assert not (tmp_path / "20260101T000000Z-abcdef" / "records.jsonl").exists()
    with pytest.raises(ValueError, match="a worker joins a named run"):
        RunWriter(tmp_path, {}, role="worker")
    with pytest.raises(ValueError, match="role 'boss'"):
        RunWriter(tmp_path, {}, role="boss")


def test_the_record_a_worker_hands_over_is_small_and_plain():
    record = {"item": "forward::add::function::float32", "property": "forward", "op": "add", "variant": "function",
              "dtype": "float32", "outcome": Outcome.FAILED, "reason": "values differ", "error": "x" * 100_000,
              "error_line": "out[1, 2] = 3.0, expected 4.0", "examples": 7, "fingerprints": ["ab"] * 1000,
              "counterexample": {"new": True, "replay": "torchcts replay c.json", "path": "c.json", "case": {"big": 1}},
              "duration_s": 0.5, "missing_kernel": None}
    compact = compact_record(record)
    assert compact["outcome"] == "failed" and type(compact["outcome"]) is str
    assert "error" not in compact and "fingerprints" not in compact
    assert compact["counterexample"] == {"new": True, "replay": "torchcts replay c.json", "path": "c.json"}
    assert compact["error_line"] == record["error_line"] and compact["examples"] == 7
