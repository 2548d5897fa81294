"""Ctrl-C and SIGTERM end a command within seconds in every mode: items in the run's process, forked or in a
spawned worker, compiled, over pytest-xdist workers, fuzz and replay; with a backend kernel that blocks, also
one that masks signals (as a native call does) or swallows KeyboardInterrupt. "Ends": the exit status is
128 + the signal's number, no process of the command's group is left, and what was written is readable
(run.json partial with the true counts, or fuzz.json interrupted).

The blocking kernel is `torchcts.testing.blocking_kernel` (CPU's logaddexp, a manifest's backend_import), the
stuck compiler `torchcts_test_compile_sleeps`; both create a file when they begin to block and the signal is
sent then (polled, never a fixed sleep). The seconds from the signal to the exit are printed, not asserted:
SAFETY_NET_S is only a safety net, far above the watchdog's STOP_GRACE_S.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from torchcts import interrupts
from torchcts.manifest.targets import shipped_target
from torchcts.testing.blocking import HOW_ENV, STARTED_ENV
from torchcts.testing.compile_backends import COMPILE_SLEEPS, STARTED_ENV as COMPILE_STARTED_ENV
from tests import warm_programs

SAFETY_NET_S = 60  # for the exit after the signal; starting (torch, the plan) may take longer on a loaded machine
START_SAFETY_NET_S = 600
STUCK_LINE = "torchcts: still running"
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the process group")
RUN = ("run", "--device", "cpu", "--ops", "^logaddexp$", "--property", "forward", "--dtype", "float32", "--level", "1",
       "--results-dir", "results", "--no-report")


# -- the watchdog, in a small process ------------------------------------------------------------------------

WATCHDOG_SCRIPT = textwrap.dedent("""
    import sys
    from torchcts import interrupts
    from torchcts.testing.blocking import block
    final = interrupts.FinalWrite()
    if sys.argv[1] == "main-thread-writing":
        assert final.claim()  # the main thread began its own last write (and is stuck in it)

    def last_words():
        if final.claim():
            print("written by the watchdog", flush=True)

    with interrupts.handling(), interrupts.when_stuck(last_words):
        block()
""")


def _watchdog_process(how: str, tmp_path: Path) -> subprocess.Popen:
    """The script above, once it is blocked (`how`: masked, swallow; main-thread-writing blocks masked)."""
    started = tmp_path / "blocked"
    env = dict(os.environ, **{STARTED_ENV: str(started), HOW_ENV: "masked" if how == "main-thread-writing" else how})
    process = subprocess.Popen([sys.executable, "-c", WATCHDOG_SCRIPT, how], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    _wait_until_blocked(process, started)
    return process


@pytest.mark.slow
@pytest.mark.parametrize("how", ["masked", "swallow"])
def test_a_process_stuck_past_a_signal_is_ended_by_the_watchdog_with_its_last_write(how, tmp_path):
    process = _watchdog_process(how, tmp_path)
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=SAFETY_NET_S)
    print(f"stuck ({how}): ended {time.monotonic() - signalled:.1f} s after SIGTERM")
    assert process.returncode == 143, err
    assert out == "written by the watchdog\n"
    assert f"{STUCK_LINE} {interrupts.STOP_GRACE_S:.0f} s after SIGTERM" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_second_signal_ends_a_stuck_process_sooner_and_the_main_threads_write_is_not_doubled(tmp_path):
    process = _watchdog_process("main-thread-writing", tmp_path)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGTERM)  # another signal: two of the same may merge into one while pending
    out, err = process.communicate(timeout=SAFETY_NET_S)
    assert process.returncode in (130, 143), err  # 128 + the first the watchdog saw: both were pending at once
    assert out == ""  # the main thread had claimed the last write: the watchdog did not write it again
    assert f"{STUCK_LINE} after 2 signals" in err


FINISHING_SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from torchcts import disk, interrupts
    final = interrupts.FinalWrite()

    def last_words():
        if final.claim():
            print("written by the watchdog", flush=True)

    with interrupts.handling(), interrupts.when_stuck(last_words):
        try:
            Path(sys.argv[1]).touch()
            time.sleep(3600)
        except KeyboardInterrupt:
            signalled = time.monotonic()
            assert final.claim()  # the main thread writes run.json ...
            final.done()
            written = 0  # ... then the report: responsive Python work past the watchdog's first deadline
            while time.monotonic() - signalled < interrupts.STOP_GRACE_S + interrupts.AGAIN_GRACE_S:
                disk.write_atomic(f"report{written}.txt", "x" * 1000)
                written += 1
                time.sleep(0.05)
            print(f"finished {written}", flush=True)
""")


