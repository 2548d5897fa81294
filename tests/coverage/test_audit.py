"""The coverage audit on the installed torch: OpInfo name mapping, suite and backend-pack declarations,
exclusions, evidence, the artifacts, the summary and the non-unique view (real op_db, real registry)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.coverage import audit, mapping
from torchcts.coverage.exclusions import load_exclusions
from torchcts.coverage.generated import generated_overloads
from torchcts.coverage.inventory import inventory_metadata, load_inventory
from torchcts.coverage.summary import render_html, render_markdown
from torchcts.manifest.templates import render_template
from torchcts.plan import catalog, registry

PACK = '''
from torchcts.plan.registry import ScenarioItems, register_property


@register_property("vendor_pack_probe", capability="inference", level=5,
                   items=ScenarioItems(["probe"], ["float32"]), overloads=["{overload}"])
def test_vendor_pack_probe(cts):
    pass
'''


@pytest.fixture(scope="module")
def world():
    """The installed torch's inventory, registry and OpInfo reach (op_db imported once for the module)."""
    properties = registry.load()
    inventory = load_inventory()
    opinfo = mapping.map_opinfos(catalog.all_ops(), properties, inventory)
    return inventory, properties, opinfo


def _audit(world, tmp_path, properties=None, reached=None):
    inventory, installed, opinfo = world
    sources = audit.Sources(opinfo, installed if properties is None else properties, generated_overloads(),
                            load_exclusions(tmp_path), reached)
    return audit.build_audit(inventory, sources, audit.metadata(inventory_metadata(), tmp_path, None, None))


def _entries(result):
    return {e["overload"]: e for e in result["entries"]}


def _unknown(result):
    """An overload of this torch no test reaches (unknown, else excluded), to give a status to in a test."""
    return min((e["status"] != "unknown", e["overload"]) for e in result["entries"]
               if e["status"] in ("unknown", "excluded"))[1]


@pytest.fixture(scope="module")
def plain(world, tmp_path_factory):
    return _audit(world, tmp_path_factory.mktemp("plain"))


def test_an_opinfo_reaches_its_overloads_by_name(plain):
    add = _entries(plain)["aten.add.Tensor"]
    assert add["status"] == "opinfo" and "add" in add["opinfos"] and add["level"] == 1
    assert {"forward", "backward"} <= set(add["opinfo_properties"])
    assert "__radd__" in add["opinfos"]  # a reflected operator reaches the packet it spells
    assert "add" in _entries(plain)["aten.add_.Tensor"]["opinfos"]  # the inplace property: the `_` packet
    assert _entries(plain)["aten.add.out"]["opinfo_properties"] == ["out"]
    assert "linalg.vector_norm" in _entries(plain)["aten.linalg_vector_norm.default"]["opinfos"]  # linalg.x


def test_every_relevant_overload_has_one_status(world, plain):
    relevant = {e.name for e in world[0] if e.relevant}
    assert [e["overload"] for e in plain["entries"]] == sorted(relevant)
    assert {e["status"] for e in plain["entries"]} <= set(audit.STATUSES)


def test_a_suite_declaration_gives_status_suite(plain):
    foreach = _entries(plain)["aten._foreach_add.List"]  # no OpInfo of op_db is named _foreach_add
    assert foreach["status"] == "suite" and foreach["suites"] == ["foreach"] and foreach["level"] == 3
    assert "views" in _entries(plain)["aten.unfold.default"]["suites"]  # listed beside the OpInfos that map it


