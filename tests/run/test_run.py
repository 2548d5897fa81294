"""`torchcts run` end to end: records, accounting, run summary, detection, determinism, partial runs,
and targets other than an eager device (meta, torch.compile) and the backward property."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.results.writer import read_records
from torchcts.manifest.templates import render_template
from tests.shared_runs import shared_folder
from tests import warm_programs

OPS = "^(add|abs|mul|sort|view)$"


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="faulty"))
    return path


def run(tmp_path, manifest, *args, bugs="", results="results"):
    env = dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs)
    command = [sys.executable, "-m", "torchcts", "run", "--manifest", str(manifest), "--dtype", "float32",
               "--ops", OPS, "--results-dir", str(tmp_path / results), "--max-examples", "8", *args]
    result = warm_programs.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    folders = sorted((tmp_path / results).glob("*/run.json"))
    return result, (folders[-1].parent if folders else None)


def by_item(records):
    return {r["item"]: r for r in records}


VALIDATION = ("--validation", "--level", "3", "--derandomize")


def _build_validation(folder):
    """The derandomized validation run that two tests read: its exit status and output beside its results."""
    (folder / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    result, run_folder = run(folder, folder / "manifest.py", *VALIDATION)
    (folder / "outcome.json").write_text(json.dumps({"returncode": result.returncode, "stdout": result.stdout,
                                                     "run": run_folder.name if run_folder else None}))


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    """One derandomized validation run (level 3) for the session: (exit status, stdout, run folder, manifest)."""
    folder = shared_folder(tmp_path_factory, "test-run-validation", _build_validation)
    outcome = json.loads((folder / "outcome.json").read_text())
    run_folder = folder / "results" / outcome["run"] if outcome["run"] else None
    return outcome["returncode"], outcome["stdout"], run_folder, folder / "manifest.py"


@pytest.mark.slow
def test_validation_run_passes_and_accounts_for_everything(validation):
    returncode, stdout, folder, _ = validation
    assert returncode == 0, stdout[-3000:]
    summary = json.loads((folder / "run.json").read_text())
    records = read_records(folder)
    assert summary["status"] == "complete" and summary["complete"]
    assert summary["environment"]["derandomize"] and summary["environment"]["seed"] is None
    assert summary["environment"]["manifest_hash"] and summary["environment"]["hardware_key"].startswith("cpu:")
    executed = [r for r in records if r["outcome"] in ("passed", "failed", "error")]
    assert executed and all(r["outcome"] == "passed" for r in executed)
    assert summary["counts"]["passed"] == len([r for r in records if r["outcome"] == "passed"])
    items = by_item(records)
    assert items["forward::add::function::float32"]["examples"] == 8
    assert len(items["forward::add::function::float32"]["fingerprints"]) == 8
    assert items["inplace::add::inplace::float32"]["outcome"] == "passed"
    # not run, with reasons: other ops, other dtypes, the level
    assert items["forward::sub::function::float32"]["outcome"] == "deselected"
    assert items["forward::add::function::float64"]["outcome"] == "deselected"
    assert all(r["reason"] for r in records if r["outcome"] not in ("passed",))


@pytest.mark.slow
def test_a_seeded_bug_fails_the_run_and_its_record_says_why(tmp_path, manifest):
    result, folder = run(tmp_path, manifest, "--device", "faulty", "--level", "2", "--derandomize",
                         bugs="noncontiguous_add")
    assert result.returncode == 1
    items = by_item(read_records(folder))
    failed = items["layout::add::function::float32"]
    assert failed["outcome"] == "failed"
    assert "differs from CPU" in failed["error"] and "strides" in failed["error"]
    assert items["forward::abs::function::float32"]["outcome"] == "passed"


@pytest.mark.slow
def test_device_errors_are_errors_not_skips(tmp_path, manifest):
    result, folder = run(tmp_path, manifest, "--device", "faulty", "--level", "1", "--derandomize",
                         "--ops", "^hypot$", bugs="")
    assert result.returncode == 0
    records = read_records(folder)
    assert by_item(records)["forward::hypot::function::float32"]["outcome"] == "passed"


@pytest.mark.slow
def test_derandomized_runs_execute_identical_cases(tmp_path, validation):
    """A second run with the validation run's flags draws the same cases (level 3: every level-2 item and more)."""
    _, _, first, manifest = validation
    _, second = run(tmp_path, manifest, *VALIDATION, results="b")
    prints = [{r["item"]: r.get("fingerprints") for r in read_records(f) if r["outcome"] == "passed"}
              for f in (first, second)]
    assert prints[0] == prints[1] and any(prints[0].values())


