"""Crash and hang isolation end to end, with the faulty device's crash and hang bugs.

No outcome asserted here depends on the machine's speed. A run that checks the hang gives it a
short --item-timeout and isolates nothing but the hanging item: the hang sleeps for an hour, so
a short timeout recognises it however slow or busy the machine is. Every other run keeps the
default 900 s item timeout, a safety net no slow machine reaches, so an isolated item that
crashes stays `crashed` and one that passes stays `passed`. Fuzzing is bounded by visits, not
seconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys

import pytest

from torchcts.results.writer import read_records
from torchcts.manifest.templates import render_template
from tests.shared_runs import shared_folder
from tests import warm_programs

OPS = "^(hypot|logaddexp|abs)$"
HANG_TIMEOUT_S = 4  # only ever given to runs whose one isolated item hangs for an hour
CRASH, HANG, ABS = ("forward::hypot::function::float32", "forward::logaddexp::function::float32",
                    "forward::abs::function::float32")
LAYOUT_CRASH = "layout::hypot::function::float32"  # layout calls the same functional hypot kernel on 4+ elements


def run(cwd, *args, ops=OPS, bugs="crash_hypot", results="results"):
    """`torchcts run` on the faulty device: its result, run folder and records by item id.

    --no-report: no test reads the report a run writes at its end; the tests that check reports make them
    with `torchcts report --from`, which writes the same report folder."""
    command = [sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--ops", ops, "--dtype", "float32",
               "--level", "2", "--derandomize", "--max-examples", "4", "--no-report", "--results-dir", results,
               *args]
    result = warm_programs.run(command, capture_output=True, text=True, cwd=cwd, timeout=1800,
                            env=dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs))
    folder = sorted((cwd / results).glob("*/run.json"))[-1].parent
    return result, folder, {r["item"]: r for r in read_records(folder)}


def run_hang(cwd, *args, results="results"):
    """A run with the hang bug whose only isolated item is the one that hangs (abs runs in-process)."""
    return run(cwd, "--property", "forward", "--item-timeout", str(HANG_TIMEOUT_S), *args, ops="^(logaddexp|abs)$",
               bugs="hang_logaddexp", results=results)


def make_cwd(folder):
    (folder / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    return folder


@pytest.fixture
def cwd(tmp_path):
    return make_cwd(tmp_path)


def _report(cwd, folder):
    """`torchcts report --from` the run folder: its exit status and summary."""
    report = warm_programs.run([sys.executable, "-m", "torchcts", "report", "--from", str(folder)],
                            capture_output=True, text=True, cwd=cwd, timeout=600)
    return {"returncode": report.returncode, "output": (report.stdout + report.stderr)[-3000:]}


def _build_first_runs(folder):
    """The crash run, then the hang run, in one folder, each reported with `torchcts report --from`; what the
    tests assert on is written to first_runs.json (the records and reports stay in the run folders)."""
    make_cwd(folder)
    runs = {}
    for name, start in (("crash", run), ("hang", run_hang)):
        result, run_folder, _ = start(folder)
        runs[name] = {"returncode": result.returncode, "stdout": result.stdout[-3000:],
                      "folder": str(run_folder.relative_to(folder)), "report": _report(folder, run_folder)}
    (folder / "first_runs.json").write_text(json.dumps(runs))


@pytest.fixture(scope="module")
def first_runs(tmp_path_factory):
    """A crash run and a hang run in one folder, as the known-crash ledger isolates them: built once per test
    session and shared by every xdist worker (read only: a test that runs again copies it first). Each run:
    (exit status, stdout, run folder, records by item, `torchcts report --from` exit status and output)."""
    folder = shared_folder(tmp_path_factory, "isolation-first-runs", _build_first_runs)
    runs = json.loads((folder / "first_runs.json").read_text())

    def loaded(name):
        data = runs[name]
        run_folder = folder / data["folder"]
        return (data["returncode"], data["stdout"], run_folder, {r["item"]: r for r in read_records(run_folder)},
                data["report"])

    return folder, loaded("crash"), loaded("hang")


@pytest.mark.slow
def test_known_crashes_are_isolated_and_the_run_completes(first_runs):
    _, (returncode, stdout, folder, items, report), _ = first_runs
    assert returncode == 1, stdout
    assert json.loads((folder / "run.json").read_text())["status"] == "complete"
    for crashed in (items[CRASH], items[LAYOUT_CRASH]):
        assert crashed["outcome"] == "crashed" and crashed["signal"] == "SIGABRT"
        assert "Fatal Python error" in crashed["error"] and "_crash" in crashed["error"]  # the child's last output
        assert crashed["isolated"].startswith("known crash rule")
    assert items[ABS]["outcome"] == "passed" and "isolated" not in items[ABS]
    # items the bug does not reach run isolated too (the ledger names whole ops) and keep their normal outcome
    others = [item for item, record in items.items() if "isolated" in record and item not in (CRASH, LAYOUT_CRASH)]
    assert set(others) == {"errors::hypot::function::float32", "errors::logaddexp::function::float32",
                           "forward::logaddexp::function::float32", "layout::logaddexp::function::float32"}
    for item in others:
        assert items[item]["outcome"] == "passed" and items[item]["examples"] > 0, items[item]
        assert items[item]["isolated"].startswith("known crash rule")
    assert report["returncode"] == 0, report["output"]  # `torchcts report --from` the run folder
    data = json.loads((folder / "report" / "summary.json").read_text())
    assert data["coverage"]["complete"] and {f["outcome"] for f in data["failures"]} == {"crashed"}


@pytest.mark.slow
def test_a_known_hang_is_timed_out_on_any_machine_and_the_run_completes(first_runs):
    _, _, (returncode, stdout, folder, items, report) = first_runs
    assert returncode == 1, stdout
    assert json.loads((folder / "run.json").read_text())["status"] == "complete"
    hung = items[HANG]
    assert hung["outcome"] == "timed_out" and hung["isolated"].startswith("known crash rule")
    assert re.search(r"still running after \d+ s; killed", hung["reason"]) and hung["duration_s"] >= HANG_TIMEOUT_S
    assert items[ABS]["outcome"] == "passed" and "isolated" not in items[ABS]
    assert report["returncode"] == 0, report["output"]  # `torchcts report --from` the run folder
    data = json.loads((folder / "report" / "summary.json").read_text())
    assert data["coverage"]["complete"] and {f["outcome"] for f in data["failures"]} == {"timed_out"}


@pytest.mark.slow
def test_a_second_run_isolates_them_from_evidence_alone(first_runs, tmp_path):
    cwd = tmp_path / "again"
    shutil.copytree(first_runs[0], cwd)  # the crash and the hang of the first runs are the evidence
    _, _, items = run(cwd, "--known-segfault-policy", "off")
    assert items[CRASH]["outcome"] == "crashed"
    assert items[CRASH]["isolated"].startswith("adaptive: crashed in run")
    assert items[HANG]["outcome"] == "passed"  # the hang bug is off here: isolated by its evidence, still passes
    assert items[HANG]["isolated"].startswith("adaptive: timed_out in run")
    assert "isolated" not in items[ABS] and "isolated" not in items["errors::hypot::function::float32"]
    _, _, items = run_hang(cwd, "--known-segfault-policy", "off")
    assert items[HANG]["outcome"] == "timed_out"
    assert items[HANG]["isolated"].startswith("adaptive: timed_out in run")
    assert "isolated" not in items[ABS]


@pytest.mark.slow
def test_a_run_killed_by_a_crash_leaves_evidence_for_the_next(cwd):
    """forward only: layout reaches the same crash, and one crashing item is what this test is about."""
    died, folder, items = run(cwd, "--property", "forward", "--known-segfault-policy", "off",
                              "--adaptive-isolation", "off")
    assert died.returncode != 0 and json.loads((folder / "run.json").read_text())["status"] == "running"
    assert CRASH not in items
    result, folder, items = run(cwd, "--property", "forward", "--known-segfault-policy", "off")
    assert json.loads((folder / "run.json").read_text())["status"] == "complete"
    assert items[CRASH]["outcome"] == "crashed"
    assert "died while it ran" in items[CRASH]["isolated"]


@pytest.mark.slow
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


@pytest.mark.slow
def test_known_crash_audit_and_bad_ledgers(cwd):
    def torchcts_run(*args):
        return warm_programs.run([sys.executable, "-m", "torchcts", "run", "--device", "faulty", *args],
                              capture_output=True, text=True, cwd=cwd, timeout=600)

    audit = torchcts_run("--known-segfault-audit")
    assert audit.returncode == 0 and "known_crashes.json#0:" in audit.stdout
    assert CRASH in audit.stdout and not (cwd / "results").exists()
    (cwd / "known_crashes.json").write_text(json.dumps({"rules": [{"op": "^nothing_matches$", "reason": "x"}]}))
    unmatched = torchcts_run("--known-segfault-audit")
    assert unmatched.returncode == 2 and "matches no item" in unmatched.stdout
    (cwd / "known_crashes.json").write_text(json.dumps({"rules": [{"op": "^abs$", "reason": "x", "dtype": "f"}]}))
    bad = torchcts_run()
    assert bad.returncode == 2 and "known_crashes.json: rules[0]" in bad.stderr + bad.stdout
    assert "unknown field(s) dtype" in bad.stderr + bad.stdout


@pytest.mark.slow
def test_fuzz_keeps_going_past_a_crash_and_shrinks_it_into_a_replayable_crash_case(cwd):
    """A visit budget, not seconds: seed 11 visits hypot first (it crashes, and its visit is replayed
    case by case to shrink the crash), then abs, whose third visit of the run finds the storage-offset bug."""
    env = dict(os.environ, TORCHCTS_FAULTY_BUGS="storage_offset_ignored,crash_hypot")
    hunt = warm_programs.run([sys.executable, "-m", "torchcts", "fuzz", "--device", "faulty", "--ops", "^(abs|hypot)$",
                           "--dtype", "float32", "--property", "forward", "--level", "2", "--max-visits", "3",
                           "--seed", "11", "--task-timeout", "1800"],  # a safety net: the crash replay forks per case
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=3600)
    assert hunt.returncode == 1, hunt.stdout[-3000:] + hunt.stderr[-3000:]
    summary = json.loads(next((cwd / "results").glob("fuzz-*/fuzz.json")).read_text())
    assert summary["visits"] == 3 and summary["max_visits"] == 3 and summary["budget_s"] is None
    items = {item["item"]: item for item in summary["items"]}
    assert items[CRASH]["outcome"] == "crashed" and items[CRASH]["first_failure_visit"] == 1
    assert items[ABS]["outcome"] == "hunted" and items[ABS]["first_failure_visit"] == 3  # the hunt went on
    assert "torchcts replay" in hunt.stdout and "crashed" in hunt.stdout
    cases = {case["op"]: case for case in (json.loads(path.read_text()) for path in (cwd / "corpus").glob("*.json"))}
    assert set(cases) == {"hypot", "abs"}
    assert cases["hypot"]["failure"]["outcome"] == "crashed" and "SIGABRT" in cases["hypot"]["failure"]["message"]
    assert cases["abs"]["found"]["derandomize"] is False and "fuzz_seed" in cases["abs"]["found"]
    replayed = warm_programs.run([sys.executable, "-m", "torchcts", "replay", "--device", "faulty", "--strict"],
                              capture_output=True, text=True, cwd=cwd, env=env, timeout=1800)
    failing = sum(line.startswith("still failing") for line in replayed.stdout.splitlines())
    assert replayed.returncode == 1 and failing == 2, replayed.stdout[-3000:]  # the crash in a child, reported
    fixed = warm_programs.run([sys.executable, "-m", "torchcts", "replay", "--device", "faulty", "--strict"],
                           capture_output=True, text=True, cwd=cwd, timeout=1800,
                           env=dict(os.environ, TORCHCTS_FAULTY_BUGS=""))
    assert fixed.returncode == 0 and sum(line.startswith("now passing") for line in fixed.stdout.splitlines()) == 2
