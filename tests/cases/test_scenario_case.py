"""Scenario cases by name (`cases.scenario_case`): names come from the declaration, round trip through the sample the
engine places, and a mapping with an unknown or missing name is refused naming it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings

from torchcts.cases import scenario_case
from torchcts.cases.bounds import CaseParams, Floats, Ints, Lists, OneOf, Optional
from torchcts.strategies.sample_walk import sample_input
from torch.testing._internal.opinfo.core import SampleInput  # noqa: F401  (imported here: its import starts `uname`)

PARAMS = CaseParams({"model": OneOf(("mlp",)), "sizes": Lists(Ints(1, 4), 2, 2), "steps": Ints(1, 3),
                     "lr": Optional(Floats(0.0, 1.0))}, kwargs={"seed": Ints(0, 9)}, min_args=3,
                    rules=(("sizes[0] <= steps + 3", lambda p: p["sizes"][0] <= p["steps"] + 3),))


def test_names_are_the_input_then_the_declared_args_then_the_kwargs():
    assert scenario_case.names(PARAMS) == ("input", "model", "sizes", "steps", "lr", "seed")


def test_a_case_built_from_names_is_the_positional_case_the_engine_places():
    values = {"input": torch.ones(1), "model": "mlp", "sizes": [1, 2], "steps": 2, "lr": 0.5, "seed": 3}
    case = scenario_case.scenario_case("mlp", torch.float32, PARAMS, values, "mlp of two steps")
    old = sample_input(values["input"], args=("mlp", [1, 2], 2, 0.5), kwargs={"seed": 3})
    assert case.variant == "scenario" and case.op_id == "mlp" and case.transforms == ("mlp of two steps",)
    assert case.sample.args == old.args and case.sample.kwargs == old.kwargs and case.sample.input is values["input"]
    assert PARAMS.problem(case.sample) is None
    assert scenario_case.named(PARAMS, case.sample) == values


def test_an_optional_trailing_parameter_may_be_left_out():
    case = scenario_case.scenario_case("mlp", torch.float32, PARAMS,
                                       {"input": torch.zeros(1), "model": "mlp", "sizes": [1, 1], "steps": 1}, "")
    assert case.sample.args == ("mlp", [1, 1], 1) and case.sample.kwargs == {}


@pytest.mark.parametrize("values, field", [
    ({"input": 0, "model": "mlp", "sizes": [1, 1], "steps": 1, "width": 3}, "params.width"),
    ({"input": 0, "model": "mlp", "steps": 1}, "params.sizes"),
    ({"model": "mlp", "sizes": [1, 1], "steps": 1}, "params.input"),
    ({"input": 0, "model": "mlp", "sizes": [1, 1], "lr": 0.5}, "params.steps"),
])
def test_an_unknown_or_missing_name_is_refused_by_name(values, field):
    problem = scenario_case.named_problem(PARAMS, values)
    assert problem is not None and problem[0] == field, problem
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        scenario_case.scenario_case("mlp", torch.float32, PARAMS, values, "")


def test_the_named_file_form_and_the_positional_one_convert_both_ways():
    positional = {"input": {"tensor": "t"}, "args": ["mlp", [1, 2], 2], "kwargs": {"dict": {"seed": 1}}}
    named = scenario_case.named_inputs(PARAMS, positional)
    assert named == {"input": {"tensor": "t"}, "model": "mlp", "sizes": [1, 2], "steps": 2, "seed": 1}
    assert scenario_case.positional_inputs(PARAMS, named) == positional
    assert scenario_case.positional_inputs(PARAMS, {**named, "depth": 2}) == (
        "inputs.scenario.depth", "not a parameter of this scenario; declared: input, model, sizes, steps, lr, seed")
    del named["sizes"]
    assert scenario_case.positional_inputs(PARAMS, named) == ("inputs.scenario.sizes", "missing")


@settings(max_examples=40, database=None)
@given(scenario_case.params_strategy(PARAMS))
def test_the_strategy_from_the_bounds_draws_within_them_and_keeps_the_rules(values):
    case = scenario_case.scenario_case("mlp", torch.float32, PARAMS, values, "")
    assert PARAMS.problem(case.sample) is None
    assert values["sizes"][0] <= values["steps"] + 3 and torch.equal(values["input"], torch.zeros(1))
