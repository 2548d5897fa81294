"""The manifest schema is the one declaration of every key: the doc's tables, the model's defaults
and the validator's key checks all come from it, and removed keys are one clear error."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest import Manifest, parse_manifest, schema, validate
from torchcts.manifest.model import Hardware, HypothesisSettings, ResourceLimits
from torchcts.manifest.problems import Severity

DOC = (Path(__file__).resolve().parents[2] / "docs" / "manifest.md").read_text(encoding="utf-8")
BASE = {
    "manifest_version": 1,
    "device_name": "cpu",
    "supported_dtypes": {"float32": True},
    "capabilities": {"inference": True},
}
SECTION_MODELS = {"hardware": Hardware, "resource_limits": ResourceLimits, "hypothesis": HypothesisSettings}
SCALAR_KEYS = [(key.name,) for key in schema.TOP_LEVEL if key.kind is not None] + [
    (section.name, key.name) for section in schema.SECTIONS for key in section.keys]


def errors(raw: object) -> list[tuple[str, str]]:
    _, problems = validate(raw)
    return [(p.key, p.render()) for p in problems if p.severity is Severity.ERROR]


@pytest.mark.parametrize("name", list(schema.render_tables()))
def test_the_doc_holds_each_table_the_schema_renders(name):
    table = schema.render_tables()[name]
    assert table in DOC, f"docs/manifest.md is out of date; its {name!r} table should read:\n\n{table}\n"


def test_every_key_table_in_the_doc_is_generated():
    """No hand-written key table survives next to the generated ones."""
    header = re.compile(r"^\| (removed )?key \|", re.MULTILINE)
    tables = schema.render_tables().values()
    starts = [m.start() for m in header.finditer(DOC)]
    assert len(starts) == len(schema.render_tables())
    for start in starts:
        assert any(DOC.startswith(table, start) for table in tables), DOC[start:start + 200]


def test_every_model_field_is_a_schema_key():
    derived = {"source", "ieee754_op_patterns"}  # the file it came from; ieee754's regexes (a capability value)
    assert {f.name for f in attrs.fields(Manifest)} - derived == {k.attribute for k in schema.TOP_LEVEL}
    for name, model in SECTION_MODELS.items():
        assert {f.name for f in attrs.fields(model)} == {k.attribute for k in schema.SECTION_KEYS[name].keys}


def test_the_model_defaults_are_the_schema_defaults():
    manifest, _ = parse_manifest(BASE)
    for key in schema.TOP_LEVEL:
        if not key.required and key.name not in schema.SECTION_KEYS:
            assert getattr(manifest, key.attribute) == key.default, key.name
    for section in schema.SECTIONS:
        for key in section.keys:
            assert getattr(getattr(manifest, section.name), key.attribute) == key.default, key.name


@pytest.mark.parametrize("path", SCALAR_KEYS, ids=".".join)
def test_every_scalar_key_rejects_a_wrong_value_naming_it(path):
    raw = dict(BASE)
    wrong = ["not", "valid"] if path == ("compile", "options") else {"not": "valid"}  # a dict is options' type
    if len(path) == 1:
        raw[path[0]] = wrong
    else:
        raw[path[0]] = {path[1]: wrong}
    found = errors(raw)
    assert [key for key, _ in found] == [".".join(path)], found
    assert repr(wrong) in found[0][1]


def test_unknown_keys_list_the_schema_and_suggest_the_nearest():
    (key, text), = errors(dict(BASE, show_tracebak=True))
    assert key == "show_tracebak"
    assert "did you mean 'show_traceback'?" in text
    assert all(f"'{name}'" in text for name in schema.KEYS)
    for name in schema.REMOVED:
        assert f"'{name}'" not in text


@pytest.mark.parametrize("name", list(schema.REMOVED))
def test_a_removed_key_is_one_error_naming_it_and_what_to_do(name):
    (key, text), = errors(dict(BASE, **{name: 3}))
    assert key == name
    assert text.startswith(f"{name}: removed key: ") and "delete the key" in text


def test_a_removed_key_exits_2_from_check_manifest_and_run(write_manifest, tmp_path):
    path = write_manifest("manifest = dict(BASE, max_samples_ieee754=3)")
    check = CliRunner().invoke(cli, ["check-manifest", "--manifest", str(path)])
    run = CliRunner().invoke(cli, ["run", "--manifest", str(path), "--results-dir", str(tmp_path / "results"),
                                   "--device", "cpu", "--ops", "^abs$", "--dtype", "float32", "--level", "1",
                                   "--max-examples", "1"])
    for result in (check, run):
        assert result.exit_code == 2, result.output
        lines = [line for line in result.stderr.splitlines() if "error:" in line]
        assert len(lines) == 1 and "max_samples_ieee754: removed key" in lines[0], result.stderr
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "results").exists()


def test_the_keys_other_parts_read_are_exposed_normalised(tmp_path):
    (tmp_path / "suites").mkdir()
    raw = dict(BASE, custom_test_dirs=["suites"], show_traceback=True, hypothesis={"seed": 5})
    manifest, _ = parse_manifest(raw, tmp_path / "manifest.py")
    assert manifest.custom_test_dirs == ((tmp_path / "suites").resolve(),)
    assert manifest.show_traceback is True
    assert manifest.hypothesis.seed == 5
