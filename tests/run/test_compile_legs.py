"""`torchcts run --compile B` blames each compiled failure on a leg, end to end: the record, the stored case, the
report and the triage carry it. B is an in-test backend (`torchcts.testing.compile_backends`, imported by the
manifest's backend_import): nothing is installed."""

from __future__ import annotations

import json
import sys

import pytest

from torchcts.manifest.templates import render_template
from torchcts.results.writer import read_records
from tests import warm_programs


def run_wrong_add(cwd, ops, *flags, dtype="float32"):
    """The run folder of `torchcts run --compile torchcts_test_wrong_add` (static shapes) over `ops` in `cwd`."""
    (cwd / "manifest.py").write_text(render_template("complete", device_name="cpu")
                                     + 'manifest["backend_import"] = "torchcts.testing.compile_backends"\n')
    run = warm_programs.run([sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--compile",
                          "torchcts_test_wrong_add", "--shape-mode", "static", "--ops", ops, "--dtype",
                          dtype, "--level", "1", "--derandomize", "--max-examples", "5", *flags],
                         capture_output=True, text=True, cwd=cwd, timeout=900)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    return sorted((cwd / "results").glob("*/run.json"))[-1].parent


@pytest.mark.slow
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

    triage = warm_programs.run([sys.executable, "-m", "torchcts", "triage", "--from", str(folder)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert triage.returncode == 0, triage.stderr[-2000:]
    clusters = json.loads((folder / "triage" / "triage.json").read_text())["clusters"]
    assert [c["legs"] for c in clusters] == [["backend"]]
    assert "- leg: backend" in (folder / "triage" / "triage.md").read_text()


@pytest.mark.slow
def test_blame_cases_0_blames_nothing_and_says_so(tmp_path):
    folder = run_wrong_add(tmp_path, "^add$", "--blame-cases", "0")
    record = next(r for r in read_records(folder) if r["item"] == "forward::add::function::float32")
    assert record["outcome"] == "failed" and record["leg"] == "not-blamed" and record["legs"] == []
    assert "budget of 0 blamed cases" in record["leg_reason"]


@pytest.mark.slow
def test_isolated_items_are_blamed_in_the_run_within_its_budget_and_replay_elsewhere_fixes_nothing(tmp_path):
    """--subprocess-per-test runs each item in a forked child; blame runs in the run's process, so --blame-cases
    holds across children. The stored case, replayed eagerly (no --compile) or under another backend, passes there:
    the verdict line says where it was found, and --update-status leaves it open."""
    folder = run_wrong_add(tmp_path, "^add$", "--subprocess-per-test", "--blame-cases", "1", dtype="float32,float64")
    records = [r for r in read_records(folder) if r["outcome"] == "failed"]
    assert len(records) == 2 and all(r["isolated"] == "--subprocess-per-test" for r in records)
    assert sorted(r["leg"] for r in records) == ["backend", "not-blamed"]
    blamed = next(r for r in records if r["leg"] == "backend")
    assert "budget of 1 blamed cases" in next(r for r in records if r["leg"] == "not-blamed")["leg_reason"]

    case = blamed["counterexample"]["path"]
    for compile_flags, target in (((), "eager (no torch.compile)"), (("--compile", "aot_eager"),
                                                                     "torch.compile(aot_eager)")):
        replay = warm_programs.run([sys.executable, "-m", "torchcts", "replay", case, "--device", "cpu",
                                 "--manifest", "manifest.py", "--update-status", *compile_flags],
                                capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr[-3000:]
        line = next(line for line in replay.stdout.splitlines() if line.startswith("now passing"))
        assert f"(found under torch.compile(torchcts_test_wrong_add); replayed on {target})" in line, replay.stdout
        assert "status not updated" in replay.stdout and "-> fixed" not in replay.stdout
        assert json.loads((tmp_path / case).read_text())["status"] == "open"

    same = warm_programs.run([sys.executable, "-m", "torchcts", "replay", case, "--device", "cpu", "--manifest",
                           "manifest.py", "--compile", "torchcts_test_wrong_add"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert "still failing" in same.stdout and "found under" not in same.stdout, same.stdout[-3000:]


def test_a_fixed_case_failing_on_another_target_is_no_regression():
    from torchcts.cases.replay import ReplayVerdict

    def verdict(found_on, replayed_on):
        return ReplayVerdict("case.json", "replay::x", "fixed", "failed", "", found_on=found_on,
                             replayed_on=replayed_on)

    assert verdict("inductor", "inductor").regression and not verdict("inductor", "inductor").elsewhere
    for found_on, replayed_on in (("inductor", None), ("inductor", "aot_eager"), (None, "inductor")):
        assert verdict(found_on, replayed_on).elsewhere and not verdict(found_on, replayed_on).regression
    assert verdict("inductor", None).where() == \
        "found under torch.compile(inductor); replayed on eager (no torch.compile)"
