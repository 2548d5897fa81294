"""`torchcts coverage check`: a malformed, stale or foreign audit and malformed exclusions exit 2 naming the
file and field; unknowns and stale exclusion names warn, or exit 1 under --fail-on-unknown / --strict-unknowns."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.coverage import audit
from torchcts.coverage.audit_check import AuditFileError, read_audit
from torchcts.coverage.exclusions import load_exclusions
from torchcts.coverage.inventory import inventory_metadata, load_inventory


def _write_audit(project, *, unknowns=True):
    """audit.json for the installed torch and the project's current exclusions (no OpInfos, no suites: quick).
    Without unknowns, the project's exclusions gain a glob excluding every overload nothing else covers."""
    if not unknowns:
        path = project / "coverage_exclusions.json"
        data = json.loads(path.read_text()) if path.exists() else {"schema_version": 1, "exclusions": []}
        data["exclusions"].append({"pattern": "aten.*", "reason": "test: nothing left unknown"})
        path.write_text(json.dumps(data))
    sources = audit.Sources((), (), {"aten.abs.default": "generated"}, load_exclusions(project))
    result = audit.build_audit(load_inventory(), sources, audit.metadata(inventory_metadata(), project, None, None))
    folder = project / "results" / "coverage"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "audit.json").write_text(json.dumps(result))
    return result


def _check(project, monkeypatch, *flags):
    monkeypatch.chdir(project)
    return CliRunner().invoke(cli, ["coverage", "check", *flags])


@pytest.fixture
def project(tmp_path):
    return tmp_path


def test_unknowns_warn_and_exit_0_by_default(project, monkeypatch):
    result = _write_audit(project)
    unknown = [e["overload"] for e in result["entries"] if e["status"] == "unknown"]
    checked = _check(project, monkeypatch)
    assert checked.exit_code == 0, checked.output
    assert f"warning: unknown: {unknown[0]}" in checked.output


@pytest.mark.parametrize("flag", ["--fail-on-unknown", "--strict-unknowns"])
def test_unknowns_exit_1_under_the_flags(project, monkeypatch, flag):
    _write_audit(project)
    checked = _check(project, monkeypatch, flag)
    assert checked.exit_code == 1 and "error: unknown: aten." in checked.output


def test_an_audit_without_unknowns_passes_the_flags(project, monkeypatch):
    _write_audit(project, unknowns=False)
    checked = _check(project, monkeypatch, "--fail-on-unknown")
    assert checked.exit_code == 0, checked.output


def test_an_audit_with_entries_deleted_or_added_exits_2_naming_them(project, monkeypatch):
    """Deleting the unknown entries from audit.json must not pass --fail-on-unknown."""
    result = _write_audit(project)
    unknown = sorted(e["overload"] for e in result["entries"] if e["status"] == "unknown")
    result["entries"] = [e for e in result["entries"] if e["status"] != "unknown"]
    (project / "results" / "coverage" / "audit.json").write_text(json.dumps(result))
    checked = _check(project, monkeypatch, "--fail-on-unknown")
    assert checked.exit_code == 2, checked.output
    assert f"lacks {len(unknown)} backend-relevant overloads of the installed torch: {unknown[0]}" in checked.output
    extra = dict(result["entries"][0], overload="aten.no_such_op.default")
    result["entries"].append(extra)
    (project / "results" / "coverage" / "audit.json").write_text(json.dumps(result))
    checked = _check(project, monkeypatch)
    assert checked.exit_code == 2 and "1 overloads the installed torch has not (or are not relevant): " \
        "aten.no_such_op.default" in checked.output, checked.output


def test_an_audit_of_another_torchcts_exits_2_naming_the_field(project, monkeypatch):
    result = _write_audit(project)
    result["metadata"]["torchcts"] = "0.0.1"
    (project / "results" / "coverage" / "audit.json").write_text(json.dumps(result))
    checked = _check(project, monkeypatch)
    assert checked.exit_code == 2 and "metadata.torchcts: the audit has '0.0.1', the installed" in checked.output


def test_stale_exclusion_names_warn_and_fail_only_under_strict_unknowns(project, monkeypatch):
    (project / "coverage_exclusions.json").write_text(json.dumps({"schema_version": 1, "exclusions": [
        {"overload": "aten.no_such_op.default", "reason": "gone"}]}))
    _write_audit(project, unknowns=False)
    plain = _check(project, monkeypatch, "--fail-on-unknown")
    assert plain.exit_code == 0 and "warning: stale exclusion:" in plain.output and "no_such_op" in plain.output
    strict = _check(project, monkeypatch, "--strict-unknowns")
    assert strict.exit_code == 1 and "error: stale exclusion:" in strict.output


