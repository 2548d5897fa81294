"""The run plan: items that run, and the outcome and reason of every item that does not."""

from __future__ import annotations

import pytest
import torch

from torchcts.manifest import load_manifest
from torchcts.plan.catalog import all_ops, op_id
from torchcts.plan.build import Selection, build_plan
from torchcts.manifest.templates import render_template


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "manifest.py"
    path.write_text(render_template("complete", device_name="faulty"))
    return load_manifest(path)[0]


def ops(*names):
    return [op for op in all_ops() if op_id(op) in names]


def outcomes(plan):
    result = {item.id: ("run", "") for item in plan.items}
    result.update({a.item.id: (a.outcome, a.reason) for a in plan.accounting})
    return result


def test_selection_deselects_with_reasons(manifest):
    plan = outcomes(build_plan(manifest, Selection(level=2, dtypes=(torch.float32,)), ops("add")))
    assert plan["forward::add::function::float32"] == ("run", "")
    assert plan["forward::add::function::int64"] == ("deselected", "--dtype leaves it out")
    assert plan["inplace::add::inplace::float32"] == (
        "level_filtered", f"level 3 is above --level 2 (the run's depth; the manifest's semantic_level is "
                          f"{manifest.semantic_level})")


@pytest.fixture(scope="module")
def level2(tmp_path_factory):
    """A level-2 manifest: bfloat16 not supported, float16 scoped to ops starting with 'sub', int64 not listed."""
    path = tmp_path_factory.mktemp("level2") / "manifest.py"
    path.write_text('manifest = {"manifest_version": 1, "device_name": "faulty", "semantic_level": 2,\n'
                    '    "supported_dtypes": {"float32": True, "bfloat16": False, "float16": "^sub"},\n'
                    '    "capabilities": {"inference": True, "training": True}}\n')
    return load_manifest(path)[0]


def test_level_is_the_runs_depth_up_as_well_as_down(level2):
    default = outcomes(build_plan(level2, Selection(), ops("add")))
    assert default["inplace::add::inplace::float32"] == (
        "level_filtered", "level 3 is above the manifest's semantic_level 2 (the run's depth; --level overrides it)")
    deeper = build_plan(level2, Selection(level=8), ops("add"))
    ran = {item.id for item in deeper.items}
    assert {"inplace::add::inplace::float32", "out::add::out::float32", "backward::add::function::float32"} <= ran
    assert not any(a.outcome == "level_filtered" for a in deeper.accounting)
    assert {i.level for i in deeper.items} > {1, 2}  # the items of levels 3..8 the claims allow
    shallower = outcomes(build_plan(level2, Selection(level=1), ops("add")))
    assert shallower["layout::add::function::float32"] == (
        "level_filtered", "level 2 is above --level 1 (the run's depth; the manifest's semantic_level is 2)")


def test_dtype_claims_its_dtypes_for_this_run_only(level2):
    from torchcts.plan.effective import run_claims

    before = outcomes(build_plan(level2, Selection(), ops("add", "sub")))
    assert before["forward::add::function::bfloat16"][0] == "dtype_not_supported"
    assert before["forward::add::function::float16"][0] == "dtype_regex_filtered"
    assert before["forward::add::function::int64"][0] == "dtype_not_listed"
    chosen = Selection(dtypes=(torch.bfloat16, torch.float16, torch.int64))
    after = outcomes(build_plan(level2, chosen, ops("add", "sub")))
    for dtype in ("bfloat16", "float16", "int64"):
        assert after[f"forward::add::function::{dtype}"] == ("run", ""), dtype
    assert after["forward::add::function::float32"] == ("deselected", "--dtype leaves it out")
    only_float32 = outcomes(build_plan(level2, Selection(dtypes=(torch.float32,)), ops("add")))
    assert only_float32["forward::add::function::bfloat16"][0] == "dtype_not_supported"  # not claimed, not selected
    claims = run_claims(level2, chosen)
    assert claims.added_dtypes == {"bfloat16": "False", "float16": "regex '^sub'", "int64": "not listed"}
    assert claims.differs and claims.beyond_file
    record = claims.as_json()
    assert record["manifest_hash"] == level2.fingerprint() != record["effective_manifest_hash"]
    assert record["dtypes_added_by_command_line"]["bfloat16"] == "False"
    same = run_claims(level2, Selection(dtypes=(torch.float32,), level=2))  # what the file claims already
    assert not same.differs and same.added_dtypes == {} and same.as_json()["effective_manifest_hash"] == \
        level2.fingerprint()


def test_a_cpu_oracle_crash_is_not_decided_by_the_plan(manifest):
    # the crash ledger isolates such items case by case at run time (a case whose oracle dies is
    # cpu_contract there); the plan runs them on every torch version
    plan = outcomes(build_plan(manifest, Selection(), ops("nn.functional.grid_sample")))
    assert plan["forward::nn.functional.grid_sample::function::bfloat16"] == ("run", "")
    assert plan["forward::nn.functional.grid_sample::function::float32"] == ("run", "")


def test_item_sources_decide_which_ops_and_dtypes_a_property_has(manifest):
    plan = outcomes(build_plan(manifest, Selection(), ops("abs", "nn.functional.relu")))
    assert "inplace::abs::inplace::float32" in plan and "out::abs::out::float32" in plan
    assert "errors::abs::function::float32" not in plan  # abs has no OpInfo error inputs
    assert "backward::abs::function::float32" in plan and "backward::abs::function::int64" not in plan
    assert "out::nn.functional.relu::out::float32" not in plan  # relu has no out= form
