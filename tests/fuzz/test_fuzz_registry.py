"""Fuzz reads the property registry: a manifest's custom suite is hunted like the installed ones, with
scenario items, and a property with a fixed list of cases (`draws=False`) is visited once."""

from __future__ import annotations

import json
import sys

import pytest

from torchcts.manifest.templates import render_template
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

SUITE = '''
"""Clones on the device, as scenarios: one drawn, one a fixed list of cases (draws=False)."""

import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.strategies import Case, place, tensors


def clone(cts, sample, target):
    return place(sample.input, target.device).value.clone()


def check_clone(cts):
    def check(case):
        expected, actual = cts.on_cpu_call(clone, case.sample), cts.on_device_call(clone, case.sample)
        assert torch.equal(actual.cpu(), expected), f"clone differs: {actual} != {expected}"
    return check


@register_property("drawn_clone", capability="inference", level=1, items=ScenarioItems(["clone"], ["float32"]))
def test_drawn_clone(cts):
    cts.run(tensors(cts.dtype, min_dims=1, max_dims=2).map(lambda t: Case(cts.item.op, "scenario", cts.dtype,
                                                                           SampleInput(t), 0)), check_clone(cts))


@register_property("fixed_clone", capability="inference", level=1, draws=False,
                   items=ScenarioItems(["clone"], ["float32"]))
def test_fixed_clone(cts):
    fixed = [torch.arange(6.0).reshape(2, 3), torch.zeros(4)]
    cts.run_each([Case(cts.item.op, "scenario", cts.dtype, SampleInput(t), 0) for t in fixed], check_clone(cts))
'''


def test_a_custom_scenario_suite_is_hunted_and_a_fixed_property_is_visited_once(tmp_path):
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "test_fuzz_clones.py").write_text(SUITE)
    (tmp_path / "manifest.py").write_text(render_template("minimal", device_name="cpu")
                                          + '\nmanifest["custom_test_dirs"] = ["suites"]\n')
    result = warm_programs.run([sys.executable, "-m", "torchcts", "fuzz", "--device", "cpu", "--manifest", "manifest.py",
                             "--property", "drawn_clone", "--property", "fixed_clone", "--max-visits", "4",
                             "--seed", "3", "--examples-per-task", "3", "--task-timeout", "1800"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads(next((tmp_path / "results").glob("fuzz-*/fuzz.json")).read_text())
    items = {item["item"]: item for item in summary["items"]}
    drawn, fixed = items["drawn_clone::clone::scenario::float32"], items["fixed_clone::clone::scenario::float32"]
    assert (fixed["tasks"], fixed["examples"], fixed["outcome"]) == (1, 2, "exhausted")  # both fixed cases, once
    assert (drawn["tasks"], drawn["examples"], drawn["outcome"]) == (3, 9, "hunted")  # the other visits
    assert summary["visits"] == 4 and not drawn["new_cases"] and not fixed["new_cases"]
