"""Seeded bugs for the allocator-guard suite (properties/suites/guard_alloc.py).

Three ways real allocators fail around out-of-memory and reuse:
- `oom_aborts_on_huge_request`: a request of 4 GiB or more overflows the allocator's 32-bit size
  bookkeeping and trips an internal assertion: the process aborts (SIGABRT) instead of raising
  torch.OutOfMemoryError. Smaller refused requests raise as they should.
- `oom_leaks_split_block`: to serve a refused request the allocator first splits a cached segment
  (only possible while the device holds live allocations) and does not give the split part back: 2 MiB
  stay counted in memory_allocated() after the OutOfMemoryError.
- `fragmented_fill_partial`: with 32 or more live blocks on the device, a fill of a new block
  (torch.full) is sized from a stale free-list entry half its size: the block's second half keeps its
  old (zero) bytes.
The first two act at bug_model.OUT_OF_MEMORY_STEP (a refused allocation, about to raise), the third on
aten.fill_.Scalar.
"""

from __future__ import annotations

# imports inside functions: cycle: faulty.device imports faulty.bugs, which imports this module for its BUGS

import os

from torchcts.testing.faulty import memory
from torchcts.testing.faulty.bug_model import OUT_OF_MEMORY_STEP, Bug

HUGE_REQUEST = 2**32
LEAKED = 2 * 2**20
LIVE_BLOCKS = 32


def _huge(func, args, kwargs) -> bool:
    index, nbytes = args
    return nbytes >= HUGE_REQUEST


def _abort(func, args, kwargs, value):
    os.abort()


def _holds_live_blocks(func, args, kwargs) -> bool:
    index, nbytes = args
    return memory.allocated(index) > 0


def _leak_split(func, args, kwargs, value):
    memory.hold(args[0], LEAKED)
    return value


def _fill_among_many_blocks(func, args, kwargs) -> bool:
    from torchcts.testing.faulty.device import op_devices

    target = args[0]
    return target.numel() > 1 and target.is_contiguous() and memory.live_storages(op_devices()[0]) >= LIVE_BLOCKS


def _fill_first_half(func, args, kwargs, value):
    flat = value.view(-1)
    flat[(flat.numel() + 1) // 2:] = 0
    return value


BUGS = (
    Bug("oom_aborts_on_huge_request", (OUT_OF_MEMORY_STEP,), "a refused allocation of 4 GiB or more",
        "the process aborts (SIGABRT) instead of raising torch.OutOfMemoryError", _huge, _abort, suite="guard_alloc"),
    Bug("oom_leaks_split_block", (OUT_OF_MEMORY_STEP,), "an allocation is refused while the device holds live "
        "allocations", "2 MiB stay counted in memory_allocated() after the OutOfMemoryError", _holds_live_blocks,
        _leak_split, suite="guard_alloc"),
    Bug("fragmented_fill_partial", ("aten.fill_.Scalar",), "a contiguous block of 2+ elements is filled while the "
        "device holds 32 or more live blocks", "only the block's first half is filled (the rest keeps zeros)",
        _fill_among_many_blocks, _fill_first_half, suite="guard_alloc"),
)
