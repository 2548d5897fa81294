"""The engine checks every drawn scenario case against its suite's declared bounds (`ScenarioItems.params`): a
strategy that drifts outside its declaration fails its own run as a TorchCTS defect, so the stored-case reader
and the strategies cannot disagree."""

from __future__ import annotations

import pytest
import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.plan.build import PlanItem
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    path = tmp_path_factory.mktemp("bounds") / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    return EngineSettings(target=Target("cpu"), manifest=load_manifest(path)[0], level=1, max_examples=50,
                          versions=versions())


def _register(name: str, high: int):
    """A scenario property drawing n in 0..20 whose declaration allows 0..`high`."""
    def test_counts(cts):
        cts.run(st.integers(0, 20).map(lambda n: Case("probe", "scenario", torch.float32,
                                                        sample_input(torch.zeros(1), args=(n,)), 0)),
                lambda case: None)

    registry.register_property(name, capability="inference", level=1,
                               items=registry.ScenarioItems(("probe",), ("float32",),
                                                            params=CaseParams({"n": Ints(0, high)})))(test_counts)
    return PlanItem(name, "probe", "scenario", "float32", 1)


def test_a_drawn_case_outside_the_declared_bounds_is_a_torchcts_defect(settings):
    try:
        record = run_item(_register("bounds_probe_drifts", 5), settings)
    finally:
        registry._REGISTRY.pop("bounds_probe_drifts", None)
    assert record["outcome"] is Outcome.ERROR and record["error_kind"] == "harness", record
    text = record.get("error") or record.get("reason") or ""
    assert "TorchCTS defect" in text and "inputs.args[0] (n)" in text, text


def test_draws_within_the_declared_bounds_run_as_usual(settings):
    try:
        record = run_item(_register("bounds_probe_within", 20), settings)
    finally:
        registry._REGISTRY.pop("bounds_probe_within", None)
    assert record["outcome"] is Outcome.PASSED and record["examples"] > 5, record
