"""The overload inventory against the installed torch: known overloads, their kernels, tags and rules."""

from __future__ import annotations

import json

import torch

from torchcts.coverage import relevance
from torchcts.coverage.inventory import inventory_metadata, inventory_names, load_inventory, overload_name


def _entry(name: str):
    return next(e for e in load_inventory() if e.name == name)


def test_every_dispatcher_overload_once_sorted_by_name():
    load_inventory.cache_clear()  # built now: an earlier test in this process may have registered aten ops since
    entries = load_inventory()
    names = [e.name for e in entries]
    assert names == sorted(names) and len(set(names)) == len(names)
    dispatcher = {n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::")}
    assert len(entries) == len(dispatcher)
    assert load_inventory() is entries  # cached per process


def test_names_are_str_of_the_op_overload():
    for name in ("aten.add.Tensor", "aten.abs.default", "aten.add_.Tensor", "aten.add.out"):
        entry = _entry(name)
        op = getattr(getattr(torch.ops.aten, entry.packet), entry.overload)
        assert str(op) == name
        assert entry.schema == str(op._schema)
    assert overload_name("aten::abs") == ("aten.abs.default", "abs", "default")


def test_add_tensor_has_a_cpu_kernel_and_its_tags():
    add = _entry("aten.add.Tensor")
    assert {"CPU", "Meta"} <= set(add.kernels)
    assert {"core", "pointwise"} <= set(add.tags)
    assert add.decomposition is True
    assert add.relevant and add.rule_id == "cpu-kernel"
    assert "out" in _entry("aten.add.out").tags and "inplace" in _entry("aten.add_.Tensor").tags


def test_linear_is_composite_implicit_only_and_not_relevant():
    linear = _entry("aten.linear.default")
    assert "CompositeImplicitAutograd" in linear.kernels and "CPU" not in linear.kernels
    assert not linear.relevant and linear.rule_id == "composite-implicit"
    assert linear.rule.startswith("composite-implicit: ")


def test_rules_for_other_kinds_of_overload():
    assert _entry("aten.abs.default").rule_id == "composite-explicit"  # inherits its composite kernel
    backward = _entry("aten.tanh_backward.default")
    assert backward.relevant and backward.rule_id == "backward"
    hook = _entry("aten._copy_from.default")
    assert hook.kernels == () and hook.relevant and hook.rule_id == "backend-hook"
    sparse = _entry("aten._indices.default")
    assert sparse.relevant and sparse.rule_id == "sparse-only" and sparse.capability == "sparse"
    quantized = _entry("aten.q_scale.default")
    assert quantized.relevant and quantized.capability == "native_quantization"
    assert _entry("aten.cudnn_convolution.out").rule_id == "vendor-named"  # its composite .out is cuDNN's too
    assert not _entry("aten._test_check_tensor.default").relevant


def test_a_codegen_wrapper_is_decided_by_the_overload_it_calls():
    names = inventory_names()
    wrapped = relevance.wrapper_of
    explicit = ("CompositeExplicitAutograd",)
    assert wrapped("aten.select_copy.int", ("generated",), explicit, names) == "aten.select.int"
    assert wrapped("aten.batch_norm_stats.out", ("generated", "out"), explicit, names) == "aten.batch_norm_stats.default"
    assert wrapped("aten.__lshift__.Scalar_out", ("generated",), explicit, names) == "aten.__lshift__.Scalar"
    assert wrapped("aten._amp_update_scale.default", ("generated",), explicit, names) == "aten._amp_update_scale_.default"
    assert wrapped("aten.batch_norm_stats.out", ("out",), explicit, names) is None  # not tagged `generated`
    assert wrapped("aten.add.out", ("generated",), ("CPU",), names) is None  # a kernel of its own
    # installed overloads: a wrapper of a vendor-only, a sparse-only and a quantized-only overload; of a CPU one
    assert not _entry("aten.batch_norm_stats.out").relevant  # batch_norm_stats has CUDA kernels only
    assert _entry("aten.batch_norm_stats.out").rule_id == "generated-wrapper"
    assert _entry("aten._values_copy.out").rule_id == "sparse-wrapper"
    assert _entry("aten._values_copy.out").capability == "sparse"
    assert _entry("aten.int_repr.out").rule_id == "quantized-wrapper"
    assert _entry("aten.select_copy.int").relevant and _entry("aten.select_copy.int").rule_id == "composite-explicit"
    facts = relevance.Facts("x", frozenset(explicit), wrapped=relevance.Facts("y", frozenset({"CUDA"})))
    assert relevance.decide(facts).id == "generated-wrapper"
    assert relevance.classify("x", explicit, wrapped=("y", {"SparseCPU"})).id == "sparse-wrapper"
    assert relevance.classify("x", explicit, wrapped=("y", {"CPU"})).id == "composite-explicit"


def test_classify_first_rule_wins_and_unknown_kernels_stay_relevant():
    assert relevance.classify("mish_backward", {"CPU", "CompositeImplicitAutograd"}).id == "composite-implicit"
    assert relevance.classify("silu_backward", {"CPU", "CompositeImplicitAutograd",
                                                "CompositeExplicitAutograd"}).id == "backward"
    assert relevance.classify("anything", (), kernels_known=False).relevant
    assert relevance.classify("batch_norm_stats", ()).id == "vendor-only"
    assert [r.id for r in relevance.RULES][-1] == "vendor-only"  # the catch-all comes last


def test_metadata_counts_add_up():
    meta = inventory_metadata()
    counts = meta["counts"]
    assert meta["torch"] == torch.__version__
    assert counts["overloads"] == len(inventory_names()) == counts["relevant"] + counts["not_relevant"]
    assert sum(counts["per_rule"].values()) == counts["overloads"]
    assert set(counts["per_rule"]) == {rule.id for rule in relevance.RULES}
    assert counts["torchscript_only"] is None or counts["torchscript_only"] >= 0


def test_to_json_is_plain_data():
    data = _entry("aten.add.Tensor").to_json()
    assert data["name"] == "aten.add.Tensor" and isinstance(data["kernels"], list) and isinstance(data["tags"], list)


def test_cli_writes_inventory_json(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from torchcts.cli.coverage_inventory import inventory

    monkeypatch.chdir(tmp_path)
    (tmp_path / "coverage_exclusions.json").write_text(json.dumps({"schema_version": 1, "exclusions": [
        {"overload": "aten.add.Tensor", "reason": "the project tests it elsewhere"},
        {"overload": "aten.gone.default", "reason": "renamed"}]}))
    result = CliRunner().invoke(inventory, [])
    assert result.exit_code == 0, result.output
    assert "aten overloads of torch" in result.stdout and "the inventory took" in result.stdout
    assert "aten.gone.default" in result.stderr and "(stale)" in result.stderr
    document = json.loads((tmp_path / "results" / "coverage" / "inventory.json").read_text())
    assert document["schema_version"] == 1 and document["metadata"]["torch"] == torch.__version__
    by_name = {o["name"]: o for o in document["overloads"]}
    assert len(by_name) == document["metadata"]["counts"]["overloads"] == len(load_inventory())
    assert by_name["aten.add.Tensor"]["excluded"] == {"reason": "the project tests it elsewhere",
                                                      "source": "coverage_exclusions.json#0"}
    assert by_name["aten.linear.default"]["relevant"] is False and by_name["aten.abs.default"]["excluded"] is None
    assert [r["id"] for r in document["rules"]] == [r.id for r in relevance.RULES]


def test_cli_exits_2_on_a_malformed_project_file(tmp_path):
    from click.testing import CliRunner

    from torchcts.cli.coverage_inventory import inventory

    (tmp_path / "coverage_exclusions.json").write_text(json.dumps({"schema_version": 1, "exclusions": [
        {"overload": "aten.add.Tensor"}]}))
    output = tmp_path / "out" / "inv.json"
    result = CliRunner().invoke(inventory, ["--project-dir", str(tmp_path), "--output", str(output)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"torchcts coverage inventory: {tmp_path / 'coverage_exclusions.json'}: entry 0, field `reason`: "
        "every exclusion needs a non-empty reason"]
    assert not output.exists()


def test_inventory_is_a_coverage_subcommand():
    from torchcts.cli.coverage_commands import coverage

    assert "inventory" in coverage.commands


def test_policy_doc_describes_every_rule():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "coverage" / "policy.md").read_text()
    rows = {f"| `{rule.id}` | {'yes' if rule.relevant else 'no'} |": rule.id for rule in relevance.RULES}
    missing = [rule for row, rule in rows.items() if row not in doc]
    assert missing == [], "docs/coverage/policy.md does not describe these relevance rules"
    assert "## Evidence" in doc and "docs/coverage/evidence.md" in doc


def test_per_overload_kernel_query_agrees_with_the_per_key_one():
    # the fallback for a torch without _dispatch_get_registrations_for_dispatch_key
    from torchcts.coverage.inventory import _kernels_one_by_one

    for name in ("aten.add.Tensor", "aten.linear.default", "aten._indices.default", "aten._copy_from.default",
                 "aten.abs.out", "aten.q_scale.default"):
        entry = _entry(name)
        dispatcher_name = f"aten::{entry.packet}" + ("" if entry.overload == "default" else f".{entry.overload}")
        assert _kernels_one_by_one(dispatcher_name) == entry.kernels


def test_a_nested_only_composite_does_not_make_an_overload_decompose():
    # CompositeImplicitAutogradNestedTensor applies to nested tensors only; a strided backend still needs a kernel
    rule = relevance.classify("op", {"CPU", "CompositeImplicitAutogradNestedTensor"})
    assert rule.relevant and rule.id == "cpu-kernel"
    assert relevance.classify("op", {"CompositeImplicitAutogradNestedTensor"}).id == "nested-only"
    assert _entry("aten.reshape.default").rule_id == "composite-implicit"
