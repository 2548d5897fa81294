"""A compiler that never finishes does not hang a run: an isolated item whose compile is stuck is `timed_out`,
and Ctrl-C during a compile ends the run (exit 130, a partial run.json) long before the compile would end.

The stuck compiler is `torchcts_test_compile_sleeps` (torchcts.testing.compile_backends): it creates the file
named by $TORCHCTS_TEST_COMPILE_STARTED and sleeps an hour. Signals are sent once that file exists (polled, never
a fixed sleep); timeouts are safety nets far below the hour the compile would take.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchcts.manifest.targets import shipped_target
from torchcts.testing.compile_backends import COMPILE_SLEEPS, SLEEP_S, STARTED_ENV

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

SAFETY_NET_S = 300
assert SAFETY_NET_S * 4 < SLEEP_S  # a run that ends within the safety net did not wait for the compile
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks isolated items")


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    """A folder whose manifest.py is the shipped aot_eager target importing the in-test backends."""
    text = shipped_target("cpu", "aot_eager").path.read_text()
    assert '"backend_import": None' in text
    (tmp_path / "manifest.py").write_text(text.replace('"backend_import": None',
                                                       '"backend_import": "torchcts.testing.compile_backends"'))
    return tmp_path


def _start(cwd: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    started = cwd / "compile-started"
    env = dict(os.environ, **{STARTED_ENV: str(started)})
    process = subprocess.Popen([sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--compile", COMPILE_SLEEPS,
                                "--ops", "^add$", "--property", "forward", "--dtype", "float32", "--level", "1",
                                "--results-dir", "results", "--no-report", *args],
                               cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    return process, started


def _wait_for(started: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + SAFETY_NET_S
    while not started.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if not started.exists():
        process.kill()
        raise AssertionError(f"the compile never started (exit {process.poll()}):\n"
                             f"{process.communicate(timeout=SAFETY_NET_S)[0][-3000:]}")


def _records(cwd: Path) -> list[dict]:
    (folder,) = (cwd / "results").glob("*/")
    return [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]


@linux_only
@pytest.mark.parametrize("flags", [(), ("--subprocess-per-test",)], ids=["compiled-items-isolated", "everything"])
def test_a_stuck_compile_is_timed_out_and_the_run_goes_on(cwd, flags):
    """A compiled run forks every item (no flag needed): the stuck compile is the item's timeout."""
    process, started = _start(cwd, *flags, "--item-timeout", "20")
    _wait_for(started, process)  # the compile began, in the item's child
    output = process.communicate(timeout=SAFETY_NET_S)[0]
    assert process.returncode == 1, output[-3000:]
    (record,) = [r for r in _records(cwd) if r["item"] == "forward::add::function::float32"]
    assert record["outcome"] == "timed_out", record
    assert "still running after 20 s; killed" in record["reason"]


def test_ctrl_c_during_a_compile_ends_the_run_with_a_partial_result(cwd):
    process, started = _start(cwd)
    _wait_for(started, process)  # the compile began, in the item's forked child
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
    output = process.communicate(timeout=SAFETY_NET_S)[0]
    assert process.returncode == 130, output[-3000:]
    (run_json,) = (cwd / "results").glob("*/run.json")
    summary = json.loads(run_json.read_text())
    assert summary["status"] == "partial" and summary["interrupted"]["signal"] == "SIGINT"
    assert summary["interrupted"]["item"] in ("forward::add::function::float32", None)
