"""Seeded bugs for the determinism suite (properties/suites/deterministic.py).

A GPU kernel that sums with atomics gives a result whose last bits depend on the order threads
land in; one that ignores `torch.use_deterministic_algorithms(True)` keeps doing so. Simulated here
without randomness: every second accumulating call (a process-wide count) rounds one element of
its result up by one ulp, as another summation order would, so runs of the same call differ.
"""

from __future__ import annotations

import itertools

import torch

from torchcts.testing.faulty.bug_model import Bug, argument as _argument

_calls = itertools.count()


def _deterministic_sum_over_repeats(func, args, kwargs) -> bool:
    index = _argument(func, args, kwargs, "index", _argument(func, args, kwargs, "indices"))
    if isinstance(index, (list, tuple)):  # index_put_'s indices
        index = index[0] if index else None
    return (torch.are_deterministic_algorithms_enabled() and isinstance(index, torch.Tensor)
            and index.numel() > index.unique().numel())


def _order_dependent(func, args, kwargs, result):
    if next(_calls) % 2 and result.is_floating_point() and result.numel():
        flat = result.view(-1)
        flat[0] = torch.nextafter(flat[0], torch.tensor(float("inf"), dtype=flat.dtype))
    return result


BUGS = (
    Bug("accumulation_ignores_determinism", ("aten.index_add_.default", "aten.index_add.default",
                                             "aten.scatter_add_.default", "aten.scatter_add.default",
                                             "aten._index_put_impl_.default", "aten.index_put_.default"),
        "deterministic algorithms are on and an index repeats",
        "every second call's result differs in the last bit of one element (an atomic summation order)",
        _deterministic_sum_over_repeats, _order_dependent, suite="deterministic", precise=False),
)
