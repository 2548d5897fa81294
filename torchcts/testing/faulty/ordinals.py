"""Which faulty devices the process has and which one is current: TORCHCTS_FAULTY_DEVICES of them (default 2), a
current device per thread. Apart from the runtime (`runtime`, `torch.faulty`), which sets the current device as a
step a bug can act on, so that streams and the runtime both read device indices without importing each other.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import torch

from torchcts.ascii_numbers import NotAsciiNumber, ascii_int

DEVICES_ENV = "TORCHCTS_FAULTY_DEVICES"
DEFAULT_DEVICES = 2

_local = threading.local()  # `index`: this thread's current device


def count() -> int:
    """How many faulty devices the process has (TORCHCTS_FAULTY_DEVICES, 1..16)."""
    try:  # not int(): it takes full-width digits and `1_0`
        found = ascii_int(os.environ.get(DEVICES_ENV, DEFAULT_DEVICES))
    except NotAsciiNumber:
        found = DEFAULT_DEVICES
    return min(max(found, 1), 16)


def current() -> int:
    return getattr(_local, "index", 0)


def make_current(index: int) -> None:
    """This thread's current device becomes `index` (checked by the caller)."""
    _local.index = index


def index_of(device: Any) -> int:
    """The device index `device` names (an int, "faulty:1", a torch.device; None: the current one); a stream's is
    its device's (`streams.index_of`)."""
    if device is None:
        return current()
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        parsed = torch.device(device)
        if parsed.type != "faulty":
            raise ValueError(f"expected a faulty device, got {parsed}")
        index = current() if parsed.index is None else parsed.index
    if not 0 <= index < count():
        raise RuntimeError(f"faulty: invalid device ordinal {index} (the process has {count()} faulty devices)")
    return index
