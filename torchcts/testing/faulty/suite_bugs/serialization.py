"""Seeded bugs for the serialization suite (properties/suites/serialization.py).

A backend's serializer writes each tensor as its storage plus (offset, sizes, strides). Two ways it
goes wrong: it writes a view as if it started at its storage's first element (the offset dropped:
the loaded view reads its base's first elements), or it writes each view as a compact copy of its
own elements (values right, but views loaded together no longer share a storage, so a write
through one no longer reaches the other). Both act at the device's save step (`faulty.save`).
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import SAVE_STEP, Bug


def _offset_view(func, args, kwargs) -> bool:
    return args[0].layout == torch.strided and args[0].storage_offset() > 0


def _from_storage_start(func, args, kwargs, data):
    return data.as_strided(data.size(), data.stride(), 0)


def _part_of_its_storage(func, args, kwargs) -> bool:
    data = args[0]
    return data.layout == torch.strided and data.untyped_storage().nbytes() > data.numel() * data.element_size()


def _compact_copy(func, args, kwargs, data):
    return data.clone(memory_format=torch.contiguous_format)


BUGS = (
    Bug("save_drops_storage_offset", (SAVE_STEP,), "a view that starts past its storage's first element is saved",
        "it is saved as starting at the storage's first element (the offset dropped)",
        _offset_view, _from_storage_start, suite="serialization"),
    Bug("save_copies_each_view", (SAVE_STEP,), "a tensor that is part of a larger storage is saved",
        "it is saved as a compact copy of its own elements: loaded views no longer share their base's storage",
        _part_of_its_storage, _compact_copy, suite="serialization"),
)
