"""The OpInfo sample pool a case is drawn from, made deterministically and cached per process.

Also which of an op's sample tensors OpInfo keeps on CPU whatever the device (`cpu_pinned_paths`),
found from the op's samples made for the meta device.
"""

from __future__ import annotations

import collections
import hashlib
from typing import Any

import torch

from torchcts.plan.catalog import op_id
from torchcts.strategies.sample_walk import map_sample
from torchcts.strategies import opinfo_inputs
from torchcts.strategies.seeding import seeded_globals

REFERENCE_INPUTS_LEVEL = 3  # from this semantic level on, reference_inputs join the sample pool
# Pools kept per process: the most recent _POOL_CACHE_SIZE whatever their size, and up to _POOL_CACHE_MAX of them
# while all kept total at most _POOL_CACHE_BYTES (a run goes through every op once per property: 677 level-2
# float32 pools of at most 10 samples hold ~56 MiB, so the second property finds its pools made).
_POOL_CACHE_SIZE = 64
_POOL_CACHE_MAX = 2048
_POOL_CACHE_BYTES = 256 * 2**20

_pools: collections.OrderedDict[tuple, tuple[Any, ...]] = collections.OrderedDict()
_pool_bytes: dict[tuple, int] = {}


def sample_pool(op: Any, dtype: torch.dtype, level: int = 1, max_samples: int = 0) -> tuple[Any, ...]:
    """The op's CPU samples for `dtype` (reference inputs too from level 3), made deterministically.

    OpInfo sample functions draw from torch's global RNG; they run under a seed derived from the
    op id, dtype and level, inside `fork_rng`, so every process gets the same samples and the
    caller's RNG state is untouched. Cached per process (the most recent pools, bounded in bytes).
    """
    key = pool_key(op, dtype, level, max_samples)
    if key in _pools:
        _pools.move_to_end(key)
        return _pools[key]
    seed = int(hashlib.sha256(repr(key).encode()).hexdigest()[:8], 16)
    with seeded_globals(seed, fill_uninitialized=True):
        if level >= REFERENCE_INPUTS_LEVEL and op.reference_inputs_func is not None:
            samples = opinfo_inputs.reference_inputs(op, "cpu", dtype)
        else:
            samples = opinfo_inputs.sample_inputs(op, "cpu", dtype)
        pool = tuple(samples if not max_samples else first(samples, max_samples))
    _pools[key] = pool
    _pool_bytes[key] = _storage_bytes(pool)
    total = sum(_pool_bytes.get(k, 0) for k in _pools)
    while len(_pools) > _POOL_CACHE_SIZE and (len(_pools) > _POOL_CACHE_MAX or total > _POOL_CACHE_BYTES):
        evicted, _ = _pools.popitem(last=False)
        total -= _pool_bytes.pop(evicted, 0)
    return pool


def _storage_bytes(pool: tuple[Any, ...]) -> int:
    """The bytes of the CPU storages a pool's samples hold (each storage once)."""
    storages: dict[int, int] = {}

    def note(where: str, t: torch.Tensor, written: bool) -> torch.Tensor:
        try:
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        except Exception:  # noqa: BLE001 - sparse, nested, quantized: their dense size instead
            storages[id(t)] = t.numel() * t.element_size()
        return t

    for sample in pool:
        map_sample(sample, note, False)
    return sum(storages.values())


def pool_key(op: Any, dtype: torch.dtype, level: int, max_samples: int) -> tuple:
    """What decides a pool: op id, dtype, whether reference inputs join, the cap. Seeds derive from it."""
    return (op_id(op), dtype, level >= REFERENCE_INPUTS_LEVEL, max_samples)


_pinned: dict[tuple[str, torch.dtype], frozenset[str]] = {}


def cpu_pinned_paths(op: Any, dtype: torch.dtype) -> frozenset[str]:
    """Paths ("args[1]", "kwargs.indices") of sample tensors the op takes on CPU whatever the device.

    OpInfo builds such arguments on CPU even when asked for another device (`tensor_split`'s
    indices tensor): the op's samples are made once for the meta device, and tensors that are
    still on CPU there are pinned. `place(..., keep_on_cpu=...)` leaves them on CPU.
    """
    key = (op_id(op), dtype)
    if key not in _pinned:
        found: set[str] = set()
        try:
            with seeded_globals(0, fill_uninitialized=True):
                for sample in first(opinfo_inputs.sample_inputs(op, "meta", dtype), 64):
                    map_sample(sample, lambda where, t, written: found.add(where) or t
                               if t.device.type == "cpu" else t, False)
        except Exception:  # a sample function that cannot make meta samples: nothing is known to be pinned
            found = set()
        _pinned[key] = frozenset(found)
    return _pinned[key]


def first(iterable, count: int) -> list:
    """The first `count` items of `iterable`, consuming no more (sample functions are generators)."""
    items = []
    for item in iterable:
        items.append(item)
        if len(items) == count:
            break
    return items
