"""`--level` and `--dtype` change the claims a run tests, for that run only, and the evidence says so."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from torchcts.results.writer import read_records
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

MANIFEST = '''manifest = {"manifest_version": 1, "device_name": "faulty", "backend_import": "torchcts.testing.faulty",
    "semantic_level": 2, "supported_dtypes": {"float32": True, "bfloat16": False, "float16": "^sub"},
    "capabilities": {"inference": True, "training": True}}
'''


def cli(cwd, *args):
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, TORCHCTS_FAULTY_BUGS=""), timeout=900)


def test_level_and_dtype_from_the_command_line_are_tested_and_shown(tmp_path):
    (tmp_path / "manifest.py").write_text(MANIFEST)
    result = cli(tmp_path, "run", "--device", "faulty", "--dtype", "torch.bfloat16", "--level", "3", "--ops",
                 "^add$", "--derandomize", "--max-examples", "3", "--results-dir", "r")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "claims more than the manifest file: --dtype claims bfloat16 for every op (the manifest: False)" \
        in result.stderr
    folder = next((tmp_path / "r").glob("*/run.json")).parent
    records = {r["item"]: r for r in read_records(folder)}
    for item in ("forward::add::function::bfloat16", "inplace::add::inplace::bfloat16",  # levels 1 and 3
                 "out::add::out::bfloat16"):
        assert records[item]["outcome"] == "passed", item
    assert records["backward::add::function::bfloat16"]["outcome"] == "level_filtered"  # level 4
    assert records["forward::add::function::float32"]["outcome"] == "deselected"
    filtered = [r for r in records.values() if r["outcome"] == "level_filtered"]
    assert filtered and all("above --level 3 (the run's depth; the manifest's semantic_level is 2)" in r["reason"]
                            for r in filtered)
    environment = json.loads((folder / "run.json").read_text())["environment"]
    claims = environment["claims"]
    assert environment["level"] == 3 and claims["level"] == {"depth": 3, "source": "--level", "manifest": 2}
    assert claims["dtypes_added_by_command_line"] == {"bfloat16": "False"}
    assert claims["manifest_hash"] == environment["manifest_hash"] != claims["effective_manifest_hash"]
    scorecard = (folder / "report" / "scorecard.md").read_text()
    assert "**not the manifest file's**" in scorecard and "the manifest: False" in scorecard
    assert "--level 3 sets the run's depth (the manifest's semantic_level: 2)" in scorecard
    html = (folder / "report" / "report.html").read_text()
    assert 'id="claims"' in html and claims["effective_manifest_hash"][:16] in html
    junit = ElementTree.parse(folder / "report" / "junit.xml")
    names = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert "bfloat16" in names["claims_added_by_command_line"]


def test_a_run_of_the_files_claims_says_nothing_about_claims(tmp_path):
    (tmp_path / "manifest.py").write_text(MANIFEST)
    result = cli(tmp_path, "run", "--device", "faulty", "--dtype", "float32", "--level", "1", "--ops", "^add$",
                 "--derandomize", "--max-examples", "2", "--results-dir", "r")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "claims more than the manifest file" not in result.stderr  # a lower depth narrows; it claims nothing
    folder = next((tmp_path / "r").glob("*/run.json")).parent
    records = list(read_records(folder))
    assert any(r["outcome"] == "level_filtered" and "above --level 1" in r["reason"] for r in records)
    scorecard = (folder / "report" / "scorecard.md").read_text()
    assert "--level 1 sets the run's depth" in scorecard and "--dtype claims" not in scorecard
    assert json.loads((folder / "run.json").read_text())["environment"]["claims"]["dtypes_added_by_command_line"] == {}


def test_show_skips_plans_by_the_same_rule_and_says_the_claims_differ(tmp_path):
    (tmp_path / "manifest.py").write_text(MANIFEST)
    result = cli(tmp_path, "show-skips", "--device", "faulty", "--dtype", "bfloat16", "--level", "8", "--ops", "^add$",
                 "--list")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("this run's claims are not the manifest file's: --dtype claims bfloat16 for every op "
                          "(the manifest: False); --level 8 runs deeper than the manifest's semantic_level 2")
    assert "level_filtered" not in out  # --level 8: nothing is above the run's depth
    assert "inplace::add::inplace::bfloat16" in out and "backward::add::function::bfloat16" in out


def test_spawned_workers_test_the_runs_claims_not_the_files(tmp_path):
    # a spawned worker reloads the manifest file: it must apply --level and --dtype as the run did (and check the
    # run's effective fingerprint), or every isolated item would fail to start
    (tmp_path / "manifest.py").write_text(MANIFEST)
    result = cli(tmp_path, "run", "--device", "faulty", "--isolation-start", "spawn", "--subprocess-per-test",
                 "--level", "3", "--dtype", "bfloat16", "--ops", "^add$", "--derandomize", "--max-examples", "2",
                 "--results-dir", "r", "--no-report")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    folder = next((tmp_path / "r").glob("*/run.json")).parent
    executed = [r for r in read_records(folder) if r["outcome"] not in ("deselected", "level_filtered",
                                                                       "capability_not_declared", "runtime_unavailable")
                and not r["outcome"].startswith("dtype_")]
    assert {r["item"] for r in executed} >= {"forward::add::function::bfloat16", "inplace::add::inplace::bfloat16"}
    assert all(r["outcome"] == "passed" and r["isolated_by"] == "spawn" for r in executed), executed
