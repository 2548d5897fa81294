"""`torchcts run -n N`: one run over pytest-xdist workers.

The run folder holds one run: every item's record once, one run.json whose counts are the records'
own; a derandomized run gives each item the outcome and case fingerprints a single process gives it;
a worker that dies outside isolation leaves its item `crashed` and the run goes on; an interrupted
run is partial with its counts from the records. No assertion depends on the machine's speed: the
interruption waits for the first item to start, however long that takes, and the run it stops has far
more work left than any machine finishes between two polls.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest.templates import render_template
from torchcts.results.files import read_records, read_summary
from tests.shared_runs import shared_folder
from tests import warm_programs

pytestmark = pytest.mark.slow

RUN = ["run", "--validation", "--derandomize", "--level", "2", "--dtype", "float32",
       "--ops", "^(abs|add|sum|cat|where)$", "--max-examples", "4", "--no-report"]


def _torchcts(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=1800, env=env)


def _folder(results: Path) -> Path:
    [folder] = [path.parent for path in results.glob("*/run.json")]
    return folder


def _build_runs(cwd: Path) -> None:
    (cwd / "manifest.py").write_text(render_template("minimal", device_name="cpu"))
    single = _torchcts(cwd, *RUN, "--results-dir", "single", "--", "-k", "not cat")
    assert single.returncode == 0, single.stdout[-3000:] + single.stderr[-3000:]
    workers = _torchcts(cwd, *RUN, "--results-dir", "workers", "-n", "2", "--", "-k", "not cat")
    assert workers.returncode == 0, workers.stdout[-3000:] + workers.stderr[-3000:]
    (cwd / "workers.stdout").write_text(workers.stdout)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, str]:
    """The same derandomized run in one process and over two workers (pytest deselects `cat` in both), and the
    stdout of the run over workers; run once per test session, whichever xdist worker asks first."""
    cwd = shared_folder(tmp_path_factory, "xdist-single-and-workers", _build_runs)
    return _folder(cwd / "single"), _folder(cwd / "workers"), (cwd / "workers.stdout").read_text()


def test_workers_give_every_item_the_outcome_and_cases_of_a_single_process(runs):
    single, workers, _ = runs
    alone, spread = read_records(single), read_records(workers)
    assert len(spread) == len({record["item"] for record in spread})  # each item once (deselection too)
    by_item = {record["item"]: record for record in spread}
    assert by_item.keys() == {record["item"] for record in alone}
    executed = [record for record in alone if record["outcome"] == "passed"]
    assert len(executed) >= 6 and all(record.get("fingerprints") for record in executed)
    for record in alone:
        other = by_item[record["item"]]
        fields = ("reason", "fingerprints", "examples", "distinct_cases", "max_examples")
        assert (other["outcome"], *map(other.get, fields)) == (record["outcome"], *map(record.get, fields)), \
               record["item"]
    assert all(record["distinct_cases"] >= 1 and record["max_examples"] == 4 for record in executed)
    deselected = [r for r in spread if r.get("reason") == "deselected by pytest (-k, -m or --deselect)"]
    assert deselected and all(r["op"] == "cat" for r in deselected)


def test_one_run_json_counts_every_worker(runs):
    single, workers, stdout = runs
    summary = read_summary(workers)
    assert summary["environment"]["workers"] == 2
    assert summary["status"] == read_summary(single)["status"] == "partial"  # pytest's -k left items out of both
    assert summary["counts"] == dict(collections.Counter(r["outcome"] for r in read_records(workers)))
    assert summary["counts"] == read_summary(single)["counts"]
    assert read_summary(single)["environment"]["workers"] == 1
    assert f"results in workers/{workers.name}" in stdout
    probed = [json.loads(line) for line in (workers / "probes.jsonl").read_text().splitlines()]
    alone = [json.loads(line) for line in (single / "probes.jsonl").read_text().splitlines()]
    assert probed and len(probed) == len(alone)  # the controller probed, once for all workers


def test_a_worker_that_dies_leaves_its_item_crashed_and_the_run_goes_on(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    result = _torchcts(tmp_path, "run", "--device", "faulty", "--ops", "^(hypot|abs|neg)$", "--dtype", "float32",
                       "--property", "forward", "--derandomize", "--max-examples", "4", "--no-report",
                       "--known-segfault-policy", "off", "--adaptive-isolation", "off", "--results-dir", "r", "-n", "2",
                       env=dict(os.environ, TORCHCTS_FAULTY_BUGS="crash_hypot"))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    folder = _folder(tmp_path / "r")
    records = {r["item"]: r for r in read_records(folder)}
    crashed = records["forward::hypot::function::float32"]
    assert crashed["outcome"] == "crashed" and "worker" in crashed["reason"] and "crashed while running" in \
        crashed["error"]
    assert records["forward::abs::function::float32"]["outcome"] == "passed"
    assert records["forward::neg::function::float32"]["outcome"] == "passed"
    summary = read_summary(folder)
    assert summary["status"] == "complete" and summary["counts"]["crashed"] == 1
    assert "CRASHED forward::hypot::function::float32" in result.stdout


def test_an_interrupted_run_over_workers_is_partial_and_counted_from_its_records(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("minimal", device_name="cpu"))
    command = [sys.executable, "-m", "torchcts", "run", "--validation", "--derandomize", "--level", "2", "--dtype",
               "float32", "--max-examples", "200", "--no-report", "--results-dir", "r", "-n", "2"]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 1500  # a safety net: the wait is for the first item, not for a time
        while not any(path.stat().st_size for path in (tmp_path / "r").glob("*/started.jsonl")):
            assert process.poll() is None and time.monotonic() < deadline, "the run ended before an item started"
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the controller and its workers, as in a terminal
        output, _ = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, output[-3000:]
    folder = _folder(tmp_path / "r")
    summary, records = read_summary(folder), read_records(folder)
    assert summary["status"] == "partial" and summary["interrupted"]["signal"] == "SIGINT"
    assert summary["counts"] == dict(collections.Counter(r["outcome"] for r in records))
    assert len(records) == len({r["item"] for r in records})
    running = summary["interrupted"]["item"]
    assert running is None or running not in {r["item"] for r in records}


@pytest.mark.parametrize("value", ["x", "-1", "300"])
def test_a_bad_worker_count_is_one_line_and_exit_2(value, tmp_path):
    result = CliRunner().invoke(cli, ["run", "--validation", "-n", value, "--results-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "a worker count from 0 to 256, auto or logical" in result.output
