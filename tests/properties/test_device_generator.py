"""The device_generator suite (`torchcts.properties.suites.device_generator`): `torch.Generator(device=...)` objects
are reproducible, restore their state and stay independent on CPU; a device that cannot make one (the faulty
device) gets errors, never skips, when it claims the capability."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.device_generator import OPS, PROGRAMS, SCENARIOS, draw
from torchcts.testing.faulty.suite_bugs.device_generator import BUGS


def test_the_suite_is_registered_with_the_device_generator_capability():
    registry.load()
    spec = registry.get("device_generator")
    assert (spec.capability, spec.level, set(spec.items.scenarios)) == ("device_generator", 3, set(SCENARIOS))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_program_holds_on_cpu(scenario):
    extra = 1 if scenario == "state_round_trip" else 2**40 + 9
    observations = list(PROGRAMS[scenario]("cpu", 64, 2**35 + 1, extra))
    assert observations and all(o.holds for o in observations), [o for o in observations if not o.holds]


def test_the_draws_follow_the_generator_given_not_the_default_one():
    first = torch.Generator().manual_seed(4)
    for op in OPS:
        torch.manual_seed(0)
        mine = draw("cpu", op, 64, torch.Generator().manual_seed(4))
        torch.manual_seed(1)  # another default stream: the draws do not change
        assert torch.equal(draw("cpu", op, 64, torch.Generator().manual_seed(4)), mine), op
        assert not torch.equal(draw("cpu", op, 64, first), draw("cpu", op, 64, first)), op  # it advances


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_passes_on_cpu(run_suite, scenario):
    assert run_suite("device_generator", scenario, max_examples=4)["outcome"] is Outcome.PASSED


def test_the_faulty_device_claiming_generators_gets_errors_not_skips(run_suite):
    assert BUGS == ()  # no generator objects on the faulty device: nothing to seed a bug in
    for scenario in SCENARIOS:
        record = run_suite("device_generator", scenario, device="faulty", max_examples=2, shrink=False)
        assert record["outcome"] in (Outcome.ERROR, Outcome.FAILED), record
        assert "Generator" in str(record) or "getNewGenerator" in str(record), record
