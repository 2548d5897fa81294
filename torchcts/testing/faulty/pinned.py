"""Pinned host memory for the faulty device: `Tensor.pin_memory()` and `Tensor.is_pinned()`.

torch asks an accelerator's C++ hooks for a pinned allocator, which a Python backend cannot
register (torch 2.13). The device registers CPU kernels for `aten::_pin_memory` and
`aten::is_pinned` instead: pinning copies the tensor into a fresh contiguous CPU storage the device
remembers, and a tensor is pinned when its data lies in a remembered storage (a view of a pinned
tensor is pinned too). Seeded bugs act at `bug_model.PIN_STEP` (`bugs.after` sees the source and
the pinned copy) and `IS_PINNED_STEP` (sees the tensor and the answer).

Limits: factories asked for pinned memory (`torch.empty(..., pin_memory=True)`) still raise torch's
NotImplementedError (CPU's `empty` asks the hooks directly; a Python kernel for it would slow every
CPU allocation); a storage is forgotten when the tensor `pin_memory` returned is freed, even if views of it
live on (they then say they are not pinned).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch

from torchcts.testing.faulty import bugs
from torchcts.testing.faulty.bug_model import IS_PINNED_STEP, PIN_STEP
from torchcts.testing.faulty.trace import note_step

_lock = threading.Lock()
_pinned: dict[int, int] = {}  # start of a pinned storage -> its bytes
_libraries: list[torch.library.Library] = []


def _step(name: str, args: tuple, value: Any) -> Any:
    note_step(name)
    return bugs.after(name, args, {}, value)


def _for_device(device: Any) -> bool:
    return device is None or torch.device(device).type == "faulty"


def lies_in_pinned_memory(tensor: torch.Tensor) -> bool:
    if tensor.layout != torch.strided or tensor.device.type != "cpu":
        return False
    start = tensor.untyped_storage().data_ptr()
    with _lock:
        return any(begin <= start < begin + size or (start == begin and size == 0) for begin, size in _pinned.items())


def _forget(start: int) -> None:
    with _lock:
        _pinned.pop(start, None)


def pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
    """`aten::_pin_memory` on CPU: a contiguous copy in storage the device knows as pinned."""
    if not _for_device(device):
        raise RuntimeError(f"pin_memory: the process's accelerator is faulty, not {torch.device(device)}")
    pinned = torch.empty(self.shape, dtype=self.dtype)
    pinned.copy_(self)
    start = pinned.untyped_storage().data_ptr()
    with _lock:
        _pinned[start] = pinned.untyped_storage().nbytes()
    weakref.finalize(pinned, _forget, start)
    return _step(PIN_STEP, (self,), pinned)


def is_pinned(self: torch.Tensor, device: Any = None) -> bool:
    if not _for_device(device):
        return False
    return bool(_step(IS_PINNED_STEP, (self,), lies_in_pinned_memory(self)))


def register() -> None:
    library = torch.library.Library("aten", "IMPL")
    library.impl("_pin_memory", pin_memory, "CPU")
    library.impl("is_pinned", is_pinned, "CPU")
    _libraries.append(library)
