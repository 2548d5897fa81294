"""Seeded bugs for the multi-device suite (properties/suites/multi_device.py).

- `peer_copy_drops_last_chunk`: a copy from device 0 to device 1 (`.to`, `copy_`) goes through a
  64 KiB peer staging buffer, and for a contiguous tensor larger than the buffer the last chunk is
  never sent: the elements past the last whole 64 KiB chunk keep zeros. Copies within one device and
  smaller copies are right.
- `second_device_cumsum_restarts`: device 1's cumsum kernel was built with a block size for another
  device: for more than 1024 elements the running sum restarts at element 1024 (the scan's carry
  between blocks is lost). Device 0's cumsum is right.
Both are aten bugs; they use `device.op_devices()` (the faulty index an op targets and its device-tensor
arguments' indices), since a bug sees CPU data only.
- `guard_exit_keeps_inner_device`: leaving a `device(i)` guard entered on device 0 does not restore device 0
  (`faulty.guard_exit`): index-less factories after the block land on device i.
- `second_device_memory_counted_on_first`: device 0's memory statistics also count what device 1 holds (one
  allocator's bookkeeping shared by both devices) (`faulty.memory_stats`).
- `cpu_operand_accepted`: an elementwise op given a device tensor and a CPU tensor of one or more dimensions runs
  (reading the CPU tensor) where CUDA raises (`faulty.cpu_operand`).
- `peer_copy_lands_on_source`: `x.to("faulty:1")` of a tensor on faulty:0 returns a tensor on faulty:0 (the right
  values, the wrong index) (`faulty.peer_copy`).
"""

from __future__ import annotations

# imports inside functions: cycle: faulty.device imports faulty.bugs, which imports this module for its BUGS

from torchcts.testing.faulty.bug_model import CPU_OPERAND_STEP, GUARD_EXIT_STEP, MEMORY_STATS_STEP, PEER_COPY_STEP, Bug

CHUNK_BYTES = 64 * 1024
SCAN_BLOCK = 1024


def _devices():
    from torchcts.testing.faulty.device import op_devices

    return op_devices()


def _peer_copy_past_a_chunk(func, args, kwargs) -> bool:
    target, sources = _devices()
    data = args[1] if str(func) == "aten.copy_.default" else args[0]
    return target == 1 and 0 in sources and data.is_contiguous() and data.numel() * data.element_size() > CHUNK_BYTES


def _last_chunk_zero(func, args, kwargs, value):
    if not value.is_contiguous():
        return value
    per_chunk = CHUNK_BYTES // value.element_size()
    sent = (value.numel() // per_chunk) * per_chunk
    value.view(-1)[sent if sent < value.numel() else value.numel() - per_chunk:] = 0
    return value


def _long_scan_on_second(func, args, kwargs) -> bool:
    target, _ = _devices()
    x = args[0]
    return target == 1 and x.dim() == 1 and x.numel() > SCAN_BLOCK


def _restart_at_block(func, args, kwargs, value):
    out = value.clone()
    out[SCAN_BLOCK:] = value[SCAN_BLOCK:] - value[SCAN_BLOCK - 1]
    return out


def _leaving_a_guard_entered_on_device_0(func, args, kwargs) -> bool:
    inside, before = args
    return before == 0 and inside != 0


def _stays_inside(func, args, kwargs, index):
    return args[0]


def _to_device_1_from_0(func, args, kwargs) -> bool:
    _, target, source = args
    return target == 1 and source == 0


def _source_index(func, args, kwargs, index):
    return args[2]


ALLOCATED = "allocated_bytes.all.current"


def _device_0_while_1_holds_memory(func, args, kwargs) -> bool:
    from torchcts.testing.faulty import memory  # cycle: memory imports faulty.bugs, which imports this module

    return args[0] == 0 and memory.allocated(1) > 0


def _plus_device_1(func, args, kwargs, stats):
    from torchcts.testing.faulty import memory  # cycle: as above

    return {**stats, ALLOCATED: stats[ALLOCATED] + memory.allocated(1)}


def _always(func, args, kwargs) -> bool:
    return True


def _accepted(func, args, kwargs, refuse):
    return False


BUGS = (
    Bug("peer_copy_drops_last_chunk", ("aten._to_copy.default", "aten.copy_.default"),
        "a contiguous copy of more than 64 KiB from faulty:0 to faulty:1",
        "the elements past the last whole 64 KiB chunk stay zero", _peer_copy_past_a_chunk, _last_chunk_zero,
        suite="multi_device"),
    Bug("second_device_cumsum_restarts", ("aten.cumsum.default",), "cumsum of a 1-D tensor of more than 1024 "
        "elements on faulty:1", "the running sum restarts at element 1024", _long_scan_on_second, _restart_at_block,
        suite="multi_device"),
    Bug("guard_exit_keeps_inner_device", (GUARD_EXIT_STEP,), "leaving a device guard entered on device 0 for "
        "another device", "device 0 is not made current again: the guard's device stays current after the block",
        _leaving_a_guard_entered_on_device_0, _stays_inside, suite="multi_device"),
    Bug("second_device_memory_counted_on_first", (MEMORY_STATS_STEP,), "device 0's memory statistics read while "
        "device 1 holds allocations", "memory_allocated(0) also counts device 1's bytes",
        _device_0_while_1_holds_memory, _plus_device_1, suite="multi_device", precise=False),
    Bug("cpu_operand_accepted", (CPU_OPERAND_STEP,), "an elementwise op given a device tensor and a CPU tensor of "
        "one or more dimensions", "it runs, reading the CPU tensor, where CUDA raises", _always, _accepted,
        suite="multi_device"),
    Bug("peer_copy_lands_on_source", (PEER_COPY_STEP,), "x.to(faulty:1) of a tensor on faulty:0",
        "the copy's result is a tensor on faulty:0 (right values, wrong device index)", _to_device_1_from_0,
        _source_index, suite="multi_device"),
)
