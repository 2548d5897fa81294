"""The evidence store and `torchcts coverage collect-backend-evidence`: a traced run's per-overload counts merge
into the store, a run is never counted twice, untraced/running/compiled runs are refused, and hostile stores
(wrong types, bad names, huge, deeply nested) exit 2 naming the file and field."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.coverage.evidence import (LOCK_NAME, MAX_STORE_BYTES, Evidence, EvidenceError, collect_run,
                                        load_evidence, parse_evidence)
from torchcts.manifest.templates import render_template
from torchcts.results.writer import RunWriter
from tests import warm_programs

ENVIRONMENT = {"device": "faulty", "compile": None, "torch": "2.13.0", "torchcts": "0.test"}


def record(op, outcome, dispatched=None, **extra):
    data = {"item": f"forward::{op}::function::float32", "property": "forward", "op": op, "dtype": "float32",
            "level": 1, "outcome": outcome, **extra}
    if dispatched is not None:
        data["dispatched"] = dispatched
    return data


def write_run(results, run_id, records, status="complete", **environment):
    writer = RunWriter(results, {**ENVIRONMENT, **environment}, run_id=run_id)
    for line in records:
        writer.record(line)
    if status == "running":
        return writer.folder
    writer.close(status)
    return writer.folder


RUN_A = [record("abs", "passed", ["aten.abs.default", "aten._to_copy.default"]),
         record("add", "failed", ["aten.add.Tensor", "aten._to_copy.default"]),
         record("sub", "error", ["aten.sub.Tensor"]),
         record("mul", "cpu_contract", ["aten.mul.Tensor"]),
         record("div", "dtype_not_supported", reason="not claimed")]
RUN_B = [record("abs", "failed", ["aten.abs.default"]), record("exp", "crashed")]


def collect(store, folder):
    return CliRunner().invoke(cli, ["coverage", "collect-backend-evidence", "--store", str(store), "--from", str(folder)])


def test_collect_counts_per_overload_and_merges_runs(tmp_path):
    store = tmp_path / "store"
    first = collect(store, write_run(tmp_path / "results", "run-a", RUN_A))
    assert first.exit_code == 0, first.output
    assert "4 traced items reached 5 overloads" in first.output
    evidence = load_evidence(store)
    assert evidence.overloads["aten._to_copy.default"].as_json() == {
        "reached": 2, "passed": 1, "failed": 1, "errors": {}, "runs": ["run-a"]}
    assert evidence.overloads["aten.sub.Tensor"].errors == {"error": 1}
    assert evidence.overloads["aten.mul.Tensor"].reached == 1 and evidence.overloads["aten.mul.Tensor"].passed == 0
    second = collect(store, write_run(tmp_path / "results", "run-b", RUN_B, device="cpu"))
    assert second.exit_code == 0, second.output
    assert "1 executed items carry no trace" in second.output
    evidence = load_evidence(store)
    assert [run["run_id"] for run in evidence.runs] == ["run-a", "run-b"]
    assert evidence.runs[1]["device"] == "cpu" and evidence.runs[1]["torch"] == "2.13.0"
    assert evidence.runs[1]["collected_at"].endswith("Z")
    assert evidence.overloads["aten.abs.default"].as_json() == {
        "reached": 2, "passed": 1, "failed": 1, "errors": {}, "runs": ["run-a", "run-b"]}
    assert evidence.reached() == {"aten.abs.default", "aten._to_copy.default", "aten.add.Tensor", "aten.sub.Tensor",
                                  "aten.mul.Tensor"}


def test_a_run_collected_again_is_not_counted_twice(tmp_path):
    store, folder = tmp_path / "store", write_run(tmp_path / "results", "run-a", RUN_A)
    assert collect(store, folder).exit_code == 0
    before = (store / "evidence.json").read_bytes()
    again = collect(store, folder)
    assert again.exit_code == 0 and "already in" in again.output
    assert (store / "evidence.json").read_bytes() == before


def test_the_latest_run_is_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "results", "20260101T000000Z-aaaaaa", RUN_B)
    write_run(tmp_path / "results", "20260102T000000Z-bbbbbb", RUN_A)
    result = CliRunner().invoke(cli, ["coverage", "collect-backend-evidence", "--store", "store"])
    assert result.exit_code == 0, result.output
    assert [run["run_id"] for run in load_evidence(tmp_path / "store").runs] == ["20260102T000000Z-bbbbbb"]


@pytest.mark.parametrize("records, status, environment, expected", [
    ([record("abs", "passed")], "complete", {}, "dispatched: no record carries it: run it with --trace-dispatch"),
    (RUN_A, "running", {}, "status: the run is still running"),
    (RUN_A, "complete", {"compile": "inductor"}, "environment.compile: a run under torch.compile is not traced"),
    ([record("abs", "passed", ["torch.abs"])], "complete", {}, "'torch.abs' is not an aten overload name"),
])
def test_runs_that_cannot_be_evidence_exit_2(tmp_path, records, status, environment, expected):
    result = collect(tmp_path / "store", write_run(tmp_path / "results", "run-x", records, status, **environment))
    assert result.exit_code == 2 and expected in result.output, result.output
    assert not (tmp_path / "store" / "evidence.json").exists()


VALID = {"schema_version": 1,
         "runs": [{"run_id": "r1", "device": "cpu", "compile_backend": None, "torch": "2.13.0", "torchcts": "0.1",
                   "collected_at": "2026-12-03T00:00:00Z"}],
         "overloads": {"aten.add.Tensor": {"reached": 3, "passed": 1, "failed": 1, "errors": {"error": 1},
                                           "runs": ["r1"]}}}


def hostile(**changes):
    data = json.loads(json.dumps(VALID))
    for path, value in changes.items():
        target = data
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key.replace("_DOT_", ".")]
        target[keys[-1].replace("_DOT_", ".")] = value
    return data


OVERLOAD = "overloads__aten_DOT_add_DOT_Tensor"


@pytest.mark.parametrize("data, field", [
    ([], None),
    (hostile(schema_version=2), "schema_version"),
    (hostile(extra=1), "extra"),
    (hostile(runs={"r1": 1}), "runs"),
    (hostile(runs__0__run_id=""), "runs[0].run_id"),
    (hostile(runs__0__torch=7), "runs[0].torch"),
    (hostile(runs__0__device="x" * 500), "runs[0].device"),
    (hostile(runs__0__secret="x"), "runs[0].secret"),
    (hostile(runs=VALID["runs"] * 2), "runs"),  # a run_id twice
    (hostile(**{OVERLOAD + "__note": 1}), "overloads['aten.add.Tensor'].note"),
    (hostile(overloads=[1]), "overloads"),
    (hostile(**{OVERLOAD + "__reached": "3"}), "overloads['aten.add.Tensor'].reached"),
    (hostile(**{OVERLOAD + "__reached": -1}), "overloads['aten.add.Tensor'].reached"),
    (hostile(**{OVERLOAD + "__reached": True}), "overloads['aten.add.Tensor'].reached"),
    (hostile(**{OVERLOAD + "__reached": 1}), "overloads['aten.add.Tensor']"),  # fewer than passed + failed + errors
    (hostile(**{OVERLOAD + "__errors": {"passed": 1}}), "overloads['aten.add.Tensor'].errors"),
    (hostile(**{OVERLOAD + "__runs": ["r2"]}), "overloads['aten.add.Tensor'].runs"),
    (hostile(**{OVERLOAD + "__runs": "r1"}), "overloads['aten.add.Tensor'].runs"),
    (hostile(**{"overloads__torch.add": {}}), "overloads['torch.add']"),
    (hostile(**{"overloads__aten.add.Tensor; rm -rf": {}}), "overloads['aten.add.Tensor; rm -rf']"),
])
def test_hostile_stores_name_the_field(tmp_path, data, field):
    store = tmp_path / "store"
    store.mkdir()
    (store / "evidence.json").write_text(json.dumps(data))
    with pytest.raises(EvidenceError) as raised:
        load_evidence(store)
    assert raised.value.field == field, str(raised.value)
    assert str(raised.value).startswith(str(store / "evidence.json"))
    before = (store / "evidence.json").read_bytes()
    result = collect(store, write_run(tmp_path / "results", "run-a", RUN_A))
    assert result.exit_code == 2 and "evidence.json" in result.output and result.output.count("\n") == 1, result.output
    assert (store / "evidence.json").read_bytes() == before  # a malformed store is never overwritten


@pytest.mark.parametrize("content, problem", [
    ("[" * 5000 + "]" * 5000, "nested deeper"),
    ('{"schema_version": 1, "runs": [], "overloads": {"aten.a.b": {"reached": ' + "9" * 500 + '}}}', "digits"),
    ("{not json", "not JSON"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_unreadable_stores_exit_2(tmp_path, content, problem):
    store = tmp_path / "store"
    store.mkdir()
    path = store / "evidence.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(EvidenceError, match=problem):
        load_evidence(store)


def test_a_huge_store_is_refused_without_reading_it(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    with open(store / "evidence.json", "wb") as handle:
        handle.truncate(MAX_STORE_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(EvidenceError, match="over the limit"):
        load_evidence(store)


def test_a_valid_store_round_trips_and_an_empty_one_reaches_nothing(tmp_path):
    evidence = parse_evidence(VALID, "evidence.json")
    assert evidence.as_json() == VALID and evidence.reached() == {"aten.add.Tensor"}
    assert load_evidence(tmp_path / "absent", missing_ok=True) == Evidence()
    with pytest.raises(EvidenceError, match="missing"):
        load_evidence(tmp_path / "absent")


def test_a_real_traced_run_is_collected(tmp_path):
    """A run of real items traced on the faulty device (the engine, as `torchcts run --trace-dispatch` runs them;
    tests/engine/test_dispatch_trace.py drives the flag itself), written by the run writer, then collected."""
    from torchcts.engine.run import EngineSettings, run_item
    from torchcts.engine.targets import Target
    from torchcts.manifest import load_manifest
    from torchcts.plan.build import PlanItem
    from torchcts.testing.faulty_autoload import enable_for_device

    enable_for_device("faulty")
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="faulty"))
    manifest, _ = load_manifest(path)
    settings = EngineSettings(target=Target("faulty"), manifest=manifest, level=1, max_examples=2, trace_dispatch=True)
    records = [run_item(PlanItem("forward", op, "function", "float32", 1), settings) for op in ("abs", "neg")]
    folder = write_run(tmp_path / "results", "run-real", records)
    collected = collect_run(tmp_path / "store", folder)
    assert collected.added and collected.observed.traced == 2
    assert {"aten.abs.default", "aten.neg.default"} <= collected.evidence.reached()
    assert collected.evidence.overloads["aten.abs.default"].passed == 1
    assert collected.run["device"] == "faulty" and collected.run["run_id"] == "run-real"


@pytest.mark.slow
def test_torchcts_run_trace_dispatch_then_collect(tmp_path):
    """The whole path a user takes: `torchcts run --trace-dispatch` (the flag reaches the session through
    pytest), then `collect-backend-evidence` on the latest run."""
    manifest = tmp_path / "manifest.py"
    manifest.write_text(render_template("complete", device_name="cpu"))
    command = [sys.executable, "-m", "torchcts", "run", "--validation", "--manifest", str(manifest), "--trace-dispatch",
               "--ops", "^abs$", "--property", "forward", "--dtype", "float32", "--max-examples", "2", "--no-report"]
    done = warm_programs.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = (tmp_path / "results").iterdir()
    assert json.loads((folder / "run.json").read_text())["environment"]["trace_dispatch"] is True
    (abs_record,) = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()
                     if json.loads(line)["outcome"] == "passed"]
    assert "aten.abs.default" in abs_record["dispatched"]
    result = CliRunner().invoke(cli, ["coverage", "collect-backend-evidence", "--store", str(tmp_path / "store"),
                                      "--results-dir", str(tmp_path / "results")])
    assert result.exit_code == 0, result.output
    assert "aten.abs.default" in load_evidence(tmp_path / "store").reached()


def test_a_collect_waits_for_the_store_lock_and_keeps_the_other_collectors_run(tmp_path):
    """Read-merge-replace runs under flock on DIR/.evidence.lock: a collector that merged meanwhile is not lost."""
    import fcntl
    import threading

    store = tmp_path / "store"
    first, second = (write_run(tmp_path / "results", run_id, RUN_A) for run_id in ("run-a", "run-b"))
    store.mkdir()
    with open(store / LOCK_NAME, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another collector is between its read and its replace
        waiting = threading.Thread(target=collect_run, args=(store, second))
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # it waits rather than reading the store now
        elsewhere = tmp_path / "other"
        collect_run(elsewhere, first)  # what the other collector computed; it replaces the store with it
        (store / "evidence.json").write_bytes((elsewhere / "evidence.json").read_bytes())
        fcntl.flock(lock, fcntl.LOCK_UN)
    waiting.join(30)
    assert [run["run_id"] for run in load_evidence(store).runs] == ["run-a", "run-b"]
    assert load_evidence(store).overloads["aten.abs.default"].as_json()["runs"] == ["run-a", "run-b"]


def test_a_store_path_that_is_a_file_is_an_error_naming_it(tmp_path):
    store = tmp_path / "store"
    store.write_text("not a folder")
    with pytest.raises(EvidenceError, match="store/.evidence.lock: cannot create the store's lock file"):
        collect_run(store, write_run(tmp_path / "results", "run-a", RUN_A))
