"""Scenario programs (`torchcts.engine.programs`): a suite's torch-only function, compared device vs CPU."""

from __future__ import annotations

import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.engine.programs import program_check
from torchcts.outcomes import Outcome
from torchcts.plan import registry
from torchcts.strategies import Case, tensors


def transpose_clone(input):
    view = input.transpose(0, -1)
    return view.clone(), view.stride(), view._is_view()


def test_a_program_property_passes_on_cpu_and_fails_where_the_device_differs(run_suite, monkeypatch):
    registry.load()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @registry.register_property("program_probe", capability="inference", level=1,
                                items=registry.ScenarioItems(["transpose_clone"], ["float32"],
                                                             programs={"transpose_clone": transpose_clone}))
    def test_program_probe(cts):
        cases = tensors(cts.dtype, min_dims=2, max_dims=3, allow_empty=False).map(
            lambda t: Case(cts.item.op, "scenario", cts.dtype, SampleInput(t), 0))
        cts.run(cases, program_check(cts, transpose_clone))

    record = run_suite("program_probe", "transpose_clone", max_examples=5)
    assert record["outcome"] is Outcome.PASSED and record["examples"] == 5
    faulty = run_suite("program_probe", "transpose_clone", device="faulty", max_examples=5)
    assert faulty["outcome"] is Outcome.PASSED
