"""Seeded bugs for the rng suite (properties/suites/rng.py): the device's default generators.

Three ways a backend's generator bookkeeping goes wrong, each at a runtime step of `torch.faulty`:
- the seed is stored in a signed 32-bit field that saturates: every seed from 2**31 up seeds the
  generator alike (`faulty.manual_seed`, seeds >= 2**31);
- one op reads the generator's state without moving its offset on (a kernel launched with a copy of
  the state, as a graph-capture path that forgets to advance): repeated `bernoulli_(p)` calls with a
  scalar p draw the same numbers (`faulty.generator` for `aten.bernoulli_.float`);
- ops on device 1 draw from device 0's generator (a generator looked up by the default device, not
  the op's): seeding device 1 does nothing to its draws, and drawing there moves device 0's stream
  (`faulty.generator`, device index >= 1).
"""

from __future__ import annotations

# imports inside functions: cycle: faulty.runtime imports faulty.bugs, which imports this module for its BUGS

from torchcts.testing.faulty.bug_model import GENERATOR_STEP, SEED_STEP, Bug

INT32_MAX = 2**31 - 1


def _seed_past_int32(func, args, kwargs) -> bool:
    return int(args[1]) > INT32_MAX


def _saturated(func, args, kwargs, seed):
    return INT32_MAX


def _scalar_bernoulli(func, args, kwargs) -> bool:
    return str(args[0]) == "aten.bernoulli_.float"


def _state_copy(func, args, kwargs, generator):
    return generator.clone_state()  # draws from a copy: the device's generator never moves on


def _second_device(func, args, kwargs) -> bool:
    return args[1] >= 1


def _device_zero_generator(func, args, kwargs, generator):
    from torchcts.testing.faulty import runtime

    return runtime.generator(0)


BUGS = (
    Bug("seed_saturates_at_int32", (SEED_STEP,), "a seed of 2**31 or more",
        "the seed is stored as a saturating signed 32-bit integer: every seed from 2**31 up seeds the generator "
        "with 2**31 - 1", _seed_past_int32, _saturated, suite="rng"),
    Bug("bernoulli_scalar_does_not_advance", (GENERATOR_STEP,), "bernoulli_ with a scalar p (aten.bernoulli_.float)",
        "the op draws from a copy of the generator's state, which never moves on: repeated calls draw the same "
        "numbers", _scalar_bernoulli, _state_copy, suite="rng"),
    Bug("second_device_uses_device0_generator", (GENERATOR_STEP,), "a random op on device 1 or higher",
        "the op draws from device 0's generator: device 1's seed is ignored and its draws move device 0's stream",
        _second_device, _device_zero_generator, suite="rng"),
)