def test_repeated_exclusion_entries_warn_and_fail_only_under_strict_unknowns(project, monkeypatch):
    (project / "coverage_exclusions.json").write_text(json.dumps({"schema_version": 1, "exclusions": [
        {"overload": "aten.abs.out", "reason": "once"}, {"overload": "aten.abs.out", "reason": "twice"}]}))
    _write_audit(project, unknowns=False)
    plain = _check(project, monkeypatch, "--fail-on-unknown")
    assert plain.exit_code == 0 and "warning: repeated exclusion:" in plain.output and "#1: overload 'aten.abs.out'" \
        in plain.output, plain.output
    strict = _check(project, monkeypatch, "--strict-unknowns")
    assert strict.exit_code == 1 and "error: repeated exclusion:" in strict.output, strict.output


def test_an_audit_of_another_torch_exits_2_naming_the_field(project, monkeypatch):
    result = _write_audit(project)
    result["metadata"]["torch"] = "2.7.0"
    (project / "results" / "coverage" / "audit.json").write_text(json.dumps(result))
    checked = _check(project, monkeypatch)
    assert checked.exit_code == 2
    assert "metadata.torch: the audit has '2.7.0', the installed torch has" in checked.output


def test_exclusions_changed_since_the_audit_exit_2(project, monkeypatch):
    _write_audit(project)
    (project / "coverage_exclusions.json").write_text(json.dumps({"schema_version": 1, "exclusions": [
        {"overload": "aten.abs.default", "reason": "a reason"}]}))
    checked = _check(project, monkeypatch)
    assert checked.exit_code == 2 and "metadata.exclusion_files" in checked.output


def test_malformed_exclusions_exit_2_naming_file_and_entry(project, monkeypatch):
    _write_audit(project)
    (project / "coverage_exclusions.json").write_text(json.dumps({"schema_version": 1, "exclusions": [
        {"overload": "aten.abs.default"}]}))
    checked = _check(project, monkeypatch)
    assert checked.exit_code == 2 and "coverage_exclusions.json: entry 0" in checked.output


@pytest.mark.parametrize(("edit", "field"), [
    (lambda a: a["entries"][0].update(status="covered"), "entries[0].status: must be one of opinfo"),
    (lambda a: a["entries"][1].pop("rule"), "entries[1].rule: missing"),
    (lambda a: a["entries"][0].update(level=9), "entries[0].level: must be an integer from 1 to 8"),
    (lambda a: a["entries"][0].update(secret=1), "entries[0].secret: unknown field"),
    (lambda a: a["metadata"].update(torch=None), "metadata.torch: must be a string"),
    (lambda a: a.update(schema_version=2), "audit.schema_version: must be 1"),
    (lambda a: a["entries"].append(dict(a["entries"][0])), "entries: an overload appears twice"),
    (lambda a: a["entries"][0].update(overload="aten.add"), "entries[0].overload: must be an overload name"),
    (lambda a: a["entries"][0].update(overload="aten.add.Tensor; x"), "entries[0].overload: must be an overload"),
    (lambda a: a["entries"][0].update(opinfo_basis="guess"), "entries[0].opinfo_basis: must be 'name', 'trace'"),
    (lambda a: a["metadata"].update(opinfo_trace=["2.13"]), "metadata.opinfo_trace: must be an object"),
])
def test_a_malformed_audit_exits_2_naming_the_field(project, monkeypatch, edit, field):
    result = _write_audit(project)
    edit(result)
    (project / "results" / "coverage" / "audit.json").write_text(json.dumps(result))
    checked = _check(project, monkeypatch)
    assert checked.exit_code == 2 and f"audit.json: {field}" in checked.output, checked.output


@pytest.mark.parametrize(("text", "problem"), [
    ("{not json", "not JSON"),
    ("[" * 500 + "]" * 500, "nested deeper"),
    ('{"schema_version": 1, "metadata": {}, "entries": [], "not_relevant": {}, "warnings": [], "x": NaN}', "NaN"),
])
def test_an_unreadable_audit_is_refused_without_evaluating_it(tmp_path, text, problem):
    path = tmp_path / "audit.json"
    path.write_text(text)
    with pytest.raises(AuditFileError, match=problem):
        read_audit(path)


def test_a_missing_audit_exits_2(project, monkeypatch):
    checked = _check(project, monkeypatch)
    assert checked.exit_code == 2 and "audit.json" in checked.output


@pytest.mark.slow
def test_reading_an_audit_imports_no_torch():
    """`coverage report` and check's reading work from audit.json alone: the shared name regex, the value
    formatting and the atomic writer must not pull torch in."""
    import subprocess
    import sys

    code = ("import sys, torchcts.coverage.audit_check, torchcts.coverage.summary, torchcts.coverage.evidence, "
            "torchcts.coverage.exclusions, torchcts.coverage.atomic; print('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
