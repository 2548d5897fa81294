"""The OpInfo database, imported once per process, lazily: the only module that touches it.

`torch.testing._internal.common_methods_invocations` takes seconds to import, so nothing imports
it at module load; the first call to `all_ops()` does, and the result is cached.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from torch.testing._internal.opinfo.core import OpInfo


@functools.cache
def all_ops() -> tuple["OpInfo", ...]:
    """Every OpInfo in PyTorch's op database, in its order."""
    from torch.testing._internal.common_methods_invocations import op_db

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
