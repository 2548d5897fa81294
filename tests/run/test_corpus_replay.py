"""The corpus end to end: a failing run writes shrunk cases, replay reruns them (CLI and pytest),
statuses track fixes and regressions, exported scripts reproduce, and fuzz finds and survives."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner

from torchcts.cases.files import load_case
from torchcts.cli.main import cli as torchcts_cli
from torchcts.results.writer import read_records
from torchcts.manifest.templates import render_template
from tests.shared_runs import shared_folder
from tests import warm_programs

BUG = "storage_offset_ignored"  # abs/neg/exp read from the storage's start, ignoring the offset


def cli(tmp_path, *args, bugs=""):
    env = dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs)
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)


def _find(folder):
    (folder / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    result = cli(folder, "run", "--device", "faulty", "--ops", "^(abs|add)$", "--dtype", "float32", "--level", "2",
                 "--derandomize", "--max-examples", "15", bugs=BUG)
    assert result.returncode == 1, result.stdout[-2000:]


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    """A run against the faulty device with BUG on: its folder, records and corpus (one run per test session,
    shared by every xdist worker: the tests only read it)."""
    folder = shared_folder(tmp_path_factory, "corpus-replay-found", _find)
    records = read_records(sorted((folder / "results").glob("*/run.json"))[-1].parent)
    return folder, {r["item"]: r for r in records}


@pytest.mark.slow
def test_failing_items_reference_small_shrunk_cases(found):
    folder, records = found
    record = records["forward::abs::function::float32"]
    assert record["outcome"] == "failed"
    reference = record["counterexample"]
    case = load_case(folder / reference["path"])
    assert case.fingerprint == reference["fingerprint"] and case.status == "open"
    assert reference["elements"] <= 4, reference  # reduced from a 20x20 sample
    assert case.sample().input.storage_offset() > 0  # the layout that triggers the bug is kept
    manifest = shlex.quote(str((folder / "manifest.py").resolve()))  # works from any folder, custom suites too
    assert reference["replay"] == f"torchcts replay {reference['path']} --device faulty --manifest {manifest}"
    assert records["forward::add::function::float32"]["counterexample"] is None  # passed: nothing stored


@pytest.mark.slow
def test_replay_reports_still_failing_then_fixed_then_regression(found, tmp_path):
    folder, records = found
    case_path = folder / records["forward::abs::function::float32"]["counterexample"]["path"]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / case_path.name).write_text(case_path.read_text())

    still = cli(tmp_path, "replay", "--device", "faulty", bugs=BUG)
    assert still.returncode == 0 and "still failing" in still.stdout, still.stdout[-2000:]
    assert cli(tmp_path, "replay", "--device", "faulty", "--strict", bugs=BUG).returncode == 1

    fixed = cli(tmp_path, "replay", "--device", "faulty", "--update-status")
    assert fixed.returncode == 0 and "now passing" in fixed.stdout and "open -> fixed" in fixed.stdout
    assert load_case(corpus / case_path.name).status == "fixed"

    again = cli(tmp_path, "replay", "--device", "faulty", bugs=BUG)
    assert again.returncode == 1 and "REGRESSION" in again.stdout, again.stdout[-2000:]


@pytest.mark.slow
def test_pytest_replays_the_corpus_and_a_broken_file_stops_nothing(found, tmp_path):
    folder, _ = found
    corpus = tmp_path / "cases"
    corpus.mkdir()
    for path in (folder / "corpus").glob("*.json"):
        (corpus / path.name).write_text(path.read_text())
    (corpus / "broken.json").write_text('{"schema_version": 1, "property": "forw')
    env = dict(os.environ, TORCHCTS_FAULTY_BUGS=BUG)
    result = warm_programs.run([sys.executable, "-m", "pytest", "--pyargs", "torchcts.properties", "-p", "no:cacheprovider",
                             "--replay", str(corpus), "--device", "faulty", "--results-dir", str(tmp_path / "r")],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert result.returncode == 1
    records = read_records(next((tmp_path / "r").glob("*/run.json")).parent)
    broken = [r for r in records if r["item"] == "replay::unreadable::broken.json"]
    assert broken and broken[0]["outcome"] == "error" and "broken.json" in broken[0]["error"]
    assert "(file)" in broken[0]["error"]
    replayed = [r for r in records if r["item"].startswith("replay::") and "unreadable" not in r["item"]]
    assert len(replayed) == len(list(corpus.glob("*.json"))) - 1
    assert all(r["outcome"] == "failed" for r in replayed)


@pytest.mark.slow
def test_exported_script_reproduces_with_torch_alone(found, tmp_path, monkeypatch):
    folder, records = found
    case_path = folder / records["forward::abs::function::float32"]["counterexample"]["path"]
    monkeypatch.chdir(tmp_path)  # exporting only writes text: `torchcts replay --export-script` in this process
    script = CliRunner().invoke(torchcts_cli, ["replay", "--export-script", str(case_path)])
    assert script.exit_code == 0 and "import torchcts" not in script.stdout, script.output[-2000:]
    path = tmp_path / "repro.py"
    path.write_text(script.stdout)
    # a torch-only script gets the faulty device from the development environment's autoload (TORCHCTS_FAULTY=1)
    on = warm_programs.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                        env=dict(os.environ, TORCHCTS_FAULTY="1", TORCHCTS_FAULTY_BUGS=BUG))
    assert on.returncode == 1 and "REPRODUCED" in on.stdout, on.stdout + on.stderr
    off = warm_programs.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, TORCHCTS_FAULTY="1", TORCHCTS_FAULTY_BUGS=""))
    assert off.returncode == 0 and "not reproduced" in off.stdout
    assert warm_programs.run([sys.executable, str(path), "cpu"], capture_output=True, timeout=300).returncode == 0


def test_every_curated_case_is_reviewed():
    """Only reviewed cases ship: each file in corpus/ has its entry in corpus/README.md."""
    from torchcts.cases.files import builtin_corpus

    readme = (builtin_corpus() / "README.md").read_text()
    files = sorted(builtin_corpus().glob("*.json"))
    assert files and all(f"`{path.name[:12]}`" in readme for path in files), [p.name for p in files]


@pytest.mark.slow
def test_builtin_corpus_still_fails_on_meta_and_passes_on_cpu(tmp_path):
    on_meta = cli(tmp_path, "replay", "--builtin", "--device", "meta")
    assert on_meta.returncode == 0, on_meta.stdout[-2000:]
    cases = [line for line in on_meta.stdout.splitlines() if line.startswith(("still failing", "now passing"))]
    assert cases and all(line.startswith("still failing") for line in cases)
    on_cpu = cli(tmp_path, "replay", "--builtin", "--device", "cpu", "--strict")
    assert on_cpu.returncode == 0 and "0 still failing" in on_cpu.stdout


@pytest.mark.slow
def test_builtin_inductor_cases_still_fail_under_inductor_only(tmp_path):
    """The curated cases found under torch.compile(backend="inductor") replay there (and only there: the eager
    replays above never take them)."""
    from torchcts.cases.files import builtin_cases, load_case

    compiled = builtin_cases("inductor")
    assert compiled and all(load_case(path).backend == "inductor" for path in compiled)
    assert not set(compiled) & set(builtin_cases(None))
    under_inductor = cli(tmp_path, "replay", "--builtin", "--device", "cpu", "--compile", "inductor")
    cases = [line for line in under_inductor.stdout.splitlines() if line.startswith(("still failing", "now passing"))]
    assert len(cases) == len(compiled) and all(line.startswith("still failing") for line in cases), \
        under_inductor.stdout[-3000:]


@pytest.mark.slow
def test_fuzz_finds_a_bug_within_a_visit_budget(tmp_path):
    """Visits, not seconds, bound the hunt: seed 2's first visit finds the bug on any machine.
    (Fuzz past a crash: tests/run/test_isolation.py.)"""
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    result = cli(tmp_path, "fuzz", "--device", "faulty", "--ops", "^abs$", "--dtype", "float32",
                 "--property", "forward", "--level", "2", "--max-visits", "2", "--seed", "2",
                 "--task-timeout", "1800", bugs=BUG)  # a safety net: shrinking is slow on a busy machine
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads(next((tmp_path / "results").glob("fuzz-*/fuzz.json")).read_text())
    assert summary["visits"] == 2 and summary["seed"] == 2
    abs_item = {item["item"]: item for item in summary["items"]}["forward::abs::function::float32"]
    assert abs_item["tasks"] == 2 and abs_item["examples"] > 0 and abs_item["first_failure_visit"] == 1
    assert 2 <= abs_item["distinct_cases"] <= abs_item["examples"]  # at least one case in each visit's record
    assert abs_item["new_cases"] and abs_item["first_failure_s"] is not None
    case = load_case(tmp_path / abs_item["new_cases"][0]["path"])
    assert case.found["derandomize"] is False and "fuzz_seed" in case.found
    assert "torchcts replay" in result.stdout


@pytest.mark.slow
def test_fuzz_stops_cleanly_on_ctrl_c_keeping_its_cases(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    env = dict(os.environ, TORCHCTS_FAULTY_BUGS=BUG)
    process = subprocess.Popen([sys.executable, "-m", "torchcts", "fuzz", "--device", "faulty", "--ops", "^abs$",
                                "--dtype", "float32", "--property", "forward", "--level", "2", "--max-visits", "50",
                                "--seed", "2", "--task-timeout", "1800"],  # seed 2 finds the bug on its first visit
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    for line in process.stdout:  # wait for the first case found
        if "new case:" in line:
            break
    process.send_signal(signal.SIGINT)
    output = process.communicate(timeout=600)[0]
    assert process.returncode == 130 and "interrupted" in output  # 128 + SIGINT
    summary = json.loads(next((tmp_path / "results").glob("fuzz-*/fuzz.json")).read_text())
    assert summary["interrupted"] and summary["visits"] < 50  # stopped by Ctrl-C, not by its budget
    assert list((tmp_path / "corpus").glob("*.json"))


@pytest.mark.parametrize("option, value", [("--budget", "0s"), ("--budget", "ten minutes"), ("--budget", "9" * 400),
                                           ("--max-visits", "0"), ("--max-visits", "-3"), ("--max-visits", "ten"),
                                           ("--task-timeout", "nan")])
def test_fuzz_rejects_a_bad_budget(tmp_path, monkeypatch, option, value):
    """Refused while the options are read, before anything is planned: in this process (a crash is exit 1 here)."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(torchcts_cli, ["fuzz", "--device", "faulty", option, value])
    assert result.exit_code == 2 and option in result.stderr and "Traceback" not in result.stderr, result.output
    assert not (tmp_path / "results").exists()


