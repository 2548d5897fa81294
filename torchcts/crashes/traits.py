"""What a case holds that a known crash needs: special values, an empty dimension, a zero stride, a large dimension.

An oracle rule may name the case traits its crash needs (`"cases": ["special_values"]`); only
cases with one of them then run in a forked child, the others in the process as usual, so a rule
for a crash that only NaN input triggers does not cost a fork on every case. The traits are read
from the case's tensors themselves, not from how they were drawn, so drawn, shrunk and replayed
cases are judged alike.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch

LARGE_DIM = 257  # torch 2.13 fft.hfftn/hfft2 corrupt the heap from a middle dimension of this size
HUGE = 2.0 ** 20  # beyond any OpInfo sample value; the special-value tables reach finfo.max


def _tensors(sample: Any) -> list[torch.Tensor]:
    leaves = torch.utils._pytree.tree_leaves([getattr(sample, "input", sample), list(getattr(sample, "args", ())),
                                              dict(getattr(sample, "kwargs", {}))])
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.is_nested]


def _special(t: torch.Tensor) -> bool:
    if t.numel() == 0 or t.dtype == torch.bool or t.device.type == "meta" or t.is_quantized:
        return False
    if t.is_floating_point() or t.is_complex():
        values = torch.view_as_real(t.detach().resolve_conj()) if t.is_complex() else t.detach()
        values = values.to(torch.float64)
        return bool((~values.isfinite()).any() or (values.abs() >= HUGE).any())
    info = torch.iinfo(t.dtype)
    extreme = t >= info.max - 1
    if info.min < 0:  # an unsigned type's minimum is 0, an ordinary value
        extreme |= t <= info.min + 1
    return bool(extreme.any())


TRAITS = {
    "special_values": _special,  # NaN, ±inf, a huge finite value, an integer at its dtype's extremes
    "empty": lambda t: 0 in t.shape,
    "zero_stride": lambda t: any(stride == 0 and size > 1 for stride, size in zip(t.stride(), t.shape)),
    "large_dim": lambda t: any(size >= LARGE_DIM for size in t.shape),
}


def case_traits(sample: Any) -> frozenset[str]:
    """The traits (TRAITS keys) some dense tensor of the sample (a SampleInput, or a tensor) has."""
    tensors = _tensors(sample)
    return frozenset(name for name, has in TRAITS.items() if any(has(t) for t in tensors))


def has_any(sample: Any, traits: Iterable[str]) -> bool:
    tensors = _tensors(sample)
    return any(TRAITS[name](t) for name in traits for t in tensors)
