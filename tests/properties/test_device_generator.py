"""The device_generator suite (`torchcts.properties.suites.device_generator`): `torch.Generator(device=...)` objects
are reproducible, restore their state and stay independent on CPU and on the faulty device (its compiled part's
generators); each seeded generator bug is caught, in the scenario written for it; a device that cannot make a
generator gets errors, never skips, when it claims the capability."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.device_generator import OPS, PROGRAMS, SCENARIOS, draw
from torchcts.testing.faulty.suite_bugs.device_generator import BUGS
from tests.generator_refusal import refusing_generators


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


BUG = {bug.name: bug for bug in BUGS}
DETECTED_IN = {"generator_seed_keeps_low_32_bits": "seed_reproducible", "new_generators_share_state": "independent",
               "clone_state_shares_state": "state_round_trip", "randperm_ignores_generator": "default_untouched"}


@pytest.fixture
def faulty_generators():
    from torchcts.testing.faulty import generators

    if not generators.available():
        pytest.skip(f"the faulty device has no generators here: {generators.unavailable_reason()}")
    return generators


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_passes_on_the_clean_faulty_device(run_suite, faulty_generators, scenario):
    assert run_suite("device_generator", scenario, device="faulty", max_examples=6)["outcome"] is Outcome.PASSED


def test_every_bug_has_the_scenario_written_for_it():
    assert set(DETECTED_IN) == set(BUG) and set(DETECTED_IN.values()) == set(SCENARIOS)


@pytest.mark.parametrize("bug", sorted(DETECTED_IN))
def test_each_seeded_bug_is_detected(run_suite, faulty_generators, bug):
    record = run_suite("device_generator", DETECTED_IN[bug], device="faulty", bugs=(bug,), max_examples=10,
                       shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_the_clean_faulty_generators_draw_cpus_numbers(faulty_generators):
    for op in OPS:
        device, cpu = torch.Generator("faulty").manual_seed(2**40 + 3), torch.Generator().manual_seed(2**40 + 3)
        assert torch.equal(draw("faulty", op, 64, device), draw("cpu", op, 64, cpu)), op
        assert device.initial_seed() == 2**40 + 3 and device.device == torch.device("faulty", 0)
    assert torch.Generator("faulty:1").device == torch.device("faulty", 1)
    defaults = torch.faulty.default_generators
    assert [g.device for g in defaults] == [torch.device("faulty", i) for i in range(len(defaults))]
    torch.faulty.manual_seed_all(7)
    state = torch.faulty.get_rng_state(1)
    assert torch.equal(defaults[1].get_state(), state)  # the default generator is the runtime's, not a copy
    torch.rand(8, device="faulty:1")
    assert not torch.equal(defaults[1].get_state(), state)


def test_the_bugs_fire_only_in_their_condition(faulty_generators):
    seed, argument = BUG["generator_seed_keeps_low_32_bits"], BUG["randperm_ignores_generator"]
    assert seed.fires(None, (0, 2**32), {}) and not seed.fires(None, (0, 2**32 - 1), {})
    assert seed.perturb(None, (0, 2**40 + 5), {}, 2**40 + 5) == 5
    randperm, rand = torch.ops.aten.randperm.generator, torch.ops.aten.rand.generator
    assert argument.fires(None, (randperm, 0), {}) and not argument.fires(None, (rand, 0), {})
    from torchcts.testing import faulty

    faulty.enable_bugs("clone_state_shares_state")
    try:
        original = torch.Generator("faulty").manual_seed(3)
        clone = original.clone_state()
        torch.rand(4, device="faulty", generator=clone)
        assert not torch.equal(original.get_state(), torch.Generator("faulty").manual_seed(3).get_state())
    finally:
        faulty.disable_bugs()
    original = torch.Generator("faulty").manual_seed(3)
    torch.rand(4, device="faulty", generator=original.clone_state())
    assert torch.equal(original.get_state(), torch.Generator("faulty").manual_seed(3).get_state())  # a copy


@pytest.mark.slow
def test_without_the_compiled_part_a_claim_errors_and_selftest_says_why(tmp_path):
    """TORCHCTS_FAULTY_NATIVE=0 stands for a machine without a compiler: `torch.Generator("faulty")` raises, a claimed
    item is an error (never a skip or a pass), and the selftest's manifest does not claim generators."""
    program = (
        "import torch\n"
        "from torchcts.testing import faulty\n"
        "from torchcts.testing.faulty import generators\n"
        "from torchcts.testing.selftest import faulty_manifest, unbuilt_bugs\n"
        "from torchcts.testing.faulty.bugs import BUGS\n"
        "print('REASON', generators.unavailable_reason())\n"
        "print('CLAIM', [l for l in faulty_manifest().splitlines() if 'device_generator' in l])\n"
        "print('UNBUILT', sorted(name for name, _, _ in unbuilt_bugs(BUGS.values())))\n"
        "try:\n"
        "    torch.Generator('faulty')\n"
        "except Exception as exc:\n"
        "    print('RAISES', type(exc).__name__)\n")
    env = {**os.environ, "TORCHCTS_FAULTY_NATIVE": "0"}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "REASON the faulty device's compiled part is switched off (TORCHCTS_FAULTY_NATIVE=0)" in done.stdout
    assert "manifest[\"capabilities\"][\"device_generator\"] = False" in done.stdout
    assert f"UNBUILT {sorted(BUG)}" in done.stdout and "RAISES" in done.stdout


def test_the_faulty_device_without_generators_gets_errors_not_skips(run_suite):
    with refusing_generators():
        for scenario in SCENARIOS:
            record = run_suite("device_generator", scenario, device="faulty", max_examples=2, shrink=False)
            assert record["outcome"] in (Outcome.ERROR, Outcome.FAILED), record
            assert "getNewGenerator" in str(record), record