SCENARIO_SUITE = '''
from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.strategies import place


@register_property("clone_scenario", capability="inference", level=1, items=ScenarioItems(["plain_clone"], ["float32"]))
def test_clone_scenario(cts):
    def check(case):
        clone = lambda cts, sample, target: place(sample.input, target.device).value.clone()
        cts.assert_matches(cts.on_device_call(clone, case.sample), cts.on_cpu_call(clone, case.sample))

    cts.run(None, check)
'''


@pytest.mark.slow
def test_a_custom_scenario_case_replays_from_another_folder_with_its_manifest(tmp_path):
    """The replay command a failure prints names the manifest: a custom suite's case replays from anywhere."""
    import torch
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.cases.files import new_case, write_case

    project = tmp_path / "project"
    (project / "suites").mkdir(parents=True)
    (project / "suites" / "test_clone_scenario.py").write_text(SCENARIO_SUITE)
    manifest = project / "manifest.py"
    manifest.write_text(render_template("minimal", device_name="cpu") + '\nmanifest["custom_test_dirs"] = ["suites"]\n')
    case = new_case(prop="clone_scenario", op="plain_clone", variant="scenario", dtype="float32", device_type="cpu",
                    backend=None, sample=SampleInput(torch.arange(6.0).view(2, 3)[:, 1:]),
                    failure={"message": "differs"}, found={}, description="")
    path, _ = write_case(project / "corpus", case)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    unknown = cli(elsewhere, "replay", str(path), "--device", "cpu")  # no manifest here: the property is unknown
    assert unknown.returncode == 2 and "clone_scenario" in unknown.stdout, unknown.stdout[-2000:]
    result = cli(elsewhere, "replay", str(path), "--device", "cpu", "--manifest", str(manifest))
    assert result.returncode == 0 and "now passing" in result.stdout, (result.stdout + result.stderr)[-3000:]
