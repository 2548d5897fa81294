"""Seeded bug for the dataloader suite (properties/suites/dataloader.py).

Batches from DataLoader worker processes arrive in shared memory. A backend whose host-to-device
copy reads shared memory through another path (a mapping registered once, a DMA engine fed in
chunks) can miss the end of such a tensor: here the copy of a shared-memory CPU tensor to the
device leaves its last element zero. Tensors from the main process (not shared) copy correctly,
so only loading with workers sees it.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug


def _from_shared_memory(func, args, kwargs) -> bool:
    source = args[0] if args else None
    return isinstance(source, torch.Tensor) and source.is_shared() and source.numel() > 1


def _last_element_zero(func, args, kwargs, result):
    if not isinstance(result, torch.Tensor) or result.numel() == 0:
        return result
    result = result.clone()
    result[tuple(side - 1 for side in result.shape)] = 0
    return result


BUGS = (
    Bug("shared_memory_copy_drops_tail", ("aten._to_copy.default",),
        "a CPU tensor in shared memory (a DataLoader worker's batch) is copied to the device",
        "the device copy's last element is left zero", _from_shared_memory, _last_element_zero, suite="dataloader"),
)
