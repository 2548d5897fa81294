"""The OpInfo database, imported once per process, lazily: the only module that touches it.

`torch.testing._internal.common_methods_invocations` takes seconds to import, so nothing imports
it at module load; the first call to `all_ops()` does, and the result is cached.
"""

from __future__ import annotations

import functools
import gc
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from torch.testing._internal.opinfo.core import OpInfo


@functools.cache
def all_ops() -> tuple["OpInfo", ...]:
    """Every OpInfo in PyTorch's op database, in its order.

    The database is ~400,000 objects that live as long as the process. The cyclic garbage collector is paused while
    they are made (the full collections the import would set off scan the growing heap again and again) and then
    told to leave them alone (`gc.freeze`): a full collection of a process holding them otherwise takes ~0.2 s of
    CPU, and a one-item run made seven (pytest makes three at its end). Measured on a five-op run: 5.5-6.4 s of CPU
    before, 3.8-4.0 s after."""
    gc.collect()  # garbage made before (a device's tensors in a reference cycle) is freed, not frozen
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        from torch.testing._internal.common_methods_invocations import op_db  # seconds: only where OpInfos are needed
    finally:
        if was_enabled:
            gc.enable()
    gc.freeze()
    return tuple(op_db)


def op_id(op: "OpInfo") -> str:
    """`name` or `name.variant`: unique across the database, stable across runs."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


@functools.cache
def _by_id() -> dict[str, "OpInfo"]:
    return {op_id(op): op for op in all_ops()}


def find_op(identifier: str) -> "OpInfo":
    """The OpInfo with this id (`"add"`, `"div.floor_rounding"`); KeyError names close ids."""
    try:
        return _by_id()[identifier]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(identifier, list(_by_id()), n=3)
        raise KeyError(f"no OpInfo {identifier!r}" + (f"; did you mean {', '.join(close)}?" if close else "")) from None


def ops_supporting(dtype: torch.dtype, device_type: str = "cpu") -> tuple["OpInfo", ...]:
    """OpInfos whose declared dtypes on `device_type` include `dtype`."""
    return tuple(op for op in all_ops() if dtype in op.supported_dtypes(device_type))
