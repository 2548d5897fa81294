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
from torchcts.strategies.seeding import seeded_globals

REFERENCE_INPUTS_LEVEL = 3  # from this semantic level on, reference_inputs join the sample pool
_POOL_CACHE_SIZE = 64

_pools: collections.OrderedDict[tuple, tuple[Any, ...]] = collections.OrderedDict()


def sample_pool(op: Any, dtype: torch.dtype, level: int = 1, max_samples: int = 0) -> tuple[Any, ...]:
    """The op's CPU samples for `dtype` (reference inputs too from level 3), made deterministically.

    OpInfo sample functions draw from torch's global RNG; they run under a seed derived from the
    op id, dtype and level, inside `fork_rng`, so every process gets the same samples and the
    caller's RNG state is untouched. Cached per process (the most recent few pools).
    """
    key = pool_key(op, dtype, level, max_samples)
    if key in _pools:
        _pools.move_to_end(key)
        return _pools[key]
    seed = int(hashlib.sha256(repr(key).encode()).hexdigest()[:8], 16)
    with seeded_globals(seed, fill_uninitialized=True):
        if level >= REFERENCE_INPUTS_LEVEL and op.reference_inputs_func is not None:
            samples = op.reference_inputs("cpu", dtype, requires_grad=False)
        else:
            samples = op.sample_inputs("cpu", dtype, requires_grad=False)
        pool = tuple(samples if not max_samples else first(samples, max_samples))
    _pools[key] = pool
    if len(_pools) > _POOL_CACHE_SIZE:
        _pools.popitem(last=False)
    return pool


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
                for sample in first(op.sample_inputs("meta", dtype, requires_grad=False), 64):
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