@pytest.mark.slow
def test_a_process_finishing_its_results_after_a_signal_is_not_cut_short_by_the_watchdog(tmp_path):
    started = tmp_path / "started"
    process = subprocess.Popen([sys.executable, "-c", FINISHING_SCRIPT, str(started)], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_until_blocked(process, started)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=SAFETY_NET_S + interrupts.FINISH_GRACE_S)
    finally:
        _kill_group(process.pid)
    assert process.returncode == 0, err  # the script caught the stop and ended on its own
    assert STUCK_LINE not in err and out.startswith("finished "), out + err
    written = int(out.split()[1])
    reports = sorted(tmp_path.glob("report*.txt"))
    assert len(reports) == written and all(p.read_text() == "x" * 1000 for p in reports)
    assert not list(tmp_path.glob(".report*.tmp"))  # no write cut part-way


EXIT_SCRIPT = textwrap.dedent("""
    import multiprocessing, subprocess, sys, time
    from torchcts import interrupts

    def stuck():  # a child with a child of its own (a compile worker's pool): both must end with the command
        subprocess.run([sys.executable, "-c", "import time; time.sleep(3600)"])

    if __name__ == "__main__":
        child = multiprocessing.get_context("fork").Process(target=stuck)  # not a daemon
        child.start()  # multiprocessing's exit handler joins it: forever, unless exit_now cuts it short
        while not [p for p in multiprocessing.active_children()] or not open(f"/proc/{child.pid}/task/{child.pid}/children").read().split():
            time.sleep(0.05)  # until the grandchild runs
        print(child.pid, flush=True)
        interrupts.exit_now(130)
""")


@pytest.mark.slow
@linux_only
def test_an_exit_handler_waiting_on_a_stuck_child_does_not_keep_a_stopped_command_running(tmp_path):
    script = tmp_path / "exits.py"
    script.write_text(EXIT_SCRIPT)
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=SAFETY_NET_S)
        _assert_group_ends(process.pid)  # the stuck child and its own child were killed, not left behind
    finally:
        _kill_group(process.pid)
    assert process.returncode == 130 and out.strip().isdigit(), out + err


# -- every mode, end to end ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def eager_folder(tmp_path_factory) -> Path:
    """A folder whose manifest.py is the shipped CPU target with the blocking logaddexp kernel."""
    folder = tmp_path_factory.mktemp("eager")
    text = shipped_target("cpu").path.read_text()
    assert '"backend_import": None' in text
    (folder / "manifest.py").write_text(text.replace('"backend_import": None',
                                                     '"backend_import": "torchcts.testing.blocking_kernel"'))
    return folder


@pytest.fixture(scope="module")
def compile_folder(tmp_path_factory) -> Path:
    """A folder whose manifest.py is the shipped aot_eager target importing the in-test compile backends."""
    folder = tmp_path_factory.mktemp("compiled")
    text = shipped_target("cpu", "aot_eager").path.read_text()
    (folder / "manifest.py").write_text(text.replace('"backend_import": None',
                                                     '"backend_import": "torchcts.testing.compile_backends"'))
    return folder


@pytest.fixture(scope="module")
def stored_case(eager_folder) -> Path:
    """A corpus case of forward::logaddexp: a run where the kernel answers wrong on every second call stores it.
    Unshrunk (--no-shrink): the case is only the replay's input, and any case of logaddexp calls the kernel that
    blocks; shrinking it (against a kernel wrong on every second call) was most of the run's CPU."""
    corpus = eager_folder / "corpus"
    found = warm_programs.run([sys.executable, "-m", "torchcts", *RUN[:-3], "--results-dir", "found-results",
                            "--no-report", "--no-shrink", "--corpus-dir", str(corpus)], cwd=eager_folder,
                           capture_output=True,
                           text=True, env=dict(os.environ, **{HOW_ENV: "wrong"}), timeout=START_SAFETY_NET_S)
    assert found.returncode == 1 and list(corpus.glob("*.json")), found.stdout[-3000:] + found.stderr[-3000:]
    return corpus


