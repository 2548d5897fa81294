"""The rng suite (`torchcts.properties.suites.rng`): the device's default generators honour seeds, restore their state,
advance as ops draw and stay apart per device; the seeded generator bugs are caught and fire only in their
condition."""

from __future__ import annotations

import pytest
import torch
from hypothesis import find

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.runtime_checks import by_name
from torchcts.properties.scenario_table import Custom
from torchcts.properties.suites import rng as suite
from torchcts.properties.suites.rng import OPS, PROGRAMS, SCENARIOS, draw
from torchcts.testing.faulty.bug_model import GENERATOR_STEP, SEED_STEP
from torchcts.testing.faulty.suite_bugs.rng import BUGS

BUG = {bug.name: bug for bug in BUGS}
DETECTED_IN = {"seed_saturates_at_int32": "seed_reproducible", "bernoulli_scalar_does_not_advance": "advance",
               "second_device_uses_device0_generator": "per_device"}


def test_the_suite_is_registered_with_the_rng_capability():
    registry.load()
    spec = registry.get("rng")
    assert (spec.capability, spec.level, set(spec.items.scenarios)) == ("rng", 3, set(SCENARIOS))


@pytest.mark.parametrize("scenario", ["seed_reproducible", "state_round_trip", "advance"])
def test_the_program_holds_on_cpu(scenario):
    extra = {"seed_reproducible": 2**40 + 7, "state_round_trip": 2, "advance": 3}[scenario]
    observations = list(PROGRAMS[scenario]("cpu", 64, 2**33 + 5, extra))
    assert observations and all(o.holds for o in observations), [o for o in observations if not o.holds]


def test_cpu_keeps_the_low_32_bits_of_a_seed_which_is_why_the_suite_does_not_ask_for_more():
    torch.manual_seed(5)
    low = torch.rand(8)
    torch.manual_seed(5 + 2**32)
    assert torch.equal(low, torch.rand(8))


def test_each_op_draws_what_its_seed_says_on_faulty():
    from torchcts.testing import faulty  # noqa: F401 - registers the device

    for op in OPS:
        torch.manual_seed(11)
        on_cpu = draw("cpu", op, 64)
        torch.manual_seed(11)
        assert torch.equal(draw("faulty", op, 64), on_cpu), op  # clean faulty draws are CPU's


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_passes_on_cpu_and_clean_faulty(run_suite, scenario):
    expected = Outcome.RUNTIME_UNAVAILABLE if scenario == "per_device" else Outcome.PASSED
    assert run_suite("rng", scenario, max_examples=4)["outcome"] is expected
    assert run_suite("rng", scenario, device="faulty", max_examples=6)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug", sorted(BUG))
def test_each_seeded_bug_is_detected(run_suite, bug):
    record = run_suite("rng", DETECTED_IN[bug], device="faulty", bugs=(bug,), max_examples=10, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


@pytest.mark.parametrize("bug", sorted(BUG))
def test_a_bug_does_not_fire_in_the_scenarios_outside_its_condition(run_suite, bug):
    unaffected = {"seed_saturates_at_int32": ("state_round_trip", "advance"),  # seeds only repeat there
                  "bernoulli_scalar_does_not_advance": ("state_round_trip", "per_device"),
                  "second_device_uses_device0_generator": ("seed_reproducible", "advance")}  # device 0 only
    for scenario in unaffected[bug]:
        assert run_suite("rng", scenario, device="faulty", bugs=(bug,), max_examples=4)["outcome"] is Outcome.PASSED


def test_the_bugs_fire_only_in_their_condition():
    saturate, still, device0 = (
        BUG["seed_saturates_at_int32"], BUG["bernoulli_scalar_does_not_advance"],
        BUG["second_device_uses_device0_generator"])
    assert saturate.ops == (SEED_STEP,) and still.ops == device0.ops == (GENERATOR_STEP,)
    assert saturate.fires(SEED_STEP, (0, 2**31), {}) and not saturate.fires(SEED_STEP, (1, 2**31 - 1), {})
    assert saturate.perturb(SEED_STEP, (0, 2**40), {}, 2**40) == 2**31 - 1
    bernoulli_, normal_ = torch.ops.aten.bernoulli_.float, torch.ops.aten.normal_.default
    assert still.fires(GENERATOR_STEP, (bernoulli_, 0), {}) and not still.fires(GENERATOR_STEP, (normal_, 0), {})
    generator = torch.Generator().manual_seed(3)
    copy = still.perturb(GENERATOR_STEP, (bernoulli_, 0), {}, generator)
    torch.rand(4, generator=copy)
    assert torch.equal(generator.get_state(), torch.Generator().manual_seed(3).get_state())  # never moved on
    assert device0.fires(GENERATOR_STEP, (normal_, 1), {}) and not device0.fires(GENERATOR_STEP, (normal_, 0), {})


def test_the_rows_are_invariants_of_the_device_alone_given_the_case_by_name():
    """Each row is a Custom check with no program to export (the device's random numbers have no CPU result to
    compare), and its program gets a drawn case's values by name."""
    registry.load()
    rows = suite.test_rng.scenarios
    assert tuple(rows) == SCENARIOS and registry.get("rng").items.programs == {}
    assert all(isinstance(row.comparison, Custom) and row.program is None for row in rows.values())
    case = find(suite.rng_cases("advance"), lambda case: True)  # the simplest case the suite draws
    values = by_name(rows["advance"].params, case.sample)
    assert set(values) == {"n", "seed", "draws"}
    assert case.sample.args == (values["n"], values["seed"], values["draws"])
    assert all(o.holds for o in PROGRAMS["advance"]("cpu", **values))