@pytest.mark.slow
def test_seeded_runs_repeat_with_the_printed_seed(tmp_path, manifest):
    result, first = run(tmp_path, manifest, "--validation", "--level", "1", "--seed", "1234", results="a")
    _, second = run(tmp_path, manifest, "--validation", "--level", "1", "--seed", "1234", results="b")
    assert "seed 1234" in result.stdout
    assert json.loads((first / "run.json").read_text())["environment"]["seed"] == 1234
    prints = [{r["item"]: r.get("fingerprints") for r in read_records(f)} for f in (first, second)]
    assert prints[0] == prints[1]


@pytest.mark.slow
def test_interrupted_run_keeps_its_records_and_is_partial(tmp_path, manifest):
    command = [sys.executable, "-m", "torchcts", "run", "--manifest", str(manifest), "--validation", "--dtype",
               "float32", "--level", "2", "--max-examples", "20", "--results-dir", str(tmp_path / "results")]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 900  # a safety net: a busy machine may take minutes to start the run
    records_file = None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list((tmp_path / "results").glob("*/records.jsonl"))
        if found and sum(1 for line in found[0].read_text().splitlines() if '"passed"' in line) >= 5:
            records_file = found[0]
            break
        time.sleep(0.5)
    assert records_file is not None, "the run never got going"
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=600)
    summary = json.loads((records_file.parent / "run.json").read_text())
    assert summary["status"] == "partial" and not summary["complete"]
    records = read_records(records_file.parent)
    assert sum(r["outcome"] == "passed" for r in records) >= 5


def test_bad_run_arguments_exit_2():
    result = CliRunner().invoke(cli, ["run"])
    assert result.exit_code == 2 and "--device" in result.output


# -- targets and the backward property ---------------------------------------------------------

@pytest.mark.slow
def test_meta_compares_metadata_and_calls_data_dependent_cases_unavailable(tmp_path, manifest):
    result, folder = run(tmp_path, manifest, "--device", "meta", "--level", "3", "--derandomize",
                         "--ops", "^(add|nonzero|masked_select|mm|tensor_split|gather)$")
    items = by_item(read_records(folder))
    # meta sees no values: gather's out-of-range index cases are unavailable there, the rest must raise
    assert items["errors::gather::function::float32"]["outcome"] == "passed"
    assert 0 < items["errors::gather::function::float32"]["unavailable_cases"] < \
        items["errors::gather::function::float32"]["examples"]
    for name in ("forward::add::function::float32", "forward::mm::function::float32",
                 "forward::tensor_split::function::float32", "out::add::out::float32"):
        assert items[name]["outcome"] == "passed", items[name]
    for name in ("forward::nonzero::function::float32", "forward::masked_select::function::float32"):
        assert items[name]["outcome"] == "runtime_unavailable"
        assert "data-dependent" in items[name]["reason"] and "meta" in items[name]["reason"]
    # no Meta kernel for masked_select's data-dependent output: its error inputs are unavailable, not a missing kernel
    assert items["errors::masked_select::function::float32"]["outcome"] == "runtime_unavailable"
    probes = [json.loads(line) for line in (folder / "probes.jsonl").read_text().splitlines()]
    assert probes and all(p["status"] == "no_probe" and "meta" in p["error"] for p in probes)  # meta holds no data
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.slow
def test_compiled_ops_are_compared_with_eager_cpu(tmp_path, manifest):
    result, folder = run(tmp_path, manifest, "--device", "cpu", "--compile", "aot_eager", "--level", "1",
                         "--derandomize", "--ops", "^(add|sum)$", "--max-examples", "3")
    assert result.returncode == 0, result.stdout[-3000:]
    assert json.loads((folder / "run.json").read_text())["environment"]["compile"] == "aot_eager"
    items = by_item(read_records(folder))
    assert items["forward::add::function::float32"]["outcome"] == "passed"
    assert items["forward::add::function::float32"]["examples"] == 3


@pytest.mark.slow
def test_backward_gradients_match_on_cpu_and_a_bug_in_backward_is_caught(tmp_path, manifest):
    args = ("--level", "4", "--derandomize", "--property", "backward", "--ops", "^(mul|abs|sort)$")
    result, folder = run(tmp_path, manifest, "--validation", *args, results="clean")
    assert result.returncode == 0, result.stdout[-3000:]
    items = by_item(read_records(folder))
    assert {items[f"backward::{op}::function::float32"]["outcome"] for op in ("mul", "abs", "sort")} == {"passed"}
    # mul's gradient is a mul: a bfloat16 rounding bug in mul shows in the gradients
    result, folder = run(tmp_path, manifest, "--device", "faulty", *args, "--dtype", "bfloat16",
                         bugs="bfloat16_mul", results="buggy")
    items = by_item(read_records(folder))
    assert items["backward::mul::function::bfloat16"]["outcome"] == "failed"
    assert items["backward::abs::function::bfloat16"]["outcome"] == "passed"
