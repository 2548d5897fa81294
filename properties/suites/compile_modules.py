"""Whole-model compile: the training workloads, their forward under torch.compile on the device, give eager CPU's.

One scenario per training model (`mlp`, `cnn`, `transformer`, `rnn`: properties/suites/training.py) and
compile backend (`inductor`, `aot_eager`). The device runs the training program with the model's
forward (and so its backward, through AOT autograd) compiled afresh for each case; the oracle is the
same program eager on CPU. Losses, weights, buffers and gradients must match within the training
tolerance widened for the compiler's reordered arithmetic. The graphs dynamo compiled and its
graph breaks are counted into the item's record (`compile_stats`): a backend whose tensors break
graphs still passes if its values are right, and the record shows what compile made of it.

Comparing with eager CPU rather than eager on the device: the training suite proves the device's
eager run equal to CPU's, so a difference here that the training suite does not show is the
compiler's.

Limits: float32; the optimizer step stays eager; dynamic shapes are whatever dynamo decides (each
case starts from a reset); `mode=` and `fullgraph=` are not varied; inductor on CPU compiles C++ for
each new shape, so these items are slow (level 6).
"""

from __future__ import annotations

import attrs
import torch
from hypothesis import strategies as st

from torchcts.engine.programs import run_program
from torchcts.cases.bounds import OneOf
from torchcts.cases.scenario_case import named, scenario_case
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.properties.suites.training import MODELS, PARAMS as TRAINING_PARAMS, train_steps, training_cases
from torchcts.strategies.sample_walk import sample_input

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("the training workloads with their forward under `torch.compile` (inductor, aot_eager) give eager CPU's "
          "losses, weights and gradients; graphs and graph breaks counted in the record")
ITEMS = "scenarios (model x backend)"

DTYPES = ("float32",)
CATEGORIES = ("compile",)  # the manifest's tolerance override the comparison reads (vocabulary.TOLERANCE_READERS)
BACKENDS = ("aot_eager", "inductor")
SCENARIOS = tuple(f"{model}_{backend}" for model in MODELS for backend in BACKENDS)
PROGRAMS = {scenario: train_steps for scenario in SCENARIOS}


def _split(scenario: str) -> tuple[str, str]:
    model, _, backend = scenario.partition("_")
    return model, backend


def _params(scenario: str):
    """The training model's bounds, with the backend as the last positional argument."""
    model, backend = _split(scenario)
    training = TRAINING_PARAMS[model]
    return attrs.evolve(training, args=(*training.args, ("backend", OneOf((backend,)))))


PARAMS = {scenario: _params(scenario) for scenario in SCENARIOS}  # what each scenario's cases store


def compiled_cases(scenario: str) -> st.SearchStrategy:
    """The training suite's cases for the scenario's model, with its backend as the program's last argument."""
    model, backend = _split(scenario)

    def compiled(case):
        return scenario_case(scenario, case.dtype, PARAMS[scenario],
                             {**named(TRAINING_PARAMS[model], case.sample), "backend": backend},
                             f"{case.transforms[0]}, forward compiled with {backend}")

    return training_cases(model).map(compiled)


def _dynamo_counts() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {"graphs": counters["stats"]["unique_graphs"], "graph_breaks": sum(counters["graph_break"].values())}


def compiled_check(cts, row):
    """Compiled on the device equals eager on CPU; dynamo's counts for the device run go to the record. The training
    tolerance, norm-wise, widened four times per step (the compiler reorders each step's arithmetic)."""
    run = run_program(train_steps)

    def check(case):
        eager = sample_input(case.sample.input, args=(*case.sample.args[:-1], None))
        expected = cts.on_cpu_call(run, eager)
        from torch._dynamo.utils import counters

        counters.clear()
        try:
            actual = cts.on_device_call(run, case.sample, what=f" ({case.transforms[0]})")
        finally:
            cts.count_compile(**_dynamo_counts())
        steps = row.values(case)["steps"]
        cts.assert_matches(actual, expected, what=case.transforms[0], widen=4.0 * steps, inputs=case.sample,
                           normwise=True, categories=CATEGORIES)

    return check


test_compile_modules = scenario_suite(
    "compile_modules", capability="compile", level=6, dtypes=DTYPES,
    scenarios=[Scenario(scenario, PARAMS[scenario], train_steps, Custom(compiled_check),
                        cases=lambda cts: compiled_cases(cts.item.op)) for scenario in SCENARIOS])
