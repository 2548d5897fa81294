"""The manifests shipped for real targets (manifests/targets/) and how a command picks one without --manifest.

Every shipped manifest loads and passes `check-manifest --strict`; `run --device meta` and `run --validation` in
an empty folder use the shipped meta and cpu manifests and complete a tiny run; a device with no shipped
manifest is one line (exit 2) listing the targets; ./manifest.py and --manifest still win.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest import load_manifest
from torchcts.manifest.targets import TARGETS, resolve_manifest, shipped_target
from torchcts.manifest.vocabulary import CAPABILITIES
from torchcts.results.writer import read_records
from tests import warm_programs

# probed on this machine (cpu, meta, torch.compile on cpu) or reviewed from torch's documentation only
PROBED = ("cpu", "meta", "inductor", "aot_eager", "openvino")
NOT_PROBED = ("cuda", "mps", "xpu")


def test_the_targets_are_the_shipped_files():
    folder = TARGETS[0].path.parent
    assert sorted(p.stem for p in folder.glob("*.py")) == sorted(t.name for t in TARGETS)
    assert sorted(PROBED + NOT_PROBED) == sorted(t.name for t in TARGETS)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_each_shipped_manifest_loads_and_claims_every_capability_explicitly(target):
    manifest, warnings = load_manifest(target.path)
    assert warnings == ()
    assert manifest.device_name == target.device_type
    text = target.path.read_text()
    assert all(f'"{name}":' in text for name in CAPABILITIES), "every capability is listed, True or False"
    assert all(len(line) <= 120 for line in text.splitlines())
    header = text.split("manifest = {")[0]
    assert ("NOT probed" in header) == (target.name in NOT_PROBED), header
    assert "torch 2.13" in header


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_check_manifest_strict_picks_the_shipped_manifest_by_device(target, tmp_path, monkeypatch):
    if target.package is not None and importlib.util.find_spec(target.package) is None:
        pytest.skip(f"{target.package} is not installed: --strict fails on the missing package's warning "
                    "(tests/manifest/test_openvino_target.py checks that line)")
    monkeypatch.chdir(tmp_path)
    args = ["check-manifest", "--strict", "--device", target.device_type]
    args += ["--compile", target.compile_backend] if target.compile_backend else []
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert f"using the shipped {target.name} target manifest {target.path}" in result.output
    assert f"{target.path}: valid manifest" in result.output


def test_resolution_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    meta = shipped_target("meta")
    assert resolve_manifest(None, "meta") == (meta.path, meta)
    assert shipped_target("cuda:1").name == "cuda" and shipped_target("cpu", "inductor").name == "inductor"
    assert shipped_target("cpu", "eager") is None and shipped_target(None) is None
    given = tmp_path / "mine.py"
    assert resolve_manifest(given, "meta") == (given, None)
    (tmp_path / "manifest.py").write_text("manifest = {}\n")
    assert resolve_manifest(None, "meta") == (Path("manifest.py"), None)
    assert resolve_manifest(None, "nosuchdevice", required=False) == (Path("manifest.py"), None)


@pytest.mark.parametrize("args", [("run", "--device", "nosuchdevice"), ("show-skips", "--device", "nosuchdevice"),
                                  ("fuzz", "--device", "nosuchdevice"), ("check-manifest",),
                                  ("run", "--device", "meta", "--compile", "inductor")])
def test_no_manifest_for_the_device_is_one_line_listing_the_targets(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert "manifest.py: manifest file not found" in line and "shipped targets:" in line
    for target in TARGETS:
        assert f"{target.name} ({target.flags()})" in line


def _torchcts(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return warm_programs.run([sys.executable, "-m", "torchcts", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=900, check=False)


@pytest.mark.slow
@pytest.mark.parametrize("device_args, target", [(("--device", "meta"), "meta"), (("--validation",), "cpu")])
def test_a_tiny_run_without_a_manifest_uses_the_shipped_target(device_args, target, tmp_path):
    result = _torchcts(tmp_path, "run", *device_args, "--ops", "^abs$", "--max-examples", "2", "--dtype", "float32",
                       "--results-dir", "results", "--no-report")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    path = next(t for t in TARGETS if t.name == target).path
    assert f"using the shipped {target} target manifest {path}" in result.stderr
    (run_json,) = (tmp_path / "results").glob("*/run.json")
    assert json.loads(run_json.read_text())["environment"]["manifest"] == str(path)
    records = read_records(run_json.parent)
    executed = [r for r in records if r["outcome"] not in ("deselected", "level_filtered", "capability_not_declared",
                                                           "dtype_not_listed", "dtype_not_supported")]
    assert executed and {r["outcome"] for r in executed} <= {"passed", "runtime_unavailable", "cpu_contract"}
    assert any(r["item"] == "forward::abs::function::float32" and r["outcome"] == "passed" for r in records)


def test_plain_pytest_without_a_manifest_uses_the_shipped_target(tmp_path, monkeypatch, capsys):
    from torchcts.run_setup.manifest_load import manifest_path
    from torchcts.run_setup.request import RunRequest

    monkeypatch.chdir(tmp_path)
    options = RunRequest(compile="inductor")
    assert manifest_path(options, "cpu", replaying=False) == shipped_target("cpu", "inductor").path
    assert "shipped inductor target manifest" in capsys.readouterr().err
    assert manifest_path(options, "cpu", replaying=True) == Path("manifest.py")  # replay needs no claims
    assert manifest_path(RunRequest(), "hpu", replaying=False) == Path("manifest.py")
    (tmp_path / "manifest.py").write_text("manifest = {}\n")
    assert manifest_path(options, "cpu", replaying=False) == Path("manifest.py")  # a local manifest wins
