"""`torch.faulty`: the faulty device's runtime API, shaped like `torch.cuda`'s.

- Devices: TORCHCTS_FAULTY_DEVICES of them (default 2), a current device per thread (`ordinals`)
  (`set_device`, the `device(i)` guard), `synchronize`, names and properties.
- Random numbers: each device has its own generator (a CPU generator: seeded alike, a device draws
  CPU's numbers), used by every random op on the device that is given no generator; `manual_seed`,
  `manual_seed_all`, `seed`, `initial_seed`, `get_rng_state`/`set_rng_state` act on it.
- Memory: statistics from the device's live storages (`memory`), `empty_cache`, out-of-memory past
  the device's capacity.
- Streams and events (`streams`).
- Pinned host memory: `Tensor.pin_memory()` gives a pinned copy the device knows (`pinned`).

Generator objects (`torch.Generator(device="faulty")`, `default_generators`) come from the device's compiled part
(`generators`): torch (2.13) gives a Python backend no hook for them.
Seeded runtime bugs act at the steps named in `bug_model`.
"""

from __future__ import annotations

from typing import Any

import attrs
import torch

from torchcts.testing.faulty import bugs, generators, memory, streams
from torchcts.testing.faulty.bug_model import (DEVICE_COUNT_STEP, GENERATOR_STEP, GUARD_EXIT_STEP, MEMORY_STATS_STEP,
                                               SEED_STEP, SET_DEVICE_STEP)
from torchcts.testing.faulty.ordinals import count, current, make_current
from torchcts.testing.faulty.streams import index_of
from torchcts.testing.faulty.trace import note_step

DEFAULT_SEED = 67280421310721  # what a fresh CUDA generator starts from



def _step(name: str, args: tuple, value: Any) -> Any:
    note_step(name)
    return bugs.after(name, args, {}, value)


def set_current(index: int) -> None:
    index = index_of(index)
    make_current(_step(SET_DEVICE_STEP, (current(), index), index))


class DeviceGuard:
    """`torch.faulty.device(i)`: make device `i` current for the block, then restore the previous one."""

    def __init__(self, device: Any):
        self.index = -1 if device is None or (isinstance(device, int) and device < 0) else index_of(device)
        self._previous = -1

    def __enter__(self) -> None:
        if self.index >= 0:
            self._previous = current()
            set_current(self.index)

    def __exit__(self, *exc: Any) -> None:
        if self.index >= 0:
            make_current(_step(GUARD_EXIT_STEP, (self.index, self._previous), self._previous))


# -- random numbers ---------------------------------------------------------------------------------------------------

_generators: dict[int, torch.Generator] = {}


def generator(index: int) -> torch.Generator:
    """Device `index`'s generator (made on first use, seeded as CUDA seeds a fresh one)."""
    if index not in _generators:
        _generators[index] = torch.Generator().manual_seed(DEFAULT_SEED)
    return _generators[index]


def generator_for(func: Any, index: int) -> torch.Generator:
    """The generator a random op on device `index` given none draws from (seeded bugs may hand another)."""
    return _step(GENERATOR_STEP, (func, index), generator(index))


def seed_device(index: int, seed: int) -> None:
    generator(index).manual_seed(int(_step(SEED_STEP, (index, seed), int(seed))))


@attrs.frozen
class DeviceProperties:
    """What `torch.faulty.get_device_properties(i)` says, in the fields torch.cuda's carries most often."""

    name: str
    total_memory: int
    multi_processor_count: int = 1
    major: int = 1
    minor: int = 0


