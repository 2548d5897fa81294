"""Stable fingerprints of cases: a hash of the exact tensors (bits, strides, offset) and arguments.

Two cases share a fingerprint only if every tensor has the same dtype, layout, sizes, strides,
storage offset and bit-exact contents of the storage it can reach, and every other argument is
equal. The hash does not depend on the process, the machine's hash seed or object identities, so
two derandomized runs can compare their case sequences.
"""

from __future__ import annotations

import enum
import hashlib
import math
from typing import Any

import torch


def fingerprint(*parts: Any) -> str:
    """sha256 (hex) of any mix of tensors, numbers, strings, dtypes, sequences, dicts and SampleInputs."""
    digest = hashlib.sha256()
    _feed(digest, parts)
    return digest.hexdigest()


def same_bits(a: torch.Tensor, b: torch.Tensor, *, nan_payloads: bool = False) -> bool:
    """Whether two dense tensors hold the same elements bit for bit (-0.0 is not 0.0).

    NaNs need only sit in the same places unless `nan_payloads` asks for identical NaN bits.
    Layout does not matter: a re-laid-out tensor is the same as its contiguous twin.
    """
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    a, b = (x.detach().cpu().resolve_conj().resolve_neg().contiguous() for x in (a, b))
    if a.dtype.is_complex:
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    if nan_payloads or not a.dtype.is_floating_point:
        return torch.equal(a.unsqueeze(-1).view(torch.uint8), b.unsqueeze(-1).view(torch.uint8))
    nan_a, nan_b = a.float().isnan(), b.float().isnan()
    bits_a, bits_b = a.unsqueeze(-1).view(torch.uint8), b.unsqueeze(-1).view(torch.uint8)
    return torch.equal(nan_a, nan_b) and torch.equal(bits_a[~nan_a], bits_b[~nan_b])


def reachable_storage(t: torch.Tensor) -> torch.Tensor:
    """The 1-D slice of a strided tensor's storage its elements can reach (from 0 to the last one)."""
    if t.numel() == 0:
        return t.new_empty((0,))
    span = t.storage_offset() + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride())) + 1
    return torch.as_strided(t, (span,), (1,), 0)


def _feed(digest: "hashlib._Hash", value: Any) -> None:
    if isinstance(value, torch.Tensor):
        _feed_tensor(digest, value)
    elif isinstance(value, (list, tuple)):
        digest.update(f"seq:{type(value).__name__}:{len(value)}[".encode())
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    elif isinstance(value, dict):
        digest.update(f"dict:{len(value)}{{".encode())
        for key in sorted(value, key=repr):
            _feed(digest, key)
            _feed(digest, value[key])
        digest.update(b"}")
    elif isinstance(value, float):
        digest.update(b"float:" + (b"nan" if math.isnan(value) else value.hex().encode()))
    elif isinstance(value, complex):
        _feed(digest, ("complex", value.real, value.imag))
    elif value is None or isinstance(value, (bool, int, str, bytes, torch.dtype, torch.layout, torch.memory_format,
                                             torch.device, enum.Enum)):
        digest.update(f"{type(value).__name__}:{value!r};".encode())
    elif hasattr(value, "input") and hasattr(value, "args") and hasattr(value, "kwargs"):  # SampleInput
        _feed(digest, ("SampleInput", value.input, tuple(value.args), dict(value.kwargs)))
    elif callable(value):
        digest.update(f"callable:{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__name__)};".encode())
    else:
        digest.update(f"{type(value).__qualname__}:{value!r};".encode())


def _feed_tensor(digest: "hashlib._Hash", t: torch.Tensor) -> None:
    t = t.detach()
    if t.is_nested:  # its shape holds a per-tensor symbolic ragged size: hash the components instead
        digest.update(f"tensor:{t.dtype}:{t.layout}:nested:{t.dim()}[".encode())
        for component in t.unbind():
            _feed_tensor(digest, component)
        digest.update(b"]")
        return
    header = f"tensor:{t.dtype}:{t.layout}:{tuple(t.shape)}"
    if t.layout == torch.sparse_coo:
        digest.update(f"{header}:coalesced={t.is_coalesced()}".encode())
        _feed(digest, (t._indices(), t._values()))
        return
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        digest.update(header.encode())
        _feed(digest, (t.crow_indices(), t.col_indices(), t.values()))
        return
    if t.layout in (torch.sparse_csc, torch.sparse_bsc):
        digest.update(header.encode())
        _feed(digest, (t.ccol_indices(), t.row_indices(), t.values()))
        return
    digest.update(f"{header}:{t.stride()}:{t.storage_offset()}:".encode())
    if t.device.type == "meta":
        return
    storage = reachable_storage(t).cpu().contiguous()
    digest.update(storage.view(torch.uint8).numpy().tobytes() if storage.numel() else b"")
