"""The shipped openvino target (manifests/targets/openvino.py): OpenVINO is never a TorchCTS dependency, so a
missing package is one line saying what to install (exit 2); with the package installed, `--compile openvino`
picks the shipped manifest and runs in its static shape mode. Tests that need OpenVINO skip without it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchcts.manifest import load_manifest
from torchcts.manifest.targets import install_hint, shipped_target
from tests import warm_programs

SAFETY_NET_S = 900
TARGET = shipped_target("cpu", "openvino")
needs_openvino = pytest.mark.skipif(importlib.util.find_spec("openvino") is None,
                                    reason="openvino is not installed (pip install openvino)")


def _torchcts(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    return warm_programs.run([sys.executable, "-m", "torchcts", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=SAFETY_NET_S, check=False)


def test_the_target_is_picked_by_compile_openvino_and_names_its_package():
    assert TARGET is not None and TARGET.name == "openvino" and TARGET.package == "openvino"
    manifest, warnings = load_manifest(TARGET.path)
    assert warnings == () and manifest.backend_import == "openvino.torch"
    assert manifest.compile.backend == "openvino" and manifest.compile.shape_mode == "static"
    assert install_hint("openvino.torch") == "pip install openvino" and install_hint("torch") is None


@pytest.mark.slow
def test_a_missing_openvino_is_one_line_saying_what_to_install(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # /work/ovsite-style installs are left out
    probe = warm_programs.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('openvino'))"],
                           env=env, capture_output=True, text=True, timeout=SAFETY_NET_S, check=True)
    if probe.stdout.strip() != "None":
        pytest.skip("openvino is installed in this interpreter itself: its absence cannot be seen here")
    result = _torchcts(tmp_path, env, "run", "--device", "cpu", "--compile", "openvino", "--ops", "^add$",
                       "--results-dir", "results", "--no-report")
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    errors = [line for line in (result.stdout + result.stderr).splitlines() if "openvino" in line and "ERROR" in line]
    assert len(errors) == 1 and "pip install openvino" in errors[0], result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    assert not list(tmp_path.glob("results/*/records.jsonl"))  # nothing ran


@needs_openvino
def test_compile_openvino_without_a_manifest_runs_the_shipped_target_in_static_shapes(tmp_path):
    result = _torchcts(tmp_path, dict(os.environ), "run", "--device", "cpu", "--compile", "openvino", "--ops",
                       "^(add|mul)$", "--property", "forward", "--dtype", "float32", "--max-examples", "3",
                       "--results-dir", "results", "--no-report")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"using the shipped openvino target manifest {TARGET.path}" in result.stderr
    (run_json,) = (tmp_path / "results").glob("*/run.json")
    environment = json.loads(run_json.read_text())["environment"]
    assert environment["compile"] == "openvino" and environment["compile_settings"]["shape_mode"] == "static"
    records = [json.loads(line) for line in (run_json.parent / "records.jsonl").read_text().splitlines()]
    ran = {r["item"]: r for r in records if r["outcome"] == "passed"}
    assert set(ran) == {"forward::add::function::float32", "forward::mul::function::float32"}
    assert all(r["compile"] == {"backend": "openvino", "shape_mode": "static", "mode": None, "options": {},
                                "fullgraph": False} for r in ran.values())
