"""The faulty device's memory: what its live storages hold, per device, and out-of-memory past its capacity.

The device's data lives in CPU storages; this module accounts for them as a device allocator does.
A storage counts from the first device tensor that holds it until the last one is freed (views share
it); `allocated` is the sum over live storages, `peak` its maximum since the last reset, `reserved`
what a caching allocator keeps (it grows with `allocated` and falls back to it on `empty_cache`).
A device has `capacity` bytes (TORCHCTS_FAULTY_MEMORY_MB, default 4096 MiB per device): an
allocation that would pass it raises `torch.OutOfMemoryError` before anything is allocated, and the
device stays usable. Seeded allocator bugs act at `bug_model.OUT_OF_MEMORY_STEP`, only when an allocation is
refused (`check_request`), so that ordinary allocations reach no bug.

Limits: a storage resized in place (`resize_`) keeps the size it was first seen with; CPU tensors
sharing a device storage (`_to_cpu` aliases) do not keep it allocated.
"""

from __future__ import annotations

import collections
import os
import threading
import weakref
from typing import Any

import torch

from torchcts.testing.faulty import bugs, streams
from torchcts.testing.faulty.bug_model import OUT_OF_MEMORY_STEP, argument
from torchcts.testing.faulty.trace import note_step

MEMORY_ENV = "TORCHCTS_FAULTY_MEMORY_MB"
DEFAULT_CAPACITY_MB = 4096

_lock = threading.Lock()
_live: dict[int, list[int]] = {}  # storage data_ptr -> [device index, bytes, device tensors holding it]
_allocated: dict[int, int] = {}
_peak: dict[int, int] = {}
_reserved: dict[int, int] = {}
_holders: dict[int, tuple[weakref.ref, int]] = {}  # id -> (weak reference to a device tensor, its storage's key)
# storages whose device tensor was freed, not yet taken off: a weak reference's callback may run inside `track`
# (a garbage collection there), so it only queues the key; `_drain` takes it off under the lock
_freed: collections.deque = collections.deque()
_allocations: dict[int, int] = {}  # allocations made since the process started (a counter, as CUDA's)


def capacity(index: int) -> int:
    """Bytes of memory device `index` has (every device the same)."""
    text = os.environ.get(MEMORY_ENV, "")
    if _capacity[0] != text:
        try:
            megabytes = float(text) if text else DEFAULT_CAPACITY_MB
        except ValueError:
            megabytes = DEFAULT_CAPACITY_MB
        _capacity[:] = [text, int(max(megabytes, 1) * 2**20)]
    return _capacity[1]


_capacity: list = [None, 0]  # [the environment's text, the bytes it gives]: read once per change


def allocated(index: int) -> int:
    with _lock:
        _drain()
        return _allocated.get(index, 0)


def peak(index: int) -> int:
    with _lock:
        _drain()
        return _peak.get(index, 0)


def reserved(index: int) -> int:
    with _lock:
        _drain()
        return _reserved.get(index, 0)


def allocations(index: int) -> int:
    return _allocations.get(index, 0)


def live_storages(index: int) -> int:
    """How many storages device `index` holds (seeded allocator bugs fire on fragmented devices)."""
    with _lock:
        _drain()
        return sum(1 for entry in _live.values() if entry[0] == index)


def hold(index: int, nbytes: int) -> None:
    """Count `nbytes` more as allocated on device `index` without a storage: what a seeded leak does."""
    with _lock:
        _drain()
        _allocated[index] = _allocated.get(index, 0) + nbytes
        _peak[index] = max(_peak.get(index, 0), _allocated[index])
        _reserved[index] = max(_reserved.get(index, 0), _allocated[index])


def reset_peak(index: int) -> None:
    with _lock:
        _drain()
        _peak[index] = _allocated.get(index, 0)


def empty_cache(index: int) -> None:
    with _lock:
        _drain()
        _reserved[index] = _allocated.get(index, 0)


