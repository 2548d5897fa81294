"""Manifest keys whose effect is the engine's or the run's: hypothesis.seed, show_traceback, custom_test_dirs."""

from __future__ import annotations

import json
import subprocess
import sys

from torchcts.plugin.launch import RunOptions, custom_test_dirs, pytest_arguments
from torchcts.results.writer import read_records

SMALL = ["--validation", "--level", "1", "--dtype", "float32", "--ops", "^abs$", "--property", "forward",
         "--max-examples", "1"]


def run(cwd, manifest, *args, results):
    command = [sys.executable, "-m", "torchcts", "run", "--manifest", str(manifest), "--results-dir", results,
               *SMALL, *args]
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=600)
    folder = next((cwd / results).glob("*/run.json")).parent
    return result, json.loads((folder / "run.json").read_text()), read_records(folder)


def test_the_manifests_hypothesis_seed_is_the_runs_seed_unless_the_command_line_says_otherwise(tmp_path,
                                                                                             write_manifest):
    manifest = write_manifest('manifest = dict(BASE, hypothesis={"seed": 4242})\n')
    result, summary, records = run(tmp_path, manifest, results="manifest_seed")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert summary["environment"]["seed"] == 4242 and not summary["environment"]["derandomize"]
    assert "seed 4242" in result.stdout
    _, again, records_again = run(tmp_path, manifest, results="again")
    passed = [{r["item"]: r["fingerprints"] for r in rs if r["outcome"] == "passed"} for rs in (records, records_again)]
    assert passed[0] == passed[1] and passed[0]
    _, given, _ = run(tmp_path, manifest, "--seed", "7", results="given")
    assert given["environment"]["seed"] == 7
    _, derandomized, _ = run(tmp_path, manifest, "--derandomize", results="derandomized")
    assert derandomized["environment"]["seed"] is None and derandomized["environment"]["derandomize"]


def test_run_collects_the_manifests_custom_test_dirs(tmp_path, write_manifest):
    (tmp_path / "suites").mkdir()
    manifest = write_manifest('manifest = dict(BASE, custom_test_dirs=["suites", "missing"])\n')
    options = RunOptions(device=None, manifest=manifest, validation=True)
    assert custom_test_dirs(options) == (str(tmp_path / "suites"),)  # resolved against the manifest; missing: left out
    args = pytest_arguments(options, custom_test_dirs(options))
    assert args[:3] == ["--pyargs", "torchcts.properties", str(tmp_path / "suites")]
    plain = write_manifest("manifest = BASE\n", name="plain.py")
    assert custom_test_dirs(RunOptions(device=None, manifest=plain)) == ()
