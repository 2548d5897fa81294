"""Seeded bugs for the device_generator suite (properties/suites/device_generator.py): the device's generator objects.

`torch.Generator(device="faulty")` comes from the device's compiled part (generators.py, native/); each bug acts at
one of the steps it asks the Python side about, as a C++ backend's generator bookkeeping goes wrong:
- the seed is kept in a 32-bit field: `initial_seed()` reads back only the low 32 bits of a larger seed (the draws,
  which use the low 32 bits, are right) (`faulty.generator_seed`);
- every generator made on a device after the first shares the first one's state (a generator looked up per device
  instead of allocated): two generators drawn interleaved disturb each other (`faulty.new_generator`);
- `clone_state()` returns a generator sharing the original's state instead of a copy (`faulty.generator_clone`);
- `randperm` ignores the generator it is given and draws from the device's default generator (a kernel that never
  threads its generator argument through): its draws do not repeat with the seed and move the default generator
  (`faulty.generator_argument` for aten.randperm).
"""

from __future__ import annotations

from torchcts.testing.faulty.bug_model import (GENERATOR_ARGUMENT_STEP, GENERATOR_CLONE_STEP, GENERATOR_SEED_STEP,
                                               NEW_GENERATOR_STEP, Bug)

LOW_32_BITS = 2**32 - 1


def _seed_past_32_bits(func, args, kwargs) -> bool:
    return int(args[1]) > LOW_32_BITS


def _low_32_bits(func, args, kwargs, seed):
    return int(seed) & LOW_32_BITS


def _a_later_generator(func, args, kwargs) -> bool:
    from torchcts.testing.faulty import generators  # cycle: generators imports bugs, which imports this module

    return generators.first_made(args[0]) is not None


def _first_generators_state(func, args, kwargs, proposed):
    from torchcts.testing.faulty import generators  # cycle: as above

    return generators.first_made(args[0])


def _always(func, args, kwargs) -> bool:
    return True


def _original_state(func, args, kwargs, copy):
    return args[1]


def _randperm(func, args, kwargs) -> bool:
    return str(args[0]).startswith("aten.randperm.")


def _device_default(func, args, kwargs, own):
    from torchcts.testing.faulty import runtime  # cycle: runtime imports bugs, which imports this module

    return runtime.generator(args[1])


BUGS = (
    Bug("generator_seed_keeps_low_32_bits", (GENERATOR_SEED_STEP,), "manual_seed of a device generator with a seed "
        "of 2**32 or more", "the seed is stored in 32 bits: initial_seed() reads back its low 32 bits (the draws are "
        "right)", _seed_past_32_bits, _low_32_bits, suite="device_generator"),
    Bug("new_generators_share_state", (NEW_GENERATOR_STEP,), "a second or later generator made on a device",
        "it shares the state of the device's first generator: generators drawn interleaved disturb each other",
        _a_later_generator, _first_generators_state, suite="device_generator", precise=False),
    Bug("clone_state_shares_state", (GENERATOR_CLONE_STEP,), "clone_state() of a device generator",
        "the clone shares the original's state instead of copying it: drawing from one moves the other",
        _always, _original_state, suite="device_generator"),
    Bug("randperm_ignores_generator", (GENERATOR_ARGUMENT_STEP,), "randperm given a device generator",
        "draws from the device's default generator instead of the one given: the seed does not repeat its draws, "
        "and the default generator moves", _randperm, _device_default, suite="device_generator"),
)