def out_of_memory(index: int, nbytes: int, used: int | None = None) -> torch.OutOfMemoryError:
    mib = 2**20
    used = allocated(index) if used is None else used
    return torch.OutOfMemoryError(
        f"faulty:{index} out of memory: tried to allocate {nbytes / mib:.2f} MiB; {used / mib:.2f} MiB "
        f"of {capacity(index) / mib:.2f} MiB already allocated")


def check_request(index: int, nbytes: int) -> None:
    """Raise torch.OutOfMemoryError when `nbytes` more would pass device `index`'s capacity (before allocating)."""
    if allocated(index) + nbytes <= capacity(index):
        return
    note_step(OUT_OF_MEMORY_STEP)
    bugs.after(OUT_OF_MEMORY_STEP, (index, nbytes), {}, None)
    raise out_of_memory(index, nbytes)


def track(wrapper: Any, data: torch.Tensor, index: int) -> None:
    """Account `data`'s storage to device `index` while `wrapper` (a device tensor holding it) lives."""
    if data.layout != torch.strided:
        return
    storage = data.untyped_storage()
    key, nbytes = storage.data_ptr(), storage.nbytes()
    if not key or not nbytes:
        return
    with _lock:
        _drain()
        entry = _live.get(key)
        if entry is None:
            used = _allocated.get(index, 0)
            if used + nbytes > capacity(index):
                raise out_of_memory(index, nbytes, used)
            entry = _live[key] = [index, nbytes, 0]
            _allocated[index] = used + nbytes
            _peak[index] = max(_peak.get(index, 0), _allocated[index])
            _reserved[index] = max(_reserved.get(index, 0), _allocated[index])
            _allocations[index] = allocations(index) + 1
        entry[2] += 1
    holder = weakref.ref(wrapper, _released)  # a plain weak reference: a fraction of weakref.finalize's cost
    _holders[id(holder)] = (holder, key)


def _released(holder: weakref.ref) -> None:
    """A device tensor was freed: queue its storage's key (never lock here: this may run inside `track`)."""
    _, key = _holders.pop(id(holder), (None, 0))
    if key:
        _freed.append(key)


def _drain() -> None:
    """Take the freed device tensors off their storages (the lock held); a storage no tensor holds is freed."""
    while _freed:
        key = _freed.popleft()
        entry = _live.get(key)
        if entry is None:
            continue
        entry[2] -= 1
        if entry[2] <= 0:
            del _live[key]
            _allocated[entry[0]] = _allocated.get(entry[0], 0) - entry[1]
            streams.block_freed(key)


# Factories whose `size` argument says what they allocate: checked against the capacity before CPU allocates it.
SIZED_FACTORIES = frozenset({"empty", "empty_strided", "new_empty", "new_empty_strided", "new_zeros", "new_ones",
                             "new_full", "full", "zeros", "ones", "rand", "randn", "randint", "empty_like"})


_sized: dict[Any, bool] = {}  # overload -> whether it is one of SIZED_FACTORIES


def requested_bytes(func: Any, args: tuple, kwargs: dict) -> int | None:
    """Bytes a sized factory call asks for, or None when `func` is none (or its size cannot be read)."""
    sized = _sized.get(func)
    if sized is None:
        sized = _sized[func] = func._schema.name.split("::")[-1] in SIZED_FACTORIES
    if not sized:
        return None
    size = argument(func, args, kwargs, "size")
    if size is None:
        template = args[0] if args and isinstance(args[0], torch.Tensor) else None
        size = template.shape if template is not None else None
    if size is None:
        return None
    dtype = kwargs.get("dtype")
    if dtype is None:
        template = args[0] if args and isinstance(args[0], torch.Tensor) else None
        dtype = template.dtype if template is not None else torch.get_default_dtype()
    count = 1
    for side in size:
        count *= max(int(side), 0)
    return count * torch.empty((), dtype=dtype).element_size()
