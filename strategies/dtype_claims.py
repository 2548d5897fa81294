"""Dtypes to test: what the manifest claims, intersected with what an op supports."""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts import dtypes as dtype_names
from torchcts.manifest import DtypeStatus


def claimed_dtypes(manifest: Any = None, op: Any = None, device_type: str = "cpu") -> tuple[torch.dtype, ...]:
    """Dtypes claimed for `op` (all claimable dtypes without a manifest), float32 first.

    A dtype counts when the manifest claims it for the op's OpInfo name (True, or a matching
    regex), the op supports it on `device_type` (the CPU oracle's device by default), and, for
    float8 dtypes, the manifest declares `fp8`.
    """
    candidates = list(dtype_names.CLAIMABLE_DTYPES)
    if manifest is not None:
        name = op.name if op is not None else None
        candidates = [d for d in candidates if manifest.dtype_status(d, name) is DtypeStatus.CLAIMED]
        if not manifest.declares("fp8"):
            candidates = [d for d in candidates if d not in dtype_names.FLOAT8_DTYPES]
    if op is not None:
        supported = op.supported_dtypes(device_type)
        candidates = [d for d in candidates if d in supported]
    candidates.sort(key=lambda d: d != torch.float32)  # stable: float32 first, then the canonical order
    return tuple(candidates)


def dtypes(manifest: Any = None, op: Any = None, device_type: str = "cpu") -> st.SearchStrategy[torch.dtype]:
    """One of `claimed_dtypes(manifest, op)`; shrinks toward float32 (when claimed)."""
    choices = claimed_dtypes(manifest, op, device_type)
    if not choices:
        what = f"op {op.name!r}" if op is not None else "any op"
        raise InvalidArgument(f"the manifest claims no dtype that {what} supports on {device_type}")
    return st.sampled_from(choices)
