"""An OpInfo's sample, reference and error inputs, made exactly as its own methods make them, for less.

`op.sample_inputs(...)` wraps the op's sample function in torch's `TrackedInputIter`, which (a)
walks the caller's whole stack twice per call with `inspect.stack()` to find a running unittest
test (it reads the source of every frame: 8-19 ms per call under Hypothesis and pytest), and (b)
calls `torch.manual_seed` before every sample, which records the caller's stack for each lazily
seeded accelerator module (`seeding.seed_torch`: ~7 ms per sample). Together they were most of
the time spent making an op's samples, three or four times per op in a run.

Where nothing of that machinery can matter -- the method is OpInfo's own, no unittest test is
on the stack (torch would seed from its name and record what it iterates on it), no
PYTORCH_OPINFO_SAMPLE_INPUT_INDEX restricts the samples -- these functions call the op's sample
function as the method does and reseed the same generators with the same seed before each item
(torch's SEED; Python's and NumPy's too), so the samples are the same objects made from the same
random streams. Otherwise they call torch's method and only replace its seeding (`cheaply_seeded`).
"""

from __future__ import annotations

import hashlib
import random
import sys
import unittest
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch

from torchcts.strategies.seeding import seed_torch


def sample_inputs(op: Any, device: str, dtype: torch.dtype) -> Iterable[Any]:
    """`op.sample_inputs(device, dtype, requires_grad=False)`'s samples."""
    if _plain(op, "sample_inputs"):
        return _seeded(op.sample_inputs_func(op, device, dtype, False))
    return cheaply_seeded(op.sample_inputs(device, dtype, requires_grad=False))


def reference_inputs(op: Any, device: str, dtype: torch.dtype) -> Iterable[Any]:
    """`op.reference_inputs(device, dtype, requires_grad=False)`'s samples (the sample inputs where it has none)."""
    if _plain(op, "reference_inputs"):
        make = op.reference_inputs_func if op.reference_inputs_func is not None else op.sample_inputs_func
        return _seeded(make(op, device, dtype, False))
    return cheaply_seeded(op.reference_inputs(device, dtype, requires_grad=False))


def error_inputs(op: Any, device: str) -> Iterable[Any]:
    """`op.error_inputs(device)`'s ErrorInputs."""
    if _plain(op, "error_inputs"):
        return _seeded(op.error_inputs_func(op, device))
    return cheaply_seeded(op.error_inputs(device))


def cheaply_seeded(tracked: Iterable[Any]) -> Iterable[Any]:
    """Torch's `TrackedInputIter`, iterated with its seeding done by `seed_torch` instead of `torch.manual_seed`
    (same generators, same seed); anything else, or one restricted to an index, as it is."""
    if getattr(tracked, "set_seed", False) is not True or getattr(tracked, "restrict_to_index", None) is not None \
            or not hasattr(tracked, "test_fn"):
        return tracked
    test_fn = tracked.test_fn  # type: ignore[attr-defined]
    tracked.set_seed = False  # type: ignore[attr-defined] - torch's own switch: this seeds instead
    return _seeded(tracked, lambda: _test_seed(test_fn))


def _plain(op: Any, method: str) -> bool:
    """Whether `op.<method>` can be bypassed: OpInfo's own method, no unittest test running, no index restriction."""
    from torch.testing._internal.common_utils import OPINFO_SAMPLE_INPUT_INDEX
    from torch.testing._internal.opinfo.core import OpInfo

    return getattr(type(op), method, None) is getattr(OpInfo, method) and OPINFO_SAMPLE_INPUT_INDEX is None \
        and not _unittest_running()


def _unittest_running() -> bool:
    """Whether a frame on the stack belongs to a unittest.TestCase method (where torch's `extract_test_fn` could
    find a test to seed from and track on): any frame with a TestCase `self` counts."""
    frame = sys._getframe(1)
    while frame is not None:
        if isinstance(frame.f_locals.get("self"), unittest.TestCase):
            return True
        frame = frame.f_back
    return False


def _test_seed(test_fn: Any) -> int:
    """The seed torch's iterator sets: from the running test's name, else torch's SEED (read when used, as torch
    does)."""
    from torch.testing._internal import common_utils

    if test_fn is None:
        return common_utils.SEED
    return int.from_bytes(hashlib.sha256(test_fn.__qualname__.encode("utf-8")).digest()[:4], "little")


def _seeded(items: Iterable[Any], seed: Callable[[], int] = lambda: _test_seed(None)) -> Iterator[Any]:
    """Iterate `items` (made already: a sample function that builds a list draws when called), reseeding torch's,
    Python's and NumPy's generators before each item as torch's `set_rng_seed` does."""
    from torch.testing._internal import common_utils

    iterator = iter(items)

    def reseeded() -> Iterator[Any]:
        while True:
            value = seed()
            seed_torch(value)
            random.seed(value)
            if common_utils.TEST_NUMPY:
                np.random.seed(value)
            try:
                item = next(iterator)
            except StopIteration:
                return
            yield item

    return reseeded()
