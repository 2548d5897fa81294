"""Make a shrunk failing case smaller still: fewer elements, same layout, same failure.

Hypothesis shrinks a case's choices (which sample, which transformation), but OpInfo samples
come with fixed sizes, so its minimal case can hold hundreds of elements. Here every dimension
length is cut, in every tensor at once (so broadcasting still lines up), to 1, 2 or half, by
narrowing the views: strides, storage offset and the stride pattern that made the case fail stay.
A cut is kept only if the property still fails the same way; the CPU rejecting the cut case, or
the failure changing kind, undoes it.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
import torch
from torch.utils._pytree import tree_map

MAX_TRIES = 40


def case_elements(sample: Any) -> int:
    """How many tensor elements a sample holds (the size of a counterexample)."""
    total = 0

    def count(value: Any) -> Any:
        nonlocal total
        if isinstance(value, torch.Tensor):
            total += value._nnz() if value.is_sparse else value.numel()
        return value

    tree_map(count, [sample.input, list(sample.args), dict(sample.kwargs)])
    return total


def reduce_case(case: Any, still_fails: Callable[[Any], bool]) -> Any:
    """The smallest variant of `case` found by cutting dimension lengths while `still_fails` holds."""
    tries = 0
    improved = True
    while improved and tries < MAX_TRIES:
        improved = False
        for length in _lengths(case.sample):
            for new in _cuts(length):
                if tries >= MAX_TRIES:
                    return case
                tries += 1
                candidate = _cut(case, length, new)
                if candidate is not None and still_fails(candidate):
                    case, improved = candidate, True
                    break
            if improved:
                break
    return case


def _dense(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.layout == torch.strided and not value.is_nested


def _lengths(sample: Any) -> list[int]:
    """Dimension lengths above 1 in the sample's dense tensors, longest first."""
    found: set[int] = set()

    def collect(value: Any) -> Any:
        if _dense(value):
            found.update(n for n in value.shape if n > 1)
        return value

    tree_map(collect, [sample.input, list(sample.args), dict(sample.kwargs)])
    return sorted(found, reverse=True)


def _cuts(length: int) -> list[int]:
    return sorted({1, 2, length // 2} - {length})


def _cut(case: Any, length: int, new: int) -> Any | None:
    """The case with every dimension of `length` narrowed to `new`, or None if nothing changed."""
    changed = False

    def narrow(value: Any) -> Any:
        nonlocal changed
        if not _dense(value):
            return value
        t = value.detach()
        for dim, n in enumerate(value.shape):
            if n == length:
                t, changed = t.narrow(dim, 0, new), True
        return t.requires_grad_(value.requires_grad) if value.requires_grad else t

    sample = case.sample.transform(narrow)
    if not changed:
        return None
    return attrs.evolve(case, sample=sample, transforms=(*case.transforms, f"cut dimensions of {length} to {new}"))
