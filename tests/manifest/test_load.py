"""Loading manifest files: failures name the file and line, never a bare traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest import ManifestError, load_manifest


def check(path):
    return CliRunner().invoke(cli, ["check-manifest", "--manifest", str(path)])


def test_missing_file_is_reported_with_a_hint(tmp_path):
    result = check(tmp_path / "manifest.py")
    assert result.exit_code == 2
    assert f"{tmp_path / 'manifest.py'}: 1 problem" in result.stderr
    assert "torchcts init" in result.stderr


def test_syntax_error_names_file_and_line(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text('manifest = {\n    "device_name": "cpu"\n    "manifest_version": 1,\n}\n')
    result = check(path)
    assert result.exit_code == 2
    assert str(path) in result.stderr
    assert "syntax error" in result.stderr
    assert "line 2" in result.stderr or "line 3" in result.stderr
    assert "Traceback" not in result.stderr


def test_exception_while_running_names_the_manifest_line(write_manifest):
    path = write_manifest("x = 1\nmanifest = dict(BASE, semantic_level=undefined_name)\n")
    result = check(path)
    assert result.exit_code == 2
    line = path.read_text().splitlines().index("manifest = dict(BASE, semantic_level=undefined_name)") + 1
    assert f"error: line {line}: the manifest raised NameError" in result.stderr
    assert "undefined_name" in result.stderr
    assert "Traceback" not in result.stderr


def test_exception_raised_in_a_helper_module_points_at_the_manifest_line(tmp_path):
    (tmp_path / "backend_claims.py").write_text("def claims():\n    raise RuntimeError('no device found')\n")
    path = tmp_path / "manifest.py"
    path.write_text("from backend_claims import claims\n\nmanifest = claims()\n")
    result = check(path)
    assert result.exit_code == 2
    assert "line 3: the manifest raised RuntimeError: no device found" in result.stderr


def test_manifest_calling_sys_exit_is_reported_not_obeyed(write_manifest):
    path = write_manifest("import sys\nsys.exit(0)\n")
    result = check(path)
    assert result.exit_code == 2
    assert "SystemExit" in result.stderr


def test_file_without_manifest_dict(write_manifest):
    path = write_manifest("config = BASE\n")
    result = check(path)
    assert result.exit_code == 2
    assert "defines no `manifest` dict" in result.stderr


def test_manifest_may_import_sibling_modules_and_leaves_sys_path_clean(tmp_path):
    import sys

    (tmp_path / "shared_claims.py").write_text("DTYPES = {'float32': True}\n")
    path = tmp_path / "manifest.py"
    path.write_text(
        "from shared_claims import DTYPES\n"
        "manifest = {'manifest_version': 1, 'device_name': 'cpu', 'supported_dtypes': DTYPES,\n"
        "            'capabilities': {'inference': True}}\n"
    )
    before = list(sys.path)
    manifest, warnings = load_manifest(path)
    assert [c.name for c in manifest.dtype_claims] == ["float32"]
    assert warnings == ()
    assert sys.path == before


def test_load_manifest_raises_with_every_problem(write_manifest):
    path = write_manifest("manifest = dict(BASE, semantic_level=0, device_count=-1)\n")
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert {p.key for p in info.value.errors} == {"semantic_level", "device_count"}
    assert info.value.source == str(path)
