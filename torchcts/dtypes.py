"""Dtype names TorchCTS understands: canonical names, aliases, and which dtypes a manifest may claim.

A manifest may name a dtype as a ``torch.dtype`` or as a string (``"float32"``, ``"torch.float32"``,
``"float"``). Everything downstream uses the canonical name (``torch.float32`` -> ``"float32"``), so
two spellings of one dtype never become two claims.
"""

from __future__ import annotations

import torch

# Dtypes a backend can claim, in the order reports list them. Bit-packed, sub-byte integer and
# quantized dtypes are not claimable here: quantized tensors are claimed through the quantization
# capabilities and container formats. Names missing from the installed torch are dropped below.
_CLAIMABLE_NAMES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
)

CLAIMABLE_DTYPES: tuple[torch.dtype, ...] = tuple(
    getattr(torch, name) for name in _CLAIMABLE_NAMES if isinstance(getattr(torch, name, None), torch.dtype)
)

FLOAT8_DTYPES: tuple[torch.dtype, ...] = tuple(d for d in CLAIMABLE_DTYPES if str(d).startswith("torch.float8_"))


def canonical_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``: the name used in manifests, records and reports."""
    return str(dtype).removeprefix("torch.")


def lookup(key: object) -> torch.dtype | None:
    """The torch dtype a manifest key denotes (a dtype, ``"float"``, ``"torch.half"``), or None."""
    if isinstance(key, torch.dtype):
        return key
    if not isinstance(key, str):
        return None
    value = getattr(torch, key.strip().removeprefix("torch."), None)
    return value if isinstance(value, torch.dtype) else None


def claimable_names() -> list[str]:
    """Canonical names of every claimable dtype, for error messages and suggestions."""
    return [canonical_name(d) for d in CLAIMABLE_DTYPES]


def spellings() -> list[str]:
    """Every string that names a claimable dtype (canonical names and torch aliases)."""
    names = []
    for attr in dir(torch):
        value = getattr(torch, attr, None)
        if isinstance(value, torch.dtype) and value in CLAIMABLE_DTYPES:
            names.append(attr)
    return sorted(set(names))
