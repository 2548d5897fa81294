"""Manifest keys whose effect is the engine's or the run's: hypothesis.seed, show_traceback, custom_test_dirs."""

from __future__ import annotations

import json
import sys
import warnings

import pytest

from torchcts.plan import registry
from torchcts.report.data import build_report, load_run
from torchcts.results.writer import read_records
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

SMALL = ["--validation", "--level", "1", "--dtype", "float32", "--ops", "^abs$", "--property", "forward",
         "--max-examples", "1"]


def run(cwd, manifest, *args, results):
    command = [sys.executable, "-m", "torchcts", "run", "--manifest", str(manifest), "--results-dir", results,
               *SMALL, *args]
    result = warm_programs.run(command, capture_output=True, text=True, cwd=cwd, timeout=600)
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


CUSTOM_SUITE = """
from torchcts.plan.registry import ScenarioItems, register_property


@register_property("engine_custom_probe", capability="inference", level=1,
                   items=ScenarioItems(("round_trip",), ("float32",)))
def test_engine_custom_probe(cts):
    cts.run_each([1, 2], lambda case: None)
"""


def test_run_collects_and_runs_the_manifests_custom_test_dirs(tmp_path, write_manifest, monkeypatch):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "test_custom_probe.py").write_text(CUSTOM_SUITE)
    (tmp_path / "suites" / "test_helpers_only.py").write_text("HELPER = 1\n")  # registers nothing: one warning
    manifest = write_manifest('manifest = dict(BASE, custom_test_dirs=["suites"])\n')
    command = [sys.executable, "-m", "torchcts", "run", "--manifest", str(manifest), "--results-dir", "results",
               "--validation", "--level", "1", "--property", "engine_custom_probe", "--max-examples", "1"]
    result = warm_programs.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    folder = next((tmp_path / "results").glob("*/run.json")).parent
    record = {r["item"]: r for r in read_records(folder)}["engine_custom_probe::round_trip::scenario::float32"]
    assert record["outcome"] == "passed" and record["examples"] == 2
    environment = json.loads((folder / "run.json").read_text())["environment"]
    assert environment["property_capabilities"]["engine_custom_probe"] == "inference"
    assert (result.stdout + result.stderr).count("test_helpers_only.py: a suite file of custom_test_dirs that "
                                                 "registers no property") == 1
    # run.json's property map is the registry's, custom suites included, and the report's capability
    # table lists each property under the capability the registry says it proves
    registry.load()  # the installed suites, then a registry copy the custom one is added to (restored afterwards)
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", registry.RegistryWarning)
        registered = {spec.name: spec.capability for spec in registry.load([tmp_path / "suites"])}
    assert {"forward", "backward", "engine_custom_probe"} <= set(registered)
    assert environment["property_capabilities"] == registered
    table = {row["capability"]: row["properties"] for row in build_report(load_run(folder))["capabilities"]}
    assert set(table) == set(environment["capabilities"]) == {"inference", "device_api"}
    also = registry.also_proves_map().get("inference", [])
    assert table["inference"] == sorted({name for name, c in registered.items() if c == "inference"} | set(also))

