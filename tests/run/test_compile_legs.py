"""`torchcts run --compile B` blames each compiled failure on a leg, end to end: the record, the stored case, the
report and the triage carry it. B is an in-test backend (`torchcts.testing.compile_backends`, imported by the
manifest's backend_import): nothing is installed."""

from __future__ import annotations

import json
import subprocess
import sys

from torchcts.manifest.templates import render_template
from torchcts.results.writer import read_records


def run_wrong_add(cwd, ops, *flags):
    """The run folder of `torchcts run --compile torchcts_test_wrong_add` (static shapes) over `ops` in `cwd`."""
    (cwd / "manifest.py").write_text(render_template("complete", device_name="cpu")
                                     + 'manifest["backend_import"] = "torchcts.testing.compile_backends"\n')
    run = subprocess.run([sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--compile",
                          "torchcts_test_wrong_add", "--shape-mode", "static", "--ops", ops, "--dtype",
                          "float32", "--level", "1", "--derandomize", "--max-examples", "5", *flags],
                         capture_output=True, text=True, cwd=cwd, timeout=900)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    return sorted((cwd / "results").glob("*/run.json"))[-1].parent


def test_a_wrong_backend_s_failure_carries_its_leg_through_records_corpus_report_and_triage(tmp_path):
    folder = run_wrong_add(tmp_path, "^(add|mul)$")
    records = {r["item"]: r for r in read_records(folder)}
    failed = records["forward::add::function::float32"]
    assert failed["outcome"] == "failed" and failed["leg"] == "backend"
    assert [(leg["backend"], leg["outcome"]) for leg in failed["legs"]] == [
        ("eager", "passed"), ("aot_eager", "passed"), ("torchcts_test_wrong_add", "failed")]
    assert records["forward::mul::function::float32"]["outcome"] == "passed"
    assert "leg" not in records["forward::mul::function::float32"]
    case = json.loads((tmp_path / failed["counterexample"]["path"]).read_text())
    assert case["failure"]["leg"] == "backend"

    summary = json.loads((folder / "report" / "summary.json").read_text())
    assert [f["leg"] for f in summary["failures"]] == ["backend"]
    assert summary["failure_groups"]["by_leg"] == [{"leg": "backend", "count": 1}]
    assert "- leg: backend (eager static: passed" in (folder / "report" / "scorecard.md").read_text()
    assert "Leg: <b>backend</b>" in (folder / "report" / "report.html").read_text()

    triage = subprocess.run([sys.executable, "-m", "torchcts", "triage", "--from", str(folder)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert triage.returncode == 0, triage.stderr[-2000:]
    clusters = json.loads((folder / "triage" / "triage.json").read_text())["clusters"]
    assert [c["legs"] for c in clusters] == [["backend"]]
    assert "- leg: backend" in (folder / "triage" / "triage.md").read_text()


def test_blame_cases_0_blames_nothing_and_says_so(tmp_path):
    folder = run_wrong_add(tmp_path, "^add$", "--blame-cases", "0")
    record = next(r for r in read_records(folder) if r["item"] == "forward::add::function::float32")
    assert record["outcome"] == "failed" and record["leg"] == "not-blamed" and record["legs"] == []
    assert "budget of 0 blamed cases" in record["leg_reason"]
