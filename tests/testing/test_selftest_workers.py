"""The selftest in several worker processes, with bugs sharing runs, gives the verdicts of one process running each
bug alone (the same bugs caught by the same items, the same clean findings), and SIGTERM stops it with a partial
report that says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from torchcts.testing import selftest_reach
from torchcts.testing.selftest import run_selftest

# Five bugs on three ops, in one dtype: a small selftest (one caught by layout, one by forward and layout, one by
# forward, two whose conditions hold where no failure shows; three of them share a run)
SMALL = dict(level=2, dtypes=("float32",), max_examples=10, only_phases=("opinfo",), ops=("^(add|mul|sum)$",),
             only_bugs=("noncontiguous_add", "expanded_mul", "tile_sum", "add_round_toward_zero", "sum_saturates_float32"))


def verdicts(report) -> dict:
    return {"bugs": {bug.name: (bug.detected, sorted(bug.failing_items), bug.reached_ops) for bug in report.bugs},
            "clean": (report.clean_failures, report.explained_clean_failures, report.incomplete_runs)}


@pytest.mark.slow
def test_two_workers_and_shared_runs_give_the_verdicts_of_one_worker_and_a_run_per_bug(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the runs start here: no project's pytest configuration around them
    lines: list[str] = []
    with monkeypatch.context() as alone:
        alone.setattr(selftest_reach, "GROUP_SIZE", 1)
        serial = run_selftest(results_dir=tmp_path / "serial", workers=1, progress=lines.append, **SMALL)
    assert not any("+" in line for line in lines)
    parallel = run_selftest(results_dir=tmp_path / "parallel", workers=2, progress=lines.append, **SMALL)
    assert verdicts(serial) == verdicts(parallel)
    assert verdicts(serial)["bugs"]["noncontiguous_add"][0] and not verdicts(serial)["bugs"]["tile_sum"][0]
    assert not serial.clean_failures and not serial.incomplete_runs and serial.interrupted is None
    assert any("(shard 2/2)" in line for line in lines)  # the parallel clean run was split
    assert any("bugs no item meets two conditions of" in line for line in lines)  # and bugs shared a run
    assert (tmp_path / "parallel" / "opinfo" / "noncontiguous_add" / "run.log").is_file()


@pytest.mark.slow
def test_sigterm_stops_the_runs_under_way_and_the_report_says_it_is_partial(tmp_path):
    command = [sys.executable, "-m", "torchcts", "selftest", "--phase", "suites", "--workers", "2",
               "--max-examples", "50", "--results-dir", str(tmp_path / "r")]
    child = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        seen = ""
        while "(shard 2/2)" not in seen:  # both clean parts started
            line = child.stdout.readline()
            assert line, seen
            seen += line
        clean = tmp_path / "r" / "suites" / "clean"
        deadline = time.monotonic() + 600  # a safety net
        while time.monotonic() < deadline and sum(  # both runs have started an item
                path.stat().st_size > 0 for path in clean.glob("shard-*/*/started.jsonl")) < 2:
            time.sleep(0.5)
        child.send_signal(signal.SIGTERM)
        output = seen + child.communicate(timeout=600)[0]
    finally:
        child.kill()
    assert child.returncode == 128 + signal.SIGTERM, output
    assert "selftest: SIGTERM: stopping the 2 runs under way" in output
    assert "selftest stopped by SIGTERM: partial results" in output
    assert "runs that did not complete (stopped): suites/clean 1/2, suites/clean 2/2" in output or \
        "runs that did not complete (stopped): suites/clean 2/2, suites/clean 1/2" in output
    assert "MISSED" not in output and "  NOT DONE " in output  # no verdict on a bug whose run never started
    for part in ("shard-1-of-2", "shard-2-of-2"):  # each run kept what it ran, marked partial
        (folder,) = [p for p in (tmp_path / "r" / "suites" / "clean" / part).iterdir() if p.is_dir()]
        assert '"status": "partial"' in (folder / "run.json").read_text()