def test_a_custom_test_dirs_property_declaring_overloads_is_a_backend_pack(world, plain, tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    target = _unknown(plain)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_pack.py").write_text(PACK.format(overload=target))
    properties = registry.load([tmp_path / "suite"])
    entry = _entries(_audit(world, tmp_path, properties))[target]
    assert entry["status"] == "backend-pack" and entry["backend_packs"] == ["vendor_pack_probe"]
    assert entry["level"] == 5


def test_an_exclusion_gives_status_excluded_with_its_reason(world, plain, tmp_path):
    target = _unknown(plain)
    (tmp_path / "coverage_exclusions.json").write_text(json.dumps({"schema_version": 1, "exclusions": [
        {"overload": target, "reason": "a debugging hook no backend implements"}]}))
    entry = _entries(_audit(world, tmp_path))[target]
    assert entry["status"] == "excluded"
    assert entry["exclusion"]["reason"] == "a debugging hook no backend implements"
    assert "coverage_exclusions.json#0" in entry["exclusion"]["source"]


def test_the_evidence_says_what_was_reached(world, plain, tmp_path):
    result = _audit(world, tmp_path, reached=frozenset({"aten.add.Tensor"}))
    assert _entries(result)["aten.add.Tensor"]["reached"] is True
    assert _entries(result)["aten.abs.default"]["reached"] is False
    assert _entries(plain)["aten.add.Tensor"]["reached"] is None  # no evidence given


def test_opinfos_that_map_to_no_overload_are_listed_with_the_reason(world):
    unmapped = {u["opinfo"]: u["reason"] for u in audit.unmapped_tests(world[2])}
    assert "Python-level composite" in unmapped["masked.sum"]
    assert "add" not in unmapped and "nn.functional.relu" not in unmapped


def test_unknowns_carry_their_kernels_and_tags(plain):
    unknowns = audit.unknowns(plain)
    assert [u["overload"] for u in unknowns] == sorted(e["overload"] for e in plain["entries"]
                                                       if e["status"] == "unknown")
    assert all({"kernels", "tags", "schema", "rule"} <= set(u) for u in unknowns)


def test_non_unique_lists_overlapping_sources_and_opinfo_groups(plain):
    result = audit.non_unique(plain)
    claimed = {item["overload"]: item for item in result["overloads"]}
    assert {"opinfo:add", "opinfo:__radd__"} <= set(claimed["aten.add.Tensor"]["sources"])
    assert "suite" in claimed["aten.add.Tensor"]["kinds"]  # dtype_semantics declares it too
    groups = [set(g["opinfos"]) for g in result["opinfo_groups"]]
    assert any({"max.reduction_with_dim", "max.reduction_no_dim"} <= g for g in groups)  # variants of one name


def test_summary_counts_statuses_levels_rules_and_escapes_html(plain):
    text = render_markdown(plain)
    counts = {s: sum(e["status"] == s for e in plain["entries"]) for s in audit.STATUSES}
    assert f"| opinfo | {counts['opinfo']} |" in text and f"| unknown | {counts['unknown']} |" in text
    assert "## Per semantic level" in text and "| cpu-kernel |" in text
    assert "Mapped but never reached" not in text  # no evidence
    hostile = {**plain, "entries": [{**plain["entries"][0], "overload": "aten.<b>x.y", "status": "unknown"}]}
    html = render_html(hostile)
    assert "&lt;b&gt;x" in html and "<b>x" not in html


def test_the_audit_command_writes_the_artifacts(world, plain, tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    target = _unknown(plain)
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "test_pack.py").write_text(PACK.format(overload=target))
    (tmp_path / "manifest.py").write_text(render_template("minimal", device_name="cpu")
                                          + '\nmanifest["custom_test_dirs"] = ["suites"]\n')
    store = tmp_path / "store"
    store.mkdir()
    (store / "evidence.json").write_text(json.dumps({
        "schema_version": 1, "runs": [{"run_id": "r1"}],
        "overloads": {"aten.add.Tensor": {"reached": 2, "passed": 2, "failed": 0, "errors": {}, "runs": ["r1"]}}}))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["coverage", "audit", "--evidence", str(store), "--manifest", "manifest.py"])
    assert result.exit_code == 0, result.output
    assert "the audit took" in result.output
    folder = tmp_path / "results" / "coverage"
    written = json.loads((folder / "audit.json").read_text())
    assert written["metadata"]["evidence"] == str(store)
    assert _entries(written)[target]["status"] == "backend-pack"  # the manifest's custom_test_dirs
    assert _entries(written)["aten.add.Tensor"]["reached"] is True
    assert {p.name for p in folder.iterdir()} >= {"inventory.json", "audit.json", "unknowns.json",
                                                  "unmapped-tests.json", "summary.md"} == set(audit.ARTIFACTS)
    inventory = json.loads((folder / "inventory.json").read_text())  # what `coverage inventory` writes
    assert inventory["metadata"]["counts"]["overloads"] == written["metadata"]["inventory"]["overloads"]
    relevant = {o["name"] for o in inventory["overloads"] if o["relevant"]}
    assert relevant == set(_entries(written))  # the audit gives every relevant overload of the inventory a status
    summary = (folder / "summary.md").read_text()
    assert "Mapped but never reached" in summary and "reached by a traced run" in summary
    report = CliRunner().invoke(cli, ["coverage", "report"])
    assert report.exit_code == 0 and "# Coverage audit" in report.output
    assert (folder / "coverage.html").read_text().startswith("<section")
    non_unique = CliRunner().invoke(cli, ["coverage", "non-unique-audit"])
    assert non_unique.exit_code == 0 and "groups of OpInfos" in non_unique.output
    assert json.loads((folder / "non-unique.json").read_text())["opinfo_groups"]


