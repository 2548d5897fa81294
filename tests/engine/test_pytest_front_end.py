"""pytest as a front end over the engine: -k, -x, --lf and --junitxml on `pytest --pyargs torchcts.properties`."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET

import pytest

from torchcts.manifest.templates import render_template
from torchcts.results.writer import read_records
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

FAILING = "layout::add::function::float32"  # the faulty device's noncontiguous_add bug


def pytest_run(cwd, *args, results):
    env = dict(os.environ, TORCHCTS_FAULTY_BUGS="noncontiguous_add", PYTHONHASHSEED="0")
    command = [sys.executable, "-m", "pytest", "--pyargs", "torchcts.properties", "--manifest", "manifest.py",
               "--device", "faulty", "--dtype", "float32", "--ops", "^(add|abs|mul)$", "--level", "2",
               "--derandomize", "--max-examples", "8", "--results-dir", results, "-q", *args]
    result = warm_programs.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    folder = next((cwd / results).glob("*/run.json")).parent
    return result, {r["item"]: r for r in read_records(folder)}, json.loads((folder / "run.json").read_text())


def test_k_x_junitxml_and_lf_work_on_the_property_suites(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    first, records, summary = pytest_run(tmp_path, "-k", "not mul", "-x", "--junitxml", "junit.xml", results="first")
    assert first.returncode == 1, first.stdout[-3000:]
    assert records[FAILING]["outcome"] == "failed" and "differs from CPU" in records[FAILING]["error"]
    assert f"failed: the backend's result differs from the CPU oracle's" in first.stdout
    executed = [r for r in records.values() if "duration_s" in r]
    assert [r["item"] for r in executed if r["outcome"] == "failed"] == [FAILING]  # -x: it stopped there
    assert summary["status"] == "partial" and len(executed) < summary["environment"]["planned_items"]
    mul = records["forward::mul::function::float32"]
    assert mul["outcome"] == "deselected" and "pytest" in mul["reason"]  # -k's accounting
    cases = ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    failures = [case.get("name") for case in cases if case.find("failure") is not None]
    assert failures == [f"test_layout[{FAILING}]"]

    again, records, _ = pytest_run(tmp_path, "--lf", results="again")  # pytest's cache from the first run
    assert again.returncode == 1, again.stdout[-3000:]
    ran = [r["item"] for r in records.values() if "duration_s" in r]
    assert ran == [FAILING]
    assert records["forward::abs::function::float32"]["outcome"] == "deselected"
