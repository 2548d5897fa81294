"""Seeded bugs for the pinned_memory suite (properties/suites/pinned_memory.py).

- `pin_memory_pageable_above_64kib`: pinning a tensor of 64 KiB or more returns an ordinary
  (pageable) copy, as a pinned-block pool that falls back to malloc for large requests and forgets
  to say so: values right, `is_pinned()` False.
- `pin_memory_non_contiguous_as_contiguous`: pinning a non-contiguous source copies `numel`
  elements straight from its first element (a memcpy from `data_ptr()`), ignoring its strides.
- `is_pinned_false_past_allocation_start`: `is_pinned()` of a view that starts past its storage's
  first element answers False, as a backend that looks up `data_ptr()` as the exact start of a pinned
  block instead of a range.
- `non_blocking_from_pinned_reads_storage_start`: a non_blocking copy to the device from a pinned
  source that starts past its storage's first element reads from the storage's start (the DMA is
  given the allocation's address, not the view's). Blocking copies and pageable sources are right.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import IS_PINNED_STEP, PIN_STEP, Bug, argument
from torchcts.testing.faulty.pinned import lies_in_pinned_memory

LARGE_BYTES = 64 * 1024


def _large(func, args, kwargs) -> bool:
    (src,) = args
    return src.numel() * src.element_size() >= LARGE_BYTES


def _pageable_copy(func, args, kwargs, pinned):
    return pinned.clone()


def _non_contiguous(func, args, kwargs) -> bool:
    (src,) = args
    extent = src.untyped_storage().nbytes() // src.element_size()
    return not src.is_contiguous() and src.storage_offset() + src.numel() <= extent


def _memcpy_from_data_ptr(func, args, kwargs, pinned):
    (src,) = args
    pinned.view(-1).copy_(src.as_strided((src.numel(),), (1,), src.storage_offset()))
    return pinned


def _offset_view(func, args, kwargs) -> bool:
    return args[0].layout == torch.strided and args[0].storage_offset() > 0


def _not_pinned(func, args, kwargs, value):
    return False


def _non_blocking_from_pinned_offset(func, args, kwargs) -> bool:
    if not argument(func, args, kwargs, "non_blocking", False):
        return False
    src = argument(func, args, kwargs, "src" if str(func) == "aten.copy_.default" else "self")
    return (isinstance(src, torch.Tensor) and src.layout == torch.strided and src.storage_offset() > 0
            and lies_in_pinned_memory(src))


def _from_storage_start(func, args, kwargs, result):
    src = argument(func, args, kwargs, "src" if str(func) == "aten.copy_.default" else "self")
    result.copy_(src.as_strided(src.shape, src.stride(), 0))
    return result


BUGS = (
    Bug("pin_memory_pageable_above_64kib", (PIN_STEP,), "pin_memory() of a tensor of 64 KiB or more",
        "returns a pageable copy: values right, is_pinned() False", _large, _pageable_copy, suite="pinned_memory"),
    Bug("pin_memory_non_contiguous_as_contiguous", (PIN_STEP,), "pin_memory() of a non-contiguous source",
        "copies numel elements from the source's first element, ignoring its strides", _non_contiguous,
        _memcpy_from_data_ptr, suite="pinned_memory"),
    Bug("is_pinned_false_past_allocation_start", (IS_PINNED_STEP,), "is_pinned() of a view past its storage's first "
        "element", "answers False for a view of pinned memory", _offset_view, _not_pinned, suite="pinned_memory"),
    Bug("non_blocking_from_pinned_reads_storage_start", ("aten._to_copy.default", "aten.copy_.default"),
        "a non_blocking copy to the device from a pinned source past its storage's first element",
        "the copy reads from the storage's first element", _non_blocking_from_pinned_offset, _from_storage_start,
        suite="pinned_memory"),
)
