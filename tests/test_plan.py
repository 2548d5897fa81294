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
    assert plan["inplace::add::inplace::float32"] == ("deselected", "level 3 is above --level 2")


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
