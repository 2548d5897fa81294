"""Crash and hang isolation end to end, with the faulty device's crash and hang bugs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from torchcts.results import read_records
from torchcts.templates import render_template

OPS = "^(hypot|logaddexp|abs)$"


def run(cwd, *args, bugs="crash_hypot,hang_logaddexp", results="results"):
    command = [sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--ops", OPS, "--dtype", "float32",
               "--level", "2", "--derandomize", "--max-examples", "4", "--item-timeout", "4",
               "--results-dir", results, *args]
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=600,
                            env=dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs))
    folder = sorted((cwd / results).glob("*/run.json"))[-1].parent
    return result, folder, {r["item"]: r for r in read_records(folder)}


@pytest.fixture
def cwd(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    return tmp_path


def test_known_crashes_are_isolated_and_the_run_completes(cwd):
    result, folder, items = run(cwd)
    assert result.returncode == 1, result.stdout[-3000:]
    summary = json.loads((folder / "run.json").read_text())
    assert summary["status"] == "complete"
    crashed = items["forward::hypot::function::float32"]
    assert crashed["outcome"] == "crashed" and crashed["signal"] == "SIGABRT"
    assert "Fatal Python error" in crashed["error"] and "_crash" in crashed["error"]  # the child's last output
    assert crashed["isolated"].startswith("known crash rule")
    hung = items["forward::logaddexp::function::float32"]
    assert hung["outcome"] == "timed_out" and "after 4 s" in hung["reason"]
    assert items["forward::abs::function::float32"]["outcome"] == "passed"
    assert "isolated" not in items["forward::abs::function::float32"]
    # items the bugs do not reach run isolated too and keep their normal outcome
    assert items["errors::hypot::function::float32"]["outcome"] == "passed"
    assert items["errors::hypot::function::float32"]["examples"] > 0
    report = subprocess.run([sys.executable, "-m", "torchcts", "report", "--from", str(folder)],
                            capture_output=True, text=True, cwd=cwd)
    assert report.returncode == 0
    data = json.loads((folder / "report" / "summary.json").read_text())
    assert data["coverage"]["complete"] and {f["outcome"] for f in data["failures"]} == {"crashed", "timed_out"}


def test_a_second_run_isolates_them_from_evidence_alone(cwd):
    run(cwd)
    result, _, items = run(cwd, "--known-segfault-policy", "off")
    assert items["forward::hypot::function::float32"]["outcome"] == "crashed"
    assert items["forward::hypot::function::float32"]["isolated"].startswith("adaptive: crashed in run")
    assert items["forward::logaddexp::function::float32"]["outcome"] == "timed_out"
    assert "isolated" not in items["forward::abs::function::float32"]


def test_a_run_killed_by_a_crash_leaves_evidence_for_the_next(cwd):
    died, folder, items = run(cwd, "--known-segfault-policy", "off", "--adaptive-isolation", "off",
                              bugs="crash_hypot")
    assert died.returncode != 0 and json.loads((folder / "run.json").read_text())["status"] == "running"
    assert "forward::hypot::function::float32" not in items
    result, folder, items = run(cwd, "--known-segfault-policy", "off", bugs="crash_hypot")
    assert json.loads((folder / "run.json").read_text())["status"] == "complete"
    assert items["forward::hypot::function::float32"]["outcome"] == "crashed"
    assert "died while it ran" in items["forward::hypot::function::float32"]["isolated"]


def test_subprocess_per_test_keeps_every_outcome(cwd):
    plain = run(cwd, "--known-segfault-policy", "off", "--adaptive-isolation", "off", "--max-examples", "15",
                bugs="storage_offset_ignored", results="plain")[2]
    _, folder, isolated = run(cwd, "--subprocess-per-test", "--max-examples", "15", bugs="storage_offset_ignored",
                              results="isolated")
    counts = json.loads((folder / "run.json").read_text())["counts"]
    assert counts["passed"] == sum(r["outcome"] == "passed" for r in isolated.values())  # children's records count
    executed = {k: r for k, r in plain.items() if r["outcome"] in ("passed", "failed", "error")}
    assert executed and {k: isolated[k]["outcome"] for k in executed} == {k: r["outcome"] for k, r in executed.items()}
    assert all(isolated[k]["isolated"] == "--subprocess-per-test" for k in executed)
    assert {k: isolated[k]["fingerprints"] for k in executed} == {k: r["fingerprints"] for k, r in executed.items()}
    failed = [isolated[k] for k, r in executed.items() if r["outcome"] == "failed"]
    assert failed and all(r["counterexample"]["path"] for r in failed)


def test_known_crash_audit_and_bad_ledgers(cwd):
    audit = subprocess.run([sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--known-segfault-audit"],
                           capture_output=True, text=True, cwd=cwd)
    assert audit.returncode == 0 and "known_crashes.json#0:" in audit.stdout
    assert "forward::hypot::function::float32" in audit.stdout and not (cwd / "results").exists()
    (cwd / "known_crashes.json").write_text(json.dumps({"rules": [{"op": "^nothing_matches$", "reason": "x"}]}))
    unmatched = subprocess.run([sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--known-segfault-audit"],
                               capture_output=True, text=True, cwd=cwd)
    assert unmatched.returncode == 2 and "matches no item" in unmatched.stdout
    (cwd / "known_crashes.json").write_text(json.dumps({"rules": [{"op": "^abs$", "reason": "x", "dtype": "f"}]}))
    bad = subprocess.run([sys.executable, "-m", "torchcts", "run", "--device", "faulty"], capture_output=True,
                         text=True, cwd=cwd)
    assert bad.returncode == 2 and "known_crashes.json: rules[0]" in bad.stderr + bad.stdout
    assert "unknown field(s) dtype" in bad.stderr + bad.stdout


def test_fuzz_shrinks_a_crash_into_a_replayable_crash_case(cwd):
    env = dict(os.environ, TORCHCTS_FAULTY_BUGS="crash_hypot")
    hunt = subprocess.run([sys.executable, "-m", "torchcts", "fuzz", "--device", "faulty", "--ops", "^hypot$",
                           "--dtype", "float32", "--property", "forward", "--budget", "30s", "--seed", "2"],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert hunt.returncode == 1, hunt.stdout[-3000:]
    cases = list((cwd / "corpus").glob("*.json"))
    assert len(cases) == 1
    case = json.loads(cases[0].read_text())
    assert case["failure"]["outcome"] == "crashed" and "SIGABRT" in case["failure"]["message"]
    replayed = subprocess.run([sys.executable, "-m", "torchcts", "replay", "--device", "faulty", "--strict"],
                              capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert replayed.returncode == 1 and "still failing" in replayed.stdout  # crashed in a child, reported
    fixed = subprocess.run([sys.executable, "-m", "torchcts", "replay", "--device", "faulty", "--strict"],
                           capture_output=True, text=True, cwd=cwd, timeout=600,
                           env=dict(os.environ, TORCHCTS_FAULTY_BUGS=""))
    assert fixed.returncode == 0 and "now passing" in fixed.stdout
