"""SIGTERM, SIGINT and SIGHUP stop a run cleanly: run.json partial with the counts of the records
written, exit 128 + the signal's number, no isolated child or fuzz worker left behind, and the
interrupted item is no crash evidence for the next run. A signal whose exception Python drops (a
finalizer, a gc callback) still stops the run.

End-to-end runs send their signal once the run has written an executed record (polled, never a
fixed sleep); timeouts are safety nets only.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from torchcts import interrupts
from torchcts.crashes.history import crash_evidence
from torchcts.engine.context import CaseContext
from torchcts.isolation.fork import run_forked
from torchcts.plan.catalog import find_op
from torchcts.plan.build import PlanItem
from torchcts.results.writer import RunWriter
from torchcts.strategies import opinfo_samples
from torchcts.engine.targets import Target
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import EXECUTED
from tests import warm_programs

SAFETY_NET_S = 300
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for child processes")


# -- the interrupt state ---------------------------------------------------------------------------

def test_each_signal_raises_interrupted_is_remembered_and_maps_to_128_plus_its_number():
    before = signal.getsignal(signal.SIGTERM)
    for sig, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)):
        with interrupts.handling():
            with pytest.raises(interrupts.Interrupted) as raised:
                os.kill(os.getpid(), sig)
                time.sleep(SAFETY_NET_S)  # interrupted long before
            assert raised.value.signum == sig and isinstance(raised.value, KeyboardInterrupt)
            assert interrupts.requested() == sig and interrupts.exit_code(interrupts.requested()) == code
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def test_a_signal_the_process_ignores_stays_ignored():
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with interrupts.handling():
            os.kill(os.getpid(), signal.SIGHUP)
            assert interrupts.requested() is None
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_deferred_holds_a_signal_until_the_block_ends():
    with interrupts.handling():
        with pytest.raises(interrupts.Interrupted):
            with interrupts.deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                finished = True  # the block runs to its end
        assert finished
        with interrupts.deferred(raise_at_end=False):
            os.kill(os.getpid(), signal.SIGINT)
        assert interrupts.requested() == signal.SIGTERM


# -- within an item ----------------------------------------------------------------------------------

def _context(max_examples: int = 50) -> CaseContext:
    item = PlanItem("forward", "add", "function", "float32", 1)
    return CaseContext(item=item, op=find_op("add"), dtype=torch.float32, target=Target("cpu"), manifest=None,
                       level=1, max_examples=max_examples, seed=1)


def _finalizer_that_meets_a_signal(sig: int):
    """A generator whose `finally` runs when it is collected, as an OpInfo sample generator's does;
    the signal lands there, so Python reports "Exception ignored" and drops the KeyboardInterrupt."""
    def samples():
        try:
            yield 1
        finally:
            os.kill(os.getpid(), sig)

    generator = samples()
    next(generator)
    return generator


def test_a_signal_dropped_by_a_finalizer_still_stops_the_item_at_its_next_case(monkeypatch):
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: dropped.append(unraisable.exc_type))
    cases = []

    def check(case):
        cases.append(case)
        if len(cases) == 1:
            generator = _finalizer_that_meets_a_signal(signal.SIGINT)
            del generator  # finalized here: the Interrupted raised in it is swallowed
            gc.collect()

    context = _context()
    with interrupts.handling():
        with pytest.raises(interrupts.Interrupted):
            context.run(opinfo_samples(context.op, context.dtype), check)
    assert dropped == [interrupts.Interrupted]  # Python dropped the exception ...
    assert len(cases) == 1 and context.examples == 1  # ... and the item stopped at its next case anyway


def test_a_keyboard_interrupt_inside_a_case_is_not_turned_into_a_failure():
    def check(case):
        raise KeyboardInterrupt

    context = _context()
    with pytest.raises(KeyboardInterrupt):
        context.run(opinfo_samples(context.op, context.dtype), check)
    assert context.examples == 1  # not retried, not shrunk, not reduced


@linux_only
def test_an_interrupted_parent_kills_its_isolated_child(tmp_path):
    pid_file = tmp_path / "child.pid"

    def work():
        pid_file.write_text(str(os.getpid()))
        time.sleep(SAFETY_NET_S)
        return "never"

    def signal_parent_once_the_child_runs():
        deadline = time.monotonic() + SAFETY_NET_S
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    with interrupts.handling():
        threading.Thread(target=signal_parent_once_the_child_runs, daemon=True).start()
        with pytest.raises(interrupts.Interrupted):
            run_forked(work, timeout_s=SAFETY_NET_S)
    child = int(pid_file.read_text())
    assert not Path(f"/proc/{child}").exists()  # killed and reaped, not left running or a zombie


@linux_only
def test_a_child_that_dies_after_the_first_poll_is_crashed_by_its_signal_and_reaped(tmp_path):
    pid_file = tmp_path / "child.pid"

    def work():
        pid_file.write_text(str(os.getpid()))
        time.sleep(1.0)  # outlives the parent's first 0.5 s poll, however fast the machine
        os.kill(os.getpid(), signal.SIGSEGV)

    result = run_forked(work, timeout_s=SAFETY_NET_S)
    assert result.status == "crashed" and result.signal_name == "SIGSEGV", result
    assert not Path(f"/proc/{pid_file.read_text()}").exists()  # reaped, not left a zombie


def test_a_partial_run_counts_what_is_on_disk_and_names_the_item_it_stopped_in(tmp_path):
    writer = RunWriter(tmp_path, {"device": "cpu"})
    writer.mark_started("forward::abs::function::float32")
    writer.record({"item": "forward::abs::function::float32", "property": "forward", "op": "abs",
                   "variant": "function", "dtype": "float32", "level": 1, "outcome": "passed"})
    writer.mark_started("forward::add::function::float32")  # an isolated child wrote this record ...
    with open(writer.folder / "records.jsonl", "a") as records:
        records.write(json.dumps({"item": "forward::add::function::float32", "outcome": "failed"}) + "\n")
    writer.mark_started("forward::mul::function::float32")  # ... and this item was cut short
    writer.close("partial", interrupted={"signal": "SIGTERM"})
    summary = json.loads((writer.folder / "run.json").read_text())
    assert summary["counts"] == {"failed": 1, "passed": 1}  # ... the parent never counted it
    assert summary["interrupted"] == {"signal": "SIGTERM", "item": "forward::mul::function::float32"}


# -- end to end ---------------------------------------------------------------------------------------

@pytest.fixture
def cwd(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    return tmp_path


def _start(cwd: Path, *args: str) -> subprocess.Popen:
    """`torchcts ARGS` in its own process group (as a CI job or a terminal's foreground job)."""
    return subprocess.Popen([sys.executable, "-m", "torchcts", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _start_run(cwd: Path, *args: str) -> subprocess.Popen:
    return _start(cwd, "run", "--validation", "--ops", "^(add|mul|sub|div)", "--level", "2", "--dtype", "float32",
                  "--max-examples", "200", "--results-dir", "results", *args)


def _wait_for_an_executed_record(process: subprocess.Popen, results: Path) -> Path:
    """The run's folder once records.jsonl holds a record of an item that ran (read incrementally)."""
    deadline = time.monotonic() + SAFETY_NET_S
    offset, pending = 0, b""
    while time.monotonic() < deadline and process.poll() is None:
        found = list(results.glob("*/records.jsonl"))
        if found:
            with open(found[0], "rb") as records:
                records.seek(offset)
                data = records.read()
            offset += len(data)
            *lines, pending = (pending + data).split(b"\n")
            if any(json.loads(line).get("outcome") in EXECUTED for line in lines if line):
                return found[0].parent
        time.sleep(0.1)
    output = process.communicate(timeout=SAFETY_NET_S)[0] if process.poll() is not None else ""
    raise AssertionError(f"the run never executed an item (exit {process.poll()}):\n{output[-3000:]}")


def _assert_group_ends(pgid: int) -> None:
    """Every process of the command's group ends (a child killed by the kernel needs a moment)."""
    deadline = time.monotonic() + SAFETY_NET_S
    while (left := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"processes outlived the command: {left}"


def _group(pgid: int) -> dict[int, str]:
    members = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()  # state, ppid, pgrp, ...
        if int(fields[2]) == pgid:
            members[int(stat.parent.name)] = text[:200]
    return members


def _records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]


def _assert_partial_with_true_counts(folder: Path) -> dict:
    summary = json.loads((folder / "run.json").read_text())
    assert summary["status"] == "partial" and not summary["complete"]
    records = _records(folder)
    assert summary["counts"] == dict(collections.Counter(r["outcome"] for r in records))
    assert summary["executed"] == sum(1 for r in records if r["outcome"] in EXECUTED)
    return summary


def _started(folder: Path) -> list[str]:
    return [json.loads(line)["item"] for line in (folder / "started.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_sigterm_stops_the_run_cleanly_and_the_next_run_does_not_isolate_the_item(cwd):
    process = _start_run(cwd)
    folder = _wait_for_an_executed_record(process, cwd / "results")
    process.send_signal(signal.SIGTERM)  # to the run alone, as `docker stop` does
    output = process.communicate(timeout=SAFETY_NET_S)[0]
    assert process.returncode == 143, output[-3000:]
    summary = _assert_partial_with_true_counts(folder)
    unrecorded = set(_started(folder)) - {r["item"] for r in _records(folder)}
    assert summary["interrupted"]["signal"] == "SIGTERM"
    assert summary["interrupted"]["item"] in unrecorded | {None}  # None: it landed between two items
    in_flight = summary["interrupted"]["item"] or _started(folder)[-1]
    prop, op, _, _ = in_flight.split("::")
    after = warm_programs.run([sys.executable, "-m", "torchcts", "run", "--validation", "--ops", f"^{re.escape(op)}$",
                            "--property", prop, "--level", "2", "--dtype", "float32", "--max-examples", "2",
                            "--adaptive-isolation", "auto", "--results-dir", "results"],
                           cwd=cwd, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert after.returncode == 0, after.stdout[-3000:]
    latest = max(p.parent for p in (cwd / "results").glob("*/run.json") if p.parent != folder)
    record = next(r for r in _records(latest) if r["item"] == in_flight)
    assert record["outcome"] == "passed" and "isolated" not in record
    assert "evidence" not in json.loads((latest / "run.json").read_text())["environment"]["isolation"]


@pytest.mark.slow
@linux_only
def test_ctrl_c_with_isolated_items_kills_the_child_and_leaves_no_evidence(cwd):
    process = _start_run(cwd, "--subprocess-per-test")
    folder = _wait_for_an_executed_record(process, cwd / "results")
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group, children too
    output = process.communicate(timeout=SAFETY_NET_S)[0]
    assert process.returncode == 130, output[-3000:]
    _assert_group_ends(process.pid)
    summary = _assert_partial_with_true_counts(folder)
    assert summary["interrupted"]["signal"] == "SIGINT"
    assert not crash_evidence(cwd / "results", summary["environment"])


@pytest.mark.slow
def test_a_second_sigterm_during_cleanup_still_leaves_a_partial_run(cwd):
    process = _start_run(cwd)
    folder = _wait_for_an_executed_record(process, cwd / "results")
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=SAFETY_NET_S)[0]
    assert process.returncode in (143, -signal.SIGTERM), output[-3000:]  # -15: it came after the handlers went
    summary = _assert_partial_with_true_counts(folder)
    assert not crash_evidence(cwd / "results", summary["environment"])


@pytest.mark.slow
@linux_only
def test_sigterm_ends_a_fuzz_hunt_and_its_workers(cwd):
    process = _start(cwd, "fuzz", "--device", "faulty", "--ops", "^add$", "--dtype", "float32", "--budget", "1h",
                     "--results-dir", "results", "--corpus-dir", "corpus")
    deadline = time.monotonic() + SAFETY_NET_S
    while time.monotonic() < deadline and process.poll() is None and \
            not any(b"spawn_main" in _cmdline(pid) for pid in _group(process.pid)):
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGTERM)  # as `timeout` does: the whole group, the starting worker too
    output = process.communicate(timeout=SAFETY_NET_S)[0]
    assert process.returncode == 143 and "Traceback" not in output, output[-3000:]
    _assert_group_ends(process.pid)
    summary = json.loads(next((cwd / "results").glob("fuzz-*/fuzz.json")).read_text())
    assert summary["interrupted"] and summary["signal"] == "SIGTERM"


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
