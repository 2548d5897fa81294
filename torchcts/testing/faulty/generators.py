"""The faulty device's generator objects: `torch.Generator(device="faulty")`, from its compiled part.

The compiled part (`native_build`, `native/faulty_runtime.cpp`) registers the device's PrivateUse1 hooks; each
generator it makes holds a CPU generator and forwards seeds and states to it. Here is the Python side:
- `install()`: register those hooks in place of torch's Python ones and answer the steps the compiled part asks
  about (the current device, the CPU generator a new, cloned or default generator gets, the seed it keeps), each
  through `bugs.after` so seeded bugs can change the answer (suite_bugs/device_generator.py);
- `cpu_generator_of()`: the CPU generator a random op given a faulty generator draws from (`GENERATOR_ARGUMENT_STEP`).

Without the compiled part (no compiler, TORCHCTS_FAULTY_NATIVE=0) torch's Python hooks stay and
`torch.Generator(device="faulty")` raises; `unavailable_reason()` says why, for whatever claims generators.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from torchcts.testing import native_build
from torchcts.testing.faulty import bugs, ordinals
from torchcts.testing.faulty.bug_model import (GENERATOR_ARGUMENT_STEP, GENERATOR_CLONE_STEP, GENERATOR_SEED_STEP,
                                               NEW_GENERATOR_STEP)
from torchcts.testing.faulty.trace import note_step

_BUG_STEPS = frozenset({NEW_GENERATOR_STEP, GENERATOR_CLONE_STEP, GENERATOR_SEED_STEP})
_installed = False
_default_cpu_generator: Callable[[int], torch.Generator] | None = None
_first_made: dict[int, torch.Generator] = {}  # device index -> the CPU generator of its first generator


def install(default_generator: Callable[[int], torch.Generator]) -> bool:
    """Register the compiled hooks (the device's generators) if the compiled part loads; whether it did.
    `default_generator(index)` is the CPU generator device `index`'s default generator draws from."""
    global _installed, _default_cpu_generator
    native = native_build.load()
    if not native.available:
        return False
    _default_cpu_generator = default_generator
    native.module.install(answer_step)
    native.module.register_hooks()
    _installed = True
    return True


def answer_step(name: str, args: tuple, value: Any) -> Any:
    """The compiled part's question at step `name` (its arguments, the value it would use), answered."""
    if name == "faulty.current_device":
        return ordinals.current()
    if name == "faulty.default_generator":
        return _default_cpu_generator(args[0])
    if name in _BUG_STEPS:
        note_step(name)
        value = bugs.after(name, args, {}, value)
        if name == NEW_GENERATOR_STEP:
            _first_made.setdefault(args[0], value)
        return value
    raise RuntimeError(f"the faulty device's compiled part asked about an unknown step {name!r}")


def available() -> bool:
    """Whether `torch.Generator(device="faulty")` works in this process (the compiled hooks are registered)."""
    return _installed


def unavailable_reason() -> str | None:
    """Why the device has no generator objects, or None when it has them."""
    if _installed:
        return None
    return native_build.load().reason or "the faulty device is not registered in this process"


def first_made(index: int) -> torch.Generator | None:
    """The CPU generator of the first generator made on device `index` in this process (a seeded bug shares it)."""
    return _first_made.get(index)


def default_generator(index: int) -> torch.Generator:
    """Device `index`'s default generator (the compiled hooks' getDefaultGenerator)."""
    return native_build.load().module.default_generator(index)


def is_device_generator(value: Any) -> bool:
    """Whether `value` is a generator the compiled part made (a non-CPU generator in a process with the device)."""
    return isinstance(value, torch.Generator) and value.device.type != "cpu" and _installed


def cpu_generator_of(func: Any, index: int, generator: torch.Generator) -> torch.Generator:
    """The CPU generator random op `func` on device `index` draws from when given the faulty `generator` (its own
    CPU generator; a seeded bug may hand another)."""
    own = native_build.load().module.cpu_generator(generator)
    note_step(GENERATOR_ARGUMENT_STEP)
    return bugs.after(GENERATOR_ARGUMENT_STEP, (func, index), {}, own)
