"""Adding a suite is adding a module: a scenario property written into a manifest's `custom_test_dirs`
appears in the plan, in `torchcts show-skips`, in the records of a real run and in the report's
capability table, and no other module changes."""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan import registry
from torchcts.plan.build import Selection, build_plan
from torchcts.results.writer import read_records
from tests import warm_programs

# The whole suite: what a backend team would write into its own folder.
SUITE = '''
"""Round trip of a view through .clone() on the device: the clone holds the view's values and strides."""

from torch.testing._internal.opinfo.core import SampleInput

from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.strategies import Case, place, tensors

VIEWS = {
    "view_clone": lambda t: t.unsqueeze(0),
    "transpose_clone": lambda t: t.transpose(0, -1),
}


@register_property("view_round_trip", capability="inference", level=1,
                   items=ScenarioItems(["view_clone", "transpose_clone"], ["float32", "int64", "float16"]))
def test_view_round_trip(cts):
    assert cts.op is None  # a scenario item has no OpInfo: its name is the item's op
    view = VIEWS[cts.item.op]

    def clone_of_view(cts, sample, target):
        return view(place(sample.input, target.device).value).clone()

    def check(case):
        expected = cts.on_cpu_call(clone_of_view, case.sample)
        actual = cts.on_device_call(clone_of_view, case.sample, what=" (clone of a view)")
        cts.assert_matches(actual, expected, strides=True)

    cases = tensors(cts.dtype, min_dims=1, max_dims=3).map(
        lambda t: Case(cts.item.op, "scenario", cts.dtype, SampleInput(t), 0))
    cts.run(cases, check)
'''
PROPERTY = "view_round_trip"


@pytest.fixture
def fresh_registry(monkeypatch):
    """The installed properties, in a registry copy the custom suite goes into (restored afterwards)."""
    registry.load()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def write_manifest(folder, **changes):
    """A minimal cpu manifest (float32, int64, bool; inference; level 2) whose custom_test_dirs holds the suite."""
    (folder / "suites").mkdir(exist_ok=True)
    (folder / "suites" / "test_view_round_trip.py").write_text(SUITE)
    lines = [render_template("minimal", device_name="cpu"), 'manifest["custom_test_dirs"] = ["suites"]']
    lines += [f"manifest[{key!r}] = {{**(manifest[{key!r}] or {{}}), **{value!r}}}"  # merged into the template's
              for key, value in changes.items()]
    path = folder / "manifest.py"
    path.write_text("\n".join(lines) + "\n")
    return path


def outcomes(plan, prop=PROPERTY):
    result = {item.id: ("run", "") for item in plan.items if item.property == prop}
    result.update({a.item.id: (a.outcome, a.reason) for a in plan.accounting if a.item.property == prop})
    return result


def test_the_plan_has_its_scenario_items_with_the_same_accounting_rules(fresh_registry, tmp_path):
    manifest = load_manifest(write_manifest(tmp_path))[0]
    plan = build_plan(manifest, Selection(), ops=())  # no OpInfo: only scenario items
    assert outcomes(plan) == {
        "view_round_trip::view_clone::scenario::float32": ("run", ""),
        "view_round_trip::view_clone::scenario::int64": ("run", ""),
        "view_round_trip::view_clone::scenario::float16": ("dtype_not_supported",
                                                           "float16: the manifest marks it False"),
        "view_round_trip::transpose_clone::scenario::float32": ("run", ""),
        "view_round_trip::transpose_clone::scenario::int64": ("run", ""),
        "view_round_trip::transpose_clone::scenario::float16": ("dtype_not_supported",
                                                                "float16: the manifest marks it False"),
    }
    item = plan.items[0]
    assert (item.property, item.op, item.variant, item.dtype, item.level) == (PROPERTY, "view_clone", "scenario",
                                                                           "float32", 1)


