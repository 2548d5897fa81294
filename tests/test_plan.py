"""The run plan: items that run, and the outcome and reason of every item that does not."""

from __future__ import annotations

import pytest
import torch

from torchcts.manifest import load_manifest
from torchcts.plan.catalog import all_ops, op_id
from torchcts.crashes.oracle import OracleCrash
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


def test_known_oracle_crash_is_cpu_contract_for_its_dtype_only(manifest):
    plan = outcomes(build_plan(manifest, Selection(), ops("nn.functional.grid_sample")))
    if torch.__version__.startswith("2.13."):
        outcome, reason = plan["forward::nn.functional.grid_sample::function::bfloat16"]
        assert outcome == "cpu_contract" and "segfaults" in reason
    assert plan["forward::nn.functional.grid_sample::function::float32"] == ("run", "")


def test_oracle_crash_rules_match_properties_dtypes_and_versions():
    rule = OracleCrash(frozenset({"backward"}), r"^foo$", frozenset({"bfloat16"}), ">=2.13,<2.14", "dies")
    assert rule.matches("backward", "foo", torch.bfloat16, (2, 13))
    assert not rule.matches("forward", "foo", torch.bfloat16, (2, 13))
    assert not rule.matches("backward", "foobar", torch.bfloat16, (2, 13))
    assert not rule.matches("backward", "foo", torch.float32, (2, 13))
    assert not rule.matches("backward", "foo", torch.bfloat16, (2, 14))
    every = OracleCrash(None, r"^foo$", frozenset({"bfloat16"}), ">=2.0,<3.0", "dies")
    assert every.matches("errors", "foo", torch.bfloat16, (2, 99))
