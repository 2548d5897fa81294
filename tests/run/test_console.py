"""The quiet console of `torchcts run` (torchcts.plugin.console): header, one progress line, one line per
finding, each missing kernel once, a summary; pytest's own output only when asked for.

The `Console` is tested directly with a screen that keeps what it is given; the end-to-end runs use
the faulty device with a seeded bug (`--no-shrink`, a few examples: seconds) in subprocesses.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchcts.manifest.templates import render_template
from torchcts.plugin.console import TOP_MISSING, Console, error_line
from torchcts.results.writer import RunWriter
from tests import warm_programs

BUG = "storage_offset_ignored"  # abs reads from its storage's start: forward::abs fails at level 1
FAILING = "forward::abs::function::float32"
RUN = ["run", "--device", "faulty", "--ops", "^abs$", "--dtype", "float32", "--level", "1", "--derandomize",
       "--max-examples", "4", "--no-shrink"]


class KeptScreen:
    """A screen that keeps its lines and its status rewrites."""

    def __init__(self, tty: bool):
        self.tty = tty
        self.lines: list[str] = []
        self.statuses: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)

    def status(self, text: str) -> None:
        self.statuses.append(text)

    def end_status(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def missing(item: str, overload: str) -> dict:
    return {"item": item, "property": "forward", "op": "x", "variant": None, "dtype": "float32", "level": 1,
            "outcome": "error", "reason": "the backend raised",
            "error_kind": "missing_kernel",
            "missing_kernel": {"overload": overload, "dispatch_key": "PrivateUse1"},
            "error": f"NotImplementedError: Could not run '{overload}' with arguments from the 'tiny' backend.\n"
                     + "CPU: registered at /pytorch/build/aten/src/ATen/RegisterCPU.cpp:1 [kernel]\n" * 40,
            "error_line": f"NotImplementedError: Could not run '{overload}' with arguments from the 'tiny' backend.",
            "counterexample": {"replay": f"torchcts replay corpus/{overload}.json --device tiny", "new": True}}


def failed(item: str) -> dict:
    return {"item": item, "property": "forward", "op": "x", "variant": None, "dtype": "float32", "level": 1,
            "outcome": "failed",
            "reason": "the backend's result differs from the CPU oracle's",
            "error": "faulty differs from CPU: output: nan at flat index 1\nsecond line\nthird line",
            "counterexample": {"replay": f"torchcts replay corpus/{item}.json --device faulty", "new": True}}


def test_a_missing_kernel_is_one_line_the_first_time_and_counted_after():
    screen = KeptScreen(tty=False)
    console = Console(total=40, screen=screen, progress=False)
    for index in range(18):
        console.item(missing(f"forward::zeros{index}::function::float32", "aten::zero_"))
    console.item(missing("forward::add::function::float32", "aten::add.out"))
    console.item(failed("forward::neg::function::float32"))
    console.item({"item": "forward::abs::function::float32", "outcome": "passed"})
    assert screen.lines == [
        "MISSING aten::zero_ (PrivateUse1): first hit by forward::zeros0::function::float32 | "
        "torchcts replay corpus/aten::zero_.json --device tiny",
        "MISSING aten::add.out (PrivateUse1): first hit by forward::add::function::float32 | "
        "torchcts replay corpus/aten::add.out.json --device tiny",
        "FAILED forward::neg::function::float32: faulty differs from CPU: output: nan at flat index 1 | "
        "torchcts replay corpus/forward::neg::function::float32.json --device faulty",
    ]
    assert console.done == 21 and console.problems == 20
    assert console.missing_line() == ("torchcts: 2 distinct kernels missing (19 items): aten::zero_ 18 items, "
                                      "aten::add.out 1 item")


def test_the_summary_names_the_top_ten_overloads():
    console = Console(total=100)  # no screen: a tally
    for rank in range(12):
        for index in range(12 - rank):
            console.item(missing(f"item{rank}-{index}", f"aten::op{rank:02d}"))
    line = console.missing_line()
    assert line.startswith("torchcts: 12 distinct kernels missing (78 items): aten::op00 12 items, aten::op01 11 items")
    assert line.count("aten::") == TOP_MISSING and f"(top {TOP_MISSING}; full list in the report" in line


def test_off_a_terminal_progress_is_a_plain_line_per_tenth_and_per_minute():
    screen, clock = KeptScreen(tty=False), Clock()
    console = Console(total=100, screen=screen, clock=clock)
    for _ in range(100):
        clock.now += 0.1
        console.item({"item": "x", "outcome": "passed"})
    assert len(screen.lines) == 10 and screen.lines[-1].startswith("torchcts: 100/100 items, 0 failed or errored")
    assert "~" in screen.lines[0] and "left" in screen.lines[0]  # an estimate while items remain
    slow = KeptScreen(tty=False)
    console = Console(total=1000, screen=slow, clock=clock)
    for _ in range(5):  # fewer than a tenth, a minute apart
        clock.now += 61
        console.item({"item": "x", "outcome": "passed"})
    assert len(slow.lines) == 5


def test_on_a_terminal_the_progress_line_is_rewritten_not_repeated():
    screen, clock = KeptScreen(tty=True), Clock()
    console = Console(total=50, screen=screen, clock=clock)
    for index in range(50):
        clock.now += 0.05
        console.item(failed(f"item{index}") if index == 10 else {"item": "x", "outcome": "passed"})
    assert len(screen.lines) == 1 and screen.lines[0].startswith("FAILED item10: ")  # only the finding is a line
    assert 2 <= len(screen.statuses) <= 20  # rewritten at most 5 times a second, and at the end
    assert screen.statuses[-1].startswith("torchcts: 50/50 items, 1 failed or errored")


def test_error_line_falls_back_to_the_first_line_of_the_error():
    assert error_line({"error": "\n\nRuntimeError: boom\n  more\n"}) == "RuntimeError: boom"
    assert error_line({"error_line": "NotImplementedError: no kernel", "error": "x"}) == "NotImplementedError: no kernel"
    assert error_line({"reason": "the backend raised"}) == "the backend raised"
    assert len(error_line({"error": "x" * 5000})) == 300


def test_run_json_groups_the_missing_kernels_of_the_records(tmp_path):
    writer = RunWriter(tmp_path, {"device": "tiny"}, run_id="run")
    for index in range(3):
        writer.record(missing(f"a{index}", "aten::zero_"))
    writer.record(missing("b", "aten::add.out"))
    writer.record(failed("c"))
    writer.close("complete")
    summary = json.loads((tmp_path / "run" / "run.json").read_text())
    assert summary["run_kind"] == "run"
    assert summary["missing_kernels"] == {"distinct": 2, "overloads": [
        {"overload": "aten::zero_", "dispatch_key": "PrivateUse1", "items": 3},
        {"overload": "aten::add.out", "dispatch_key": "PrivateUse1", "items": 1}]}


# -- end to end ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def faulty_manifest(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("console")
    (folder / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    return folder


def _torchcts(cwd: Path, *args: str, bugs: str = BUG) -> subprocess.CompletedProcess:
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs), timeout=900)


@pytest.mark.slow
def test_a_failing_run_prints_one_line_per_failure_and_writes_the_report(faulty_manifest):
    cwd = faulty_manifest
    result = _torchcts(cwd, *RUN, "--results-dir", "quiet")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    [failure] = [line for line in lines if line.startswith("FAILED ")]
    assert failure.startswith(f"FAILED {FAILING}: faulty differs from CPU") and " | torchcts replay " in failure
    assert "\r" not in result.stdout  # not a terminal: plain progress lines
    assert any(line.startswith("torchcts: 1/1 items, 1 failed or errored") for line in lines)
    for pytest_output in ("= FAILURES =", "short test summary", "Traceback", "suites/forward.py", "warnings summary"):
        assert pytest_output not in result.stdout, result.stdout
    assert len(lines) < 25, result.stdout  # header, probes, progress, one failure, summary
    folder = next((cwd / "quiet").glob("*/run.json")).parent
    assert sorted(p.name for p in (folder / "report").iterdir()) == ["junit.xml", "report.html", "scorecard.md",
                                                                      "summary.json"]
    assert f"torchcts: report in {folder.relative_to(cwd)}/report/" in result.stdout
    summary = json.loads((folder / "run.json").read_text())
    assert summary["run_kind"] == "run" and summary["missing_kernels"] == {"distinct": 0, "overloads": []}


@pytest.mark.slow
def test_pytest_output_comes_back_when_asked_for(faulty_manifest):
    result = _torchcts(faulty_manifest, *RUN, "--results-dir", "asked", "--no-report", "--", "-v", "--tb=short")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert re.search(r"test_forward\[forward::abs::function::float32\] FAILED", result.stdout)  # -v: a line per item
    assert "= FAILURES =" in result.stdout  # --tb given: pytest's failure blocks, short ones
    assert not any((faulty_manifest / "asked").glob("*/report"))


@pytest.mark.slow
def test_on_a_terminal_the_progress_line_rewrites_itself(faulty_manifest):
    """A real terminal (a pseudo-terminal): the progress line is rewritten with a carriage return."""
    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "torchcts", *RUN, "--results-dir", "tty", "--no-report"],
                               cwd=faulty_manifest, stdout=child, stderr=child, close_fds=True,
                               env=dict(os.environ, TORCHCTS_FAULTY_BUGS="", COLUMNS="200"))
    os.close(child)
    output = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(main)
    assert process.wait(timeout=900) == 0, output[-3000:]
    text = output.decode(errors="replace")
    assert re.search(r"\rtorchcts: 1/1 items, 0 failed or errored", text), text[-3000:]


@pytest.mark.slow
def test_plain_pytest_keeps_its_output_with_short_failure_text(faulty_manifest):
    result = warm_programs.run(
        [sys.executable, "-m", "pytest", "--pyargs", "torchcts.properties", "-p", "no:cacheprovider",
         "--manifest", "manifest.py", "--device", "faulty", "--ops", "^abs$", "--dtype", "float32", "--level", "1",
         "--derandomize", "--max-examples", "4", "--no-shrink", "--results-dir", "plain"],
        capture_output=True, text=True, cwd=faulty_manifest, env=dict(os.environ, TORCHCTS_FAULTY_BUGS=BUG),
        timeout=900)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    section = result.stdout.split(" FAILURES ", 1)[1].split("\n", 1)[1]
    block = section.split("torchcts: ", 1)[0].strip().splitlines()
    assert block[0].startswith("_") and FAILING in block[0]  # pytest's own section, kept
    assert block[1] == "failed: the backend's result differs from the CPU oracle's"
    assert block[2].startswith("faulty differs from CPU") and block[3].startswith("replay: torchcts replay ")
    assert block[4].startswith("full error: plain/") and len(block) == 5


def test_an_interrupt_whose_traceback_has_a_frame_without_a_line_is_still_reported():
    """CPython 3.11 gives a frame no line number when a signal's exception lands on an instruction without
    one (a second SIGTERM during a `with` block's exit); pytest's rendering then raised TypeError and an
    interrupted run exited 1 instead of 143 (CI, tests/hostile/test_signals.py)."""
    import types

    from torchcts.plugin.console import _renderable

    def raised_here():
        raise KeyboardInterrupt("stop")

    try:
        raised_here()
    except KeyboardInterrupt as exc:
        caught = exc
    lined = caught.__traceback__
    unlined = types.TracebackType(lined, sys._getframe(), 10**6, -1)  # an instruction past the code: no line
    assert unlined.tb_lineno is None
    excinfo = pytest.ExceptionInfo.from_exc_info((KeyboardInterrupt, caught, unlined))
    with pytest.raises(TypeError):
        excinfo.getrepr(funcargs=True)  # pytest's own rendering of it fails
    shown = _renderable(excinfo).getrepr(funcargs=True)
    assert "KeyboardInterrupt: stop" in shown.reprcrash.message
    assert "raised_here" in str(shown)  # the frames with lines are kept