MODES = {  # mode: (command's arguments, how the kernel blocks, the signal, sent to the whole group)
    "in-process": (RUN, "sleep", signal.SIGINT, True),
    "in-process-report-on": (RUN[:-1], "sleep", signal.SIGTERM, False),  # the report is not written, never cut
    "in-process-masked": (RUN, "masked", signal.SIGTERM, False),
    "in-process-swallowed": (RUN, "swallow", signal.SIGINT, True),
    "forked": ((*RUN, "--subprocess-per-test"), "masked", signal.SIGTERM, False),
    "spawned": ((*RUN, "--subprocess-per-test", "--isolation-start", "spawn"), "masked", signal.SIGINT, True),
    "compiled-forked": ((*RUN, "--compile", COMPILE_SLEEPS), None, signal.SIGTERM, False),
    "compiled-spawned": ((*RUN, "--compile", COMPILE_SLEEPS, "--isolation-start", "spawn"), None, signal.SIGINT,
                         True),
    "xdist-masked": ((*RUN, "-n", "2"), "masked", signal.SIGTERM, False),
    "xdist": ((*RUN, "-n", "2"), "sleep", signal.SIGINT, True),
    "fuzz": (("fuzz", "--device", "cpu", "--ops", "^logaddexp$", "--dtype", "float32", "--budget", "1h",
              "--results-dir", "results", "--corpus-dir", "fuzz-corpus"), "masked", signal.SIGTERM, False),
    "replay-masked": (("replay", "--device", "cpu", "--results-dir", "results"), "masked", signal.SIGINT, True),
}
WATCHDOG_MODES = ("in-process-masked", "in-process-swallowed", "replay-masked")  # only the watchdog ends these


@linux_only
@pytest.mark.slow  # twelve commands, each starting torch and building its plan
@pytest.mark.parametrize("mode", list(MODES))
def test_a_signal_ends_the_command_within_seconds_leaving_no_process_and_readable_results(
        mode, request, tmp_path):
    args, how, sig, to_group = MODES[mode]
    folder = request.getfixturevalue("compile_folder" if how is None else "eager_folder")
    if mode.startswith("replay"):
        args = (*args, str(request.getfixturevalue("stored_case")))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "manifest.py").write_text((folder / "manifest.py").read_text())
    started = tmp_path / "blocked"
    env = dict(os.environ, **{STARTED_ENV: str(started), COMPILE_STARTED_ENV: str(started), HOW_ENV: how or "sleep"})
    process = subprocess.Popen([sys.executable, "-m", "torchcts", *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        _wait_until_blocked(process, started)
        signalled = time.monotonic()
        (os.killpg if to_group else os.kill)(process.pid, sig)
        output = process.communicate(timeout=SAFETY_NET_S)[0]
        exited = time.monotonic() - signalled
        _assert_group_ends(process.pid)
    finally:
        _kill_group(process.pid)
    print(f"{mode}: {sig.name}{' to the group' if to_group else ''}: exit {process.returncode} "
          f"{exited:.1f} s after the signal")
    assert process.returncode == interrupts.exit_code(sig), output[-3000:]
    assert (STUCK_LINE in output) == (mode in WATCHDOG_MODES), output[-3000:]
    if mode == "fuzz":
        summary = json.loads(next((cwd / "results").glob("fuzz-*/fuzz.json")).read_text())
        assert summary["interrupted"] and summary["signal"] == sig.name
        return
    (run_json,) = (cwd / "results").glob("*/run.json")
    summary = json.loads(run_json.read_text())
    records = [json.loads(line) for line in (run_json.parent / "records.jsonl").read_text().splitlines()]
    assert summary["status"] == "partial" and summary["interrupted"]["signal"] == sig.name, summary
    assert summary["counts"] == dict(collections.Counter(r["outcome"] for r in records))
    assert not any(r["outcome"] in ("crashed", "timed_out") for r in records)  # the stop is no crash of an item
    if mode == "in-process-report-on":  # a stopped run leaves its report to `torchcts report --from`: nothing half
        assert (f"torchcts: report not written (interrupted); `torchcts report --from results/{run_json.parent.name}`"
                f" writes it") in output, output[-3000:]
        assert not (run_json.parent / "report").exists()


def _wait_until_blocked(process: subprocess.Popen, started: Path) -> None:
    deadline = time.monotonic() + START_SAFETY_NET_S
    while not started.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not started.exists():
        _kill_group(process.pid)
        raise AssertionError(f"the kernel never blocked (exit {process.poll()}):\n"
                             f"{process.communicate(timeout=SAFETY_NET_S)[0][-3000:]}")


def _group(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2:].split()[2]) == pgid:  # state, ppid, pgrp
            members.append(int(stat.parent.name))
    return members


def _assert_group_ends(pgid: int) -> None:
    """No process of the command's group is left (one the kernel kills with its parent needs a moment)."""
    deadline = time.monotonic() + SAFETY_NET_S
    while (left := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes outlived the command: {left}"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def test_these_tests_never_replace_cpus_logaddexp_in_their_own_process():
    """The blocking kernel is installed only in the runs these tests start: a pytest-xdist worker running them goes on
    to run other tests that call CPU's logaddexp (which would block for an hour)."""
    import sys

    assert "torchcts.testing.blocking_kernel" not in sys.modules
    assert torch.logaddexp(torch.tensor([0.0]), torch.tensor([0.0])).item() == pytest.approx(0.6931, abs=1e-3)