def test_dtype_regexes_skip_ops_and_ops_patterns_match_the_scenario_name(fresh_registry, tmp_path):
    path = write_manifest(tmp_path, supported_dtypes={"float16": "^view_"}, skip_ops={"transpose_clone": "known bad"})
    manifest = load_manifest(path)[0]
    plan = outcomes(build_plan(manifest, Selection(), ops=()))
    assert plan["view_round_trip::view_clone::scenario::float16"] == ("run", "")
    assert plan["view_round_trip::transpose_clone::scenario::float16"] == (
        "dtype_regex_filtered", "float16: the manifest's regex for it does not match this op")
    assert plan["view_round_trip::transpose_clone::scenario::float32"] == ("op_excluded", "known bad")
    unskipped = load_manifest(write_manifest(tmp_path, supported_dtypes={"float16": "^view_", "int64": True}))[0]
    chosen = outcomes(build_plan(unskipped, Selection(dtypes=(torch.float16,)), ops=()))  # claims it for every op
    assert chosen["view_round_trip::transpose_clone::scenario::float16"] == ("run", "")
    assert chosen["view_round_trip::view_clone::scenario::int64"] == ("deselected", "--dtype leaves it out")
    narrowed = outcomes(build_plan(load_manifest(write_manifest(tmp_path))[0], Selection(op_patterns=("^view_",)),
                                   ops=()))
    assert narrowed["view_round_trip::view_clone::scenario::float32"] == ("run", "")
    assert narrowed["view_round_trip::transpose_clone::scenario::float32"] == ("deselected", "--ops leaves it out")


def test_show_skips_lists_it(fresh_registry, tmp_path):
    path = write_manifest(tmp_path)
    result = CliRunner().invoke(cli, ["show-skips", "--manifest", str(path), "--property", PROPERTY, "--list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert f"  {PROPERTY:28} {4:6}" in lines  # would run, per property
    assert "    view_round_trip::transpose_clone::scenario::int64" in lines
    assert "              view_round_trip::view_clone::scenario::float16" in lines  # not run, listed by reason


@pytest.fixture(scope="module")
def scenario_run(tmp_path_factory):
    """A real `torchcts run --validation` of the custom property: (the run folder, its records of the property)."""
    tmp_path = tmp_path_factory.mktemp("scenario_run")
    path = write_manifest(tmp_path)
    command = [sys.executable, "-m", "torchcts", "run", "--validation", "--manifest", str(path), "--property", PROPERTY,
               "--max-examples", "2", "--derandomize", "--no-shrink", "--results-dir", str(tmp_path / "results")]
    result = warm_programs.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600,
                            env=dict(os.environ, PYTHONHASHSEED="0"))
    folders = list((tmp_path / "results").glob("*/run.json"))
    assert folders, (result.stdout + result.stderr)[-3000:]
    records = {r["item"]: r for r in read_records(folders[0].parent) if r["property"] == PROPERTY}
    return result, folders[0].parent, records


RUN_ITEMS = [f"view_round_trip::{s}::scenario::{d}"
             for s in ("view_clone", "transpose_clone") for d in ("float32", "int64")]


@pytest.mark.slow
def test_a_run_records_it_and_the_report_shows_it_under_its_capability(scenario_run, tmp_path):
    _, folder, records = scenario_run
    assert sorted(records) == sorted(RUN_ITEMS + [f"view_round_trip::{s}::scenario::float16"
                                                  for s in ("view_clone", "transpose_clone")])
    assert all(records[item]["examples"] >= 1 for item in RUN_ITEMS)  # it ran: cases were drawn
    assert records["view_round_trip::view_clone::scenario::float16"]["outcome"] == "dtype_not_supported"
    environment = json.loads((folder / "run.json").read_text())["environment"]
    assert environment["property_capabilities"][PROPERTY] == "inference"

    report = CliRunner().invoke(cli, ["report", "--from", str(folder), "--output", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    scorecard = (tmp_path / "report" / "scorecard.md").read_text()
    inference = next(line for line in scorecard.splitlines() if line.startswith("| inference "))
    assert PROPERTY in inference and "forward" in inference


@pytest.mark.slow
def test_its_cases_pass_against_cpu_itself(scenario_run):
    result, _, records = scenario_run
    ran = {item: (records[item]["outcome"], records[item]["examples"]) for item in RUN_ITEMS}
    assert ran == {item: ("passed", 2) for item in RUN_ITEMS}, (result.stdout + result.stderr)[-3000:]
    assert all(len(records[item]["fingerprints"]) == 2 for item in RUN_ITEMS)
    assert result.returncode == 0