class DeviceModule:
    """`torch.faulty`: the module torch and programs call for the device's runtime."""

    Stream = streams.Stream
    Event = streams.Event
    StreamContext = streams.StreamContext
    OutOfMemoryError = torch.OutOfMemoryError
    # torch.utils.checkpoint saves and restores a device's RNG state only where its module says it is initialised
    _initialized = True

    # -- devices ----------------------------------------------------------------------------------------------------

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def _is_in_bad_fork(self) -> bool:
        return False

    def device_count(self) -> int:
        return int(_step(DEVICE_COUNT_STEP, (), count()))

    def current_device(self) -> int:
        return current()

    def set_device(self, device: Any) -> None:
        set_current(index_of(device))

    def device(self, device: Any) -> DeviceGuard:
        return DeviceGuard(device)

    def synchronize(self, device: Any = None) -> None:
        streams.synchronize(device)

    def get_device_name(self, device: Any = None) -> str:
        return f"Faulty Test Device {index_of(device)}"

    def get_device_properties(self, device: Any = None) -> DeviceProperties:
        index = index_of(device)
        return DeviceProperties(self.get_device_name(index), memory.capacity(index))

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        properties = self.get_device_properties(device)
        return properties.major, properties.minor

    def get_amp_supported_dtype(self) -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]

    # -- streams and events -----------------------------------------------------------------------------------------

    def current_stream(self, device: Any = None) -> streams.Stream:
        return streams.current_stream(device)

    def default_stream(self, device: Any = None) -> streams.Stream:
        return streams.default_stream(device)

    def set_stream(self, stream: streams.Stream) -> None:
        streams.set_stream(stream)

    def stream(self, stream: streams.Stream | None) -> streams.StreamContext:
        return streams.StreamContext(stream)

    # -- memory -----------------------------------------------------------------------------------------------------

    def memory_stats(self, device: Any = None) -> dict[str, int]:
        index = index_of(device)
        stats = {"allocated_bytes.all.current": memory.allocated(index), "allocated_bytes.all.peak": memory.peak(index),
                 "reserved_bytes.all.current": memory.reserved(index),
                 "allocation.all.allocated": memory.allocations(index)}
        return dict(_step(MEMORY_STATS_STEP, (index,), stats))

    def memory_allocated(self, device: Any = None) -> int:
        return self.memory_stats(device)["allocated_bytes.all.current"]

    def max_memory_allocated(self, device: Any = None) -> int:
        return self.memory_stats(device)["allocated_bytes.all.peak"]

    def memory_reserved(self, device: Any = None) -> int:
        return self.memory_stats(device)["reserved_bytes.all.current"]

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        memory.reset_peak(index_of(device))

    def empty_cache(self) -> None:
        memory.empty_cache(current())

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        index = index_of(device)
        return memory.capacity(index) - memory.reserved(index), memory.capacity(index)

    # -- random numbers ---------------------------------------------------------------------------------------------
    # torch.manual_seed() calls manual_seed_all() of a device module: it seeds every device's generator.

    def manual_seed(self, seed: int) -> None:
        seed_device(current(), seed)

    def manual_seed_all(self, seed: int) -> None:
        for index in range(count()):
            seed_device(index, seed)

    def seed(self) -> None:
        generator(current()).seed()

    def seed_all(self) -> None:
        for index in range(count()):
            generator(index).seed()

    def initial_seed(self) -> int:
        return generator(current()).initial_seed()

    def get_rng_state(self, device: Any = "faulty") -> torch.Tensor:
        return generator(index_of(device)).get_state()

    def set_rng_state(self, state: torch.Tensor, device: Any = "faulty") -> None:
        generator(index_of(device)).set_state(state)

    def get_rng_state_all(self) -> list[torch.Tensor]:
        return [generator(index).get_state() for index in range(count())]

    def set_rng_state_all(self, states: list[torch.Tensor]) -> None:
        for index, state in enumerate(states):
            generator(index).set_state(state)

    @property
    def default_generators(self) -> tuple[torch.Generator, ...]:
        """Each device's default generator: a device generator where the compiled part gives them (it draws from
        the CPU generator below), else that CPU generator itself."""
        if generators.available():
            return tuple(generators.default_generator(index) for index in range(count()))
        return tuple(generator(index) for index in range(count()))


MODULE = DeviceModule()
