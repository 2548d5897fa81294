"""Seeded bugs for the device API suite (properties/suites/device_api.py).

Runtime modules go wrong in their bookkeeping rather than in kernels:
- `device_count_after_switch`: the count is computed from the current device onwards (devices "visible
  from here"), so it is right while device 0 is current and short by the current index after a switch
  (a runtime that enumerates devices relative to its current context).
- `set_device_ignored_above_0`: `set_device(i)` for i >= 1 keeps the current device (a runtime that
  initialises device 0's context eagerly and silently skips a switch to a device not yet initialised).
- `memory_allocated_stale_after_large_free`: a freed block of 1 MiB or more goes to a deferred-free list,
  and the allocated-bytes counter is settled only at the next allocation: until then memory_allocated()
  reports the bytes before the free.
- `peak_from_reserved`: the peak is read from the segment pool's high-water mark, so after
  `reset_peak_memory_stats()` it reports the reserved (cached) bytes wherever the allocator still caches
  freed blocks (reserved above the peak), not the allocated ones.
Each acts at a runtime step of `torch.faulty` (bug_model: DEVICE_COUNT_STEP, SET_DEVICE_STEP,
MEMORY_STATS_STEP) and only under its condition.
"""

from __future__ import annotations

from torchcts.testing.faulty import memory, runtime
from torchcts.testing.faulty.bug_model import DEVICE_COUNT_STEP, MEMORY_STATS_STEP, SET_DEVICE_STEP, Bug

LARGE_FREE = 2**20
ALLOCATED, PEAK, RESERVED = "allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current"


def _switched(func, args, kwargs) -> bool:
    return runtime.current() != 0


def _counted_from_current(func, args, kwargs, count):
    return count - runtime.current()


def _to_later_device(func, args, kwargs) -> bool:
    current, requested = args
    return requested >= 1 and requested != current


def _keep_current(func, args, kwargs, index):
    return args[0]


# device index -> (allocations made, allocated bytes) at the last reading of the statistics
_last_reading: dict[int, tuple[int, int]] = {}


def _large_free_unsettled(func, args, kwargs) -> bool:
    """A reading after >= 1 MiB was freed with no allocation since the previous reading (then the stale value
    is what the counter still holds); every other reading settles the counter."""
    index = args[0]
    now = (memory.allocations(index), memory.allocated(index))
    last = _last_reading.get(index)
    if last is not None and last[0] == now[0] and last[1] - now[1] >= LARGE_FREE:
        return True
    _last_reading[index] = now
    return False


def _stale_allocated(func, args, kwargs, stats):
    return {**stats, ALLOCATED: _last_reading[args[0]][1]}


def _caching_after_reset(func, args, kwargs) -> bool:
    index = args[0]
    return memory.reserved(index) > memory.peak(index)


def _peak_is_reserved(func, args, kwargs, stats):
    return {**stats, PEAK: stats[RESERVED]}


BUGS = (
    Bug("device_count_after_switch", (DEVICE_COUNT_STEP,), "a device other than 0 is current",
        "device_count() counts from the current device: short by the current index", _switched,
        _counted_from_current, suite="device_api"),
    Bug("set_device_ignored_above_0", (SET_DEVICE_STEP,), "set_device / a device guard to an index >= 1 that is "
        "not current", "the switch is skipped: the previous device stays current", _to_later_device, _keep_current,
        suite="device_api"),
    Bug("memory_allocated_stale_after_large_free", (MEMORY_STATS_STEP,),
        ">= 1 MiB freed since the last reading of the statistics, with no allocation since",
        "memory_allocated() still counts the freed bytes (settled only at the next allocation)",
        _large_free_unsettled, _stale_allocated, suite="device_api", precise=False),
    Bug("peak_from_reserved", (MEMORY_STATS_STEP,), "the allocator caches freed blocks above the peak (reserved > "
        "peak: after reset_peak_memory_stats following a free)", "max_memory_allocated() reports the reserved bytes",
        _caching_after_reset, _peak_is_reserved, suite="device_api"),
)