def test_a_bad_evidence_store_exits_2_naming_it(tmp_path, monkeypatch):
    (tmp_path / "evidence.json").write_text('{"schema_version": 7}')
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["coverage", "audit", "--evidence", str(tmp_path)])
    assert result.exit_code == 2 and "evidence.json" in result.output and "schema_version" in result.output


@pytest.mark.parametrize(("files", "words", "lines"), [
    ({"suites/test_broken.py": "raise RuntimeError('boom')\n"}, "test_broken.py: importing it raised RuntimeError: boom",
     1),
    ({"suites/test_bad_overloads.py": PACK.replace("vendor_pack_probe", "bad_pack").format(overload="add")},
     "test_bad_overloads.py: property bad_pack: overloads must be", 1),
    ({"manifest.py": "manifest = 3\n"}, "manifest.py: 1 problem\n  error: manifest: must be a dict", 2),  # as `run` does
])
def test_a_broken_backend_pack_or_manifest_exits_2_naming_it(tmp_path, monkeypatch, files, words, lines):
    """A manifest's custom_test_dirs are the user's code: a module that fails to import is bad input."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    (tmp_path / "suites").mkdir()
    (tmp_path / "manifest.py").write_text(render_template("minimal", device_name="cpu")
                                          + '\nmanifest["custom_test_dirs"] = ["suites"]\n')
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["coverage", "audit", "--manifest", "manifest.py"])
    assert result.exit_code == 2, result.output
    assert words in result.output and len(result.output.strip().splitlines()) == lines, result.output
    assert "Traceback" not in result.output and not (tmp_path / "results").exists()


def test_names_this_torch_lacks_are_warnings_never_failures(world, plain, tmp_path, monkeypatch):
    """An older (or newer) torch lacks some names a pack, the exclusions or the packaged generated list give: the
    audit still gives every relevant overload a status, and says which names it could not find."""
    from torchcts.coverage import generated

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_pack.py").write_text(PACK.format(overload="aten.only_in_another_torch.default"))
    properties = registry.load([tmp_path / "suite"])
    (tmp_path / "coverage_exclusions.json").write_text(json.dumps({"schema_version": 1, "exclusions": [
        {"overload": "aten.gone_from_this_torch.default", "reason": "removed upstream"}]}))
    packaged = generated._packaged()
    monkeypatch.setattr(generated, "_packaged", lambda: (
        packaged[0], packaged[1] | {"aten.only_in_another_torch.out": "generated"}, packaged[2]))
    assert "aten.only_in_another_torch.out" not in generated.generated_overloads()
    result = _audit(world, tmp_path, properties)
    assert any("declared overload not in torch" in w and "aten.only_in_another_torch.default" in w
               for w in result["warnings"]), result["warnings"]
    assert len(result["entries"]) == len(plain["entries"]) and all(e["status"] for e in result["entries"])
    assert not any("only_in_another_torch" in e["overload"] or "gone_from" in e["overload"] for e in result["entries"])
