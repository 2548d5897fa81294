"""`torchcts run --isolation-start spawn` on the faulty device: isolated items run in spawned workers, a
crash and a hang are recorded, and the other items keep their outcomes.

As in tests/run/test_isolation.py, only a run whose one isolated item hangs (for an hour) gets a short
--item-timeout; the crash run keeps the default 900 s, a safety net no slow machine reaches.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import EXECUTED
from torchcts.results.writer import read_records
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

CRASH, HANG, ABS = ("forward::hypot::function::float32", "forward::logaddexp::function::float32",
                    "forward::abs::function::float32")
HANG_TIMEOUT_S = 4


def run(cwd, ops, bugs, *args):
    command = [sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--ops", ops, "--dtype", "float32",
               "--property", "forward", "--level", "2", "--derandomize", "--max-examples", "4",
               "--isolation-start", "spawn", "--adaptive-isolation", "off", *args]
    result = warm_programs.run(command, capture_output=True, text=True, cwd=cwd, timeout=1800,
                            env=dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs))
    folder = sorted((cwd / "results").glob("*/run.json"))[-1].parent
    return result, json.loads((folder / "run.json").read_text()), {r["item"]: r for r in read_records(folder)}


def executed(summary):
    return {outcome: n for outcome, n in summary["counts"].items() if outcome in EXECUTED}


@pytest.fixture
def cwd(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    return tmp_path


def test_subprocess_per_test_in_spawned_workers_records_the_crash_and_keeps_the_rest(cwd):
    result, summary, items = run(cwd, "^(hypot|abs)$", "crash_hypot", "--subprocess-per-test")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert summary["status"] == "complete" and executed(summary) == {"crashed": 1, "passed": 1}
    assert "every item" in summary["environment"]["isolation"]
    assert "a spawned worker" in summary["environment"]["isolation"]
    crashed = items[CRASH]
    assert crashed["outcome"] == "crashed" and crashed["signal"] == "SIGABRT" and crashed["isolated_by"] == "spawn"
    assert "Fatal Python error" in crashed["error"] and "_crash" in crashed["error"]  # the worker's last output
    passed = items[ABS]
    assert passed["outcome"] == "passed" and passed["examples"] > 0 and passed["isolated_by"] == "spawn"
    assert passed["isolated"] == "--subprocess-per-test"


def test_a_known_hang_in_a_spawned_worker_is_timed_out_and_the_run_completes(cwd):
    result, summary, items = run(cwd, "^(logaddexp|abs)$", "hang_logaddexp", "--item-timeout", str(HANG_TIMEOUT_S))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert summary["status"] == "complete" and executed(summary) == {"passed": 1, "timed_out": 1}
    hung = items[HANG]
    assert hung["outcome"] == "timed_out" and hung["isolated"].startswith("known crash rule")
    assert hung["isolated_by"] == "spawn" and hung["duration_s"] >= HANG_TIMEOUT_S
    assert items[ABS]["outcome"] == "passed" and "isolated" not in items[ABS]  # not isolated: in the run's process
