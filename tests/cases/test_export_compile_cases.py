"""The exported script of a case found under torch.compile reproduces it with torch and the backend alone: the device
runs the compiled op (the in-place call itself, for an in-place case), CPU's reference the eager op; on `cpu` both
run on one device, so a script that compiled the reference too could never reproduce anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchcts.cases.export import export_script
from torchcts.engine.compile_target import CompileSpec
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan.build import PlanItem
from torchcts.testing import compile_backends as backends

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    root = tmp_path_factory.mktemp("export-compile")
    (root / "manifest.py").write_text(render_template("complete", device_name="cpu")  # the script imports it too
                                      + 'manifest["backend_import"] = "torchcts.testing.compile_backends"\n')
    return EngineSettings(target=Target("cpu", CompileSpec(backends.WRONG_ADD, "static")),
                          manifest=load_manifest(root / "manifest.py")[0], level=1, max_examples=5,
                          versions=versions(), corpus_dir=root / "corpus", shrink=False,
                          found={"run_id": "export-compile-cases"})


def run_script(path, tmp_path, backend=None):
    """(exit status, output) of the exported script of the case at `path` (with its backend replaced by `backend`)."""
    if backend is not None:
        data = json.loads(path.read_text())
        data["backend"] = backend
        path = tmp_path / "other-backend.json"
        path.write_text(json.dumps(data))
    script = tmp_path / "repro.py"
    script.write_text(export_script(path, None))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("item", [PlanItem("forward", "add", "function", "float32", 1),
                                  PlanItem("inplace", "add", "inplace", "float32", 1),
                                  PlanItem("out", "add", "out", "float32", 1)], ids=lambda item: item.property)
def test_the_script_of_a_wrong_backend_s_case_reproduces_and_a_right_backend_s_does_not(settings, item, tmp_path):
    record = run_item(item, settings)
    assert record["outcome"] == "failed", record
    path = Path(record["counterexample"]["path"])
    status, output = run_script(path, tmp_path)
    assert status == 1 and "REPRODUCED on cpu" in output, output[-2000:]
    assert "\nLeg: backend (" in (tmp_path / "repro.py").read_text()  # the blamed leg, from the case
    status, output = run_script(path, tmp_path, backend="aot_eager")  # the same case through a right backend
    assert status == 0 and "not reproduced on cpu" in output, output[-2000:]
