"""`torchcts triage` end to end: a real faulty-device run with mixed failure kinds, and hostile run folders.

The real run switches on four seeded bugs of different kinds (docs/faulty-backend.md): a wrong value
under a layout (`noncontiguous_add`), a missing kernel (`missing_kernel`: trunc) and a crash
(`crash_hypot`, isolated by the packaged known-crash rule). Hand-written folders bring the rest:
malformed and oversized case files, names built to break Markdown, terminals and Python.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.files import new_case, save_case
from torchcts.cli.main import cli
from torchcts.manifest.templates import render_template
from torchcts.triage.run import triage_run

from tests.shared_runs import shared_folder
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

BUGS = "noncontiguous_add,crash_hypot,missing_kernel"
CRASH = "forward::hypot::function::float32"


def torchcts(cwd, *args, env=None, timeout=1800):
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def _build_faulty_run(cwd: Path) -> None:
    (cwd / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    run = torchcts(cwd, "run", "--device", "faulty", "--ops", "^(add|hypot|trunc)$", "--property", "forward",
                   "--property", "layout", "--dtype", "float32", "--level", "2", "--derandomize", "--max-examples",
                   "10", "--no-report", env={"TORCHCTS_FAULTY_BUGS": BUGS})
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    triage = torchcts(cwd, "triage")  # the latest run in ./results, as `report` finds it
    assert triage.returncode == 0, triage.stderr[-3000:]
    (cwd / "triage.stdout").write_text(triage.stdout)


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory):
    """One run of add, hypot and trunc (forward and layout, float32) with three bugs on; then `triage` of it.
    Made once per test session (shared by every xdist worker): tests read it, and copy it to write."""
    cwd = shared_folder(tmp_path_factory, "test_triage_run-faulty", _build_faulty_run)
    folder = next((cwd / "results").glob("*/run.json")).parent
    return cwd, folder, subprocess.CompletedProcess(["torchcts", "triage"], 0, (cwd / "triage.stdout").read_text())


def test_the_clusters_match_the_seeded_bugs(faulty_run):
    cwd, folder, triage = faulty_run
    data = json.loads((folder / "triage" / "triage.json").read_text())
    clusters = {(c["family"], c["kind"], c["condition"]): c for c in data["clusters"]}
    assert set(clusters) == {("missing kernel", "unsupported", "aten::trunc (PrivateUse1)"),
                             ("elementwise", "crash", "unknown"),
                             ("elementwise binary", "values", "non-contiguous")}, clusters
    assert set(clusters["missing kernel", "unsupported", "aten::trunc (PrivateUse1)"]["items"]) == {
        "forward::trunc::function::float32", "layout::trunc::function::float32"}
    crash = clusters["elementwise", "crash", "unknown"]
    assert set(crash["items"]) == {CRASH, "layout::hypot::function::float32"}
    assert crash["representative"]["evidence"] == "outcome crashed (SIGABRT)"
    values = clusters["elementwise binary", "values", "non-contiguous"]
    assert values["representative"]["condition"]["source"].startswith("case ")
    assert data["kinds"] == {"unsupported": 2, "crash": 2, "values": 1}
    assert "5 failing items in 3 clusters" in triage.stdout
    markdown = (folder / "triage" / "triage.md").read_text()
    assert "| 1 | missing kernel | unsupported | aten::trunc (PrivateUse1) | 2 |" in markdown


def test_the_crash_repro_script_reproduces_it_with_plain_python(faulty_run):
    cwd, folder, _ = faulty_run
    data = json.loads((folder / "triage" / "triage.json").read_text())
    crash = next(c for c in data["clusters"] if c["kind"] == "crash")
    script = cwd / crash["representative"]["repro"]  # as the run folder was named: relative to where triage ran
    assert script.parent == folder / "triage" / "repro" and script.name.startswith("forward__hypot__function")
    env = dict(os.environ, TORCHCTS_FAULTY="1", TORCHCTS_FAULTY_BUGS="crash_hypot")
    env.pop("PYTHONPATH", None)
    died = warm_programs.run([sys.executable, str(script), "faulty"], capture_output=True, text=True, env=env,
                          timeout=900, cwd=cwd)
    assert died.returncode in (-6, 134), died.stdout[-2000:] + died.stderr[-2000:]  # SIGABRT, as in the run
    assert died.stdout.splitlines()[-1].startswith("sample ")  # the sample that killed it is the last line
    env["TORCHCTS_FAULTY_BUGS"] = ""
    fine = warm_programs.run([sys.executable, str(script), "faulty"], capture_output=True, text=True, env=env,
                          timeout=900, cwd=cwd)
    assert fine.returncode == 0 and "not reproduced on faulty" in fine.stdout, fine.stderr[-2000:]


def test_the_report_links_the_triage(faulty_run, tmp_path):
    shared, shared_run, _ = faulty_run
    cwd = tmp_path / "triage"  # `report` writes into the run folder: a copy of the shared one
    shutil.copytree(shared, cwd)
    folder = cwd / shared_run.relative_to(shared)
    report = torchcts(cwd, "report", "--from", str(folder), "--format", "html", "--format", "md", timeout=600)
    assert report.returncode == 0, report.stderr
    assert 'href="../triage/triage.md"' in (folder / "report" / "report.html").read_text()
    assert "(../triage/triage.md)" in (folder / "report" / "scorecard.md").read_text()


SPLIT_PRONE = "nan_ignored_max,add_round_toward_zero,transfer_drops_offset,expanded_mul,storage_offset_ignored"


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory):
    """Five seeded bugs that each break ops of more than one family or name (amax and maximum; add and sub; split
    and narrow): a run with the faulty device's trace on, so each record names the bugs that fired in its item."""
    cwd = tmp_path_factory.mktemp("traced")
    (cwd / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    run = torchcts(cwd, "run", "--device", "faulty", "--ops", "^(amax|maximum|add|sub|mul|split|narrow|abs|neg|exp)$",
                   "--property", "forward", "--property", "layout", "--dtype", "float32", "--level", "2",
                   "--derandomize", "--max-examples", "10", "--no-report",
                   env={"TORCHCTS_FAULTY_BUGS": SPLIT_PRONE, "TORCHCTS_TRACE_DEVICE_OPS": "1"})
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    folder = next((cwd / "results").glob("*/run.json")).parent
    fired = {}
    for line in (folder / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["outcome"] in ("failed", "error"):
            fired[record["item"]] = {op[4:] for op in record.get("device_ops", ()) if op.startswith("bug:")}
    return triage_run(folder), fired


def test_each_seeded_bug_is_one_cluster_and_each_cluster_one_bug(traced_run):
    result, fired = traced_run
    assert len(result.failures) == len(fired) >= 8
    home = {}  # bug -> the clusters holding the items where it fired alone
    for number, cluster in enumerate(result.clusters):
        items = [f.item for f in cluster.failures]
        assert set.intersection(*(fired[item] for item in items)), (cluster.condition, {i: fired[i] for i in items})
        for item in items:
            if len(fired[item]) == 1:
                home.setdefault(next(iter(fired[item])), set()).add(number)
    assert set(home) == set(SPLIT_PRONE.split(",")), home  # every bug fails some item on its own
    assert all(len(numbers) == 1 for numbers in home.values()), {
        bug: [(result.clusters[n].family, result.clusters[n].condition) for n in numbers]
        for bug, numbers in home.items()}
    conditions = {result.clusters[next(iter(home[bug]))].condition for bug in home}
    assert {"nan, op max", "plain, op add", "output storage offset", "expanded", "storage offset"} == conditions


# -- hostile folders -------------------------------------------------------------------------------------------

HOSTILE = 'forward::add|`x`\n# Title <script>"""\x1b[31m::function::float32'


def write_run(folder: Path, records: list, summary: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(summary or {"status": "complete", "counts": {}, "run_id": "r",
                                                            "environment": {"device": "faulty"}}))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def rec(item, outcome="failed", op="add", prop="forward", **fields):
    return {"item": item, "property": prop, "op": op, "dtype": "float32", "level": 1, "outcome": outcome,
            "variant": "function", **fields}


def stored_case(corpus: Path) -> Path:
    x = torch.arange(6.0).reshape(2, 3)
    case = new_case(prop="forward", op="add", variant="function", dtype="float32", device_type="faulty", backend=None,
                    sample=SampleInput(x.t(), args=(torch.ones(3, 2),)), found={},
                    failure={"outcome": "failed", "message": "m",
                             "difference": "output: strides (1, 3), CPU gives (2, 1)"})
    path = corpus / "strided.json"
    save_case(path, case)
    return path


def test_hostile_records_and_cases_are_triaged_without_harm(tmp_path):
    corpus = tmp_path / "corpus"
    good = stored_case(corpus)
    (corpus / "truncated.json").write_text('{"schema_version": 1, "inputs": ')
    with open(corpus / "huge.json", "wb") as huge:  # sparse: 300 MiB by its size, over any case file limit
        huge.truncate(300 * 2**20)  # (refused by its size before a byte is read; nothing written to disk)
    folder = write_run(tmp_path / "results" / "run", [
        rec(HOSTILE, counterexample={"path": str(good), "replay": "x"}),
        rec("forward::add::function::bfloat16", counterexample={"path": str(corpus / "truncated.json")}),
        rec("forward::add::function::int32", counterexample={"path": str(corpus / "huge.json")}),
        rec("forward::abs::function::float32", counterexample={"path": "nowhere/missing.json"}),
        rec("crash::" + HOSTILE, outcome="crashed", op="__import__('os').system('echo pwned')"),
        rec("forward::add::function::float32", outcome="crashed", signal="SIGSEGV"),
        rec("forward::add::function::float32\n", outcome="timed_out", prop="streams", op="side_stream"),
        rec("errors::add::function::float32", outcome="error", error_kind="harness"),
        rec("forward::add::function::float16", outcome="passed"),
    ])
    result = CliRunner().invoke(cli, ["triage", "--from", str(folder)])
    assert result.exit_code == 0, result.output
    data = json.loads((folder / "triage" / "triage.json").read_text())
    assert data["failures"] == 8 and data["kinds"] == {"strides": 1, "values": 3, "crash": 2, "hang": 1, "harness": 1}
    strides = next(c for c in data["clusters"] if c["kind"] == "strides")
    assert strides["condition"] == "non-contiguous" and strides["items"] == [HOSTILE]
    problems = "\n".join(data["problems"])
    assert "truncated.json" in problems and "huge.json" in problems
    assert "streams runs scenarios" in problems and "no sweep: 'no OpInfo" in problems  # no script, and why
    assert all(p.isprintable() for p in data["problems"])
    crash = next(c for c in data["clusters"] if c["kind"] == "crash")
    assert crash["representative"]["item"] == "forward::add::function::float32"  # the one with a script
    scripts = sorted((folder / "triage" / "repro").iterdir())
    assert [p.name.startswith("forward__add__function__float32-") for p in scripts] == [True]
    source = scripts[0].read_text()
    ast.parse(source)
    assert "pwned" not in source and "__import__" not in source
    markdown = (folder / "triage" / "triage.md").read_text()
    assert "\x1b" not in markdown and "\\|\\`x\\`\\n# Title" in markdown  # a cell
    assert "<script>" not in re.sub(r"`[^`\n]*`", "", markdown)  # raw only inside code spans, where it is text
    assert "`forward::add|'x'\\n# Title <script>\"\"\"\\x1b[31m::function::float32`" in markdown  # a code span
    assert "\n# Title" not in markdown and markdown.count("\n# ") == 0  # the one heading is the first line


def test_a_case_whose_op_crashes_natively_is_traced_in_a_child(tmp_path):
    """Triage calls each failing case's op (to see which kernels saw its condition); a hostile case that makes a
    CPU kernel read out of bounds (`_segment_reduce` with `unsafe=True` and lengths past the input) kills only
    the child tracing it: triage finishes, says so, and groups the failure by its op and condition."""
    sample = SampleInput(torch.rand(5), args=("max",), kwargs={"axis": 0, "unsafe": True, "initial": 1,
                                                              "lengths": torch.tensor([10**9, 10**9])})
    case = new_case(prop="forward", op="_segment_reduce.lengths", variant="function", dtype="float32",
                    device_type="faulty", backend=None, sample=sample, found={},
                    failure={"outcome": "failed", "message": "m",
                             "difference": "output: 1 at flat index 0, CPU gives 2"})
    path = tmp_path / "corpus" / "segment.json"
    save_case(path, case)
    folder = write_run(tmp_path / "run", [rec("forward::_segment_reduce.lengths::function::float32",
                                              op="_segment_reduce.lengths", counterexample={"path": str(path)})])
    triage = triage_run(folder)
    assert [c.kind for c in triage.clusters] == ["values"] and triage.failures[0].suspects == ()
    assert any("_segment_reduce.lengths" in p and "SIGSEGV" in p for p in triage.problems), triage.problems
    result = CliRunner().invoke(cli, ["triage", "--from", str(folder), "--no-trace"])  # nothing is called
    assert result.exit_code == 0 and "SIGSEGV" not in result.output, result.output
    assert json.loads((folder / "triage" / "triage.json").read_text())["problems"] == []


def test_a_hostile_op_name_in_a_crash_record_never_becomes_code(tmp_path):
    folder = write_run(tmp_path / "run", [rec("x", outcome="crashed", op="add'); import os #")])
    triage = triage_run(folder)
    assert triage.failures[0].repro is None and "no sweep" in triage.problems[0]
    assert not (folder / "triage" / "repro").exists()


@pytest.mark.parametrize("args, message", [
    (["--from", "nowhere"], "--from nowhere: no such folder"),
    (["--from", "manifest.py"], "--from manifest.py: not a folder"),
    (["--from", "empty"], "empty/run.json: missing"),
    (["--from", "bad"], "bad/records.jsonl:2: field 'level' must be an integer from 0 to 8"),
    (["--results-dir", "empty"], "empty: no run folder of a run that executed items"),
])
def test_a_bad_run_folder_is_one_line_and_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "manifest.py").write_text("")
    (tmp_path / "empty").mkdir()
    write_run(tmp_path / "bad", [rec("a"), {**rec("b"), "level": "abc"}])
    result = CliRunner().invoke(cli, ["triage", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.output


# -- triage DEVICE: the latest run on that device ------------------------------------------------------------

def test_triage_faulty_picks_the_latest_faulty_run_past_a_newer_cpu_run(faulty_run, tmp_path, monkeypatch):
    cwd, folder, _ = faulty_run
    monkeypatch.chdir(cwd)  # the records name their corpus cases relative to where the run ran
    results = tmp_path / "results"
    shutil.copytree(folder, results / folder.name, ignore=shutil.ignore_patterns("triage"))
    write_run(results / "99991231T000000Z-cpu", [rec("forward::add::function::float32")],
              {"status": "complete", "counts": {"failed": 1}, "run_id": "cpu", "environment": {"device": "cpu"}})
    result = CliRunner().invoke(cli, ["triage", "faulty", "--results-dir", str(results),
                                      "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"triaging {results / folder.name} (the latest run on faulty that executed items)" in result.stderr
    clusters = {(c["family"], c["kind"], c["condition"], tuple(sorted(c["items"])))
                for c in json.loads((tmp_path / "out" / "triage.json").read_text())["clusters"]}
    expected = {(c["family"], c["kind"], c["condition"], tuple(sorted(c["items"])))
                for c in json.loads((folder / "triage" / "triage.json").read_text())["clusters"]}
    assert clusters == expected and len(clusters) == 3
    newest = CliRunner().invoke(cli, ["triage", "--results-dir", str(results), "--no-trace", "--no-scripts",
                                      "--output", str(tmp_path / "cpu-out")])
    assert newest.exit_code == 0 and "99991231T000000Z-cpu" in newest.stderr  # no DEVICE: the newest of any device


def test_triage_cuda_names_an_indexed_cuda_run(tmp_path):
    results = tmp_path / "results"
    write_run(results / "20260101T000000Z-a", [rec("forward::add::function::float32")],
              {"status": "complete", "counts": {"failed": 1}, "run_id": "a", "environment": {"device": "cuda:1"}})
    write_run(results / "20260102T000000Z-b", [rec("forward::sub::function::float32", op="sub")],
              {"status": "complete", "counts": {"failed": 1}, "run_id": "b", "environment": {"device": "cudax"}})
    result = CliRunner().invoke(cli, ["triage", "cuda", "--results-dir", str(results), "--no-trace", "--no-scripts"])
    assert result.exit_code == 0, result.output
    data = json.loads((results / "20260101T000000Z-a" / "triage" / "triage.json").read_text())
    assert data["failures"] == 1 and [c["items"] for c in data["clusters"]] == [["forward::add::function::float32"]]
    assert not (results / "20260102T000000Z-b" / "triage").exists()


@pytest.mark.parametrize("args, message", [
    (["faulty", "--from", "run"], "triage faulty --from run: DEVICE picks the latest run on that device and --from "
                                  "names a run folder; give one of them"),
    (["mps", "--results-dir", "results"], "results: no run folder of a run on device mps that executed items "
                                          "(results/<run-id>/run.json); passed over: 1 on another device; "
                                          "run `torchcts run --device mps` first or pass --from"),
    (["run"], "results: no run folder of a run on device run that executed items (results/<run-id>/run.json); "
              "passed over: 1 on another device; run is a folder: --from run triages it"),
    ([""], "triage DEVICE: empty"),
])
def test_triage_device_errors_are_one_line_and_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "run", [rec("a")])
    write_run(tmp_path / "results" / "20260101T000000Z-a", [rec("a")],
              {"status": "complete", "counts": {"failed": 1}, "run_id": "a", "environment": {"device": "faulty"}})
    result = CliRunner().invoke(cli, ["triage", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.output
