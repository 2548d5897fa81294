"""The claimed dtype's precision: the bound a floating comparison's default tolerance never exceeds.

`torch.testing.assert_close`'s defaults are a few ULPs for float32, float16 and bfloat16, but allow
float64 and complex128 a relative (and absolute) error of 1e-7, about 4.5e8 ULPs: a backend that
computes claimed float64 work in float32 passes them. So each default is capped at a budget of
ULPs of the claimed dtype (`eps`, its `torch.finfo(...).eps`), by comparison category:

- `ULP_BUDGET` (64) for an op's result: a few ULPs for a correctly computed elementwise op, with
  room for another libm's transcendental functions; reductions, matmul, norms, losses and FFTs
  widen it by about sqrt(n) (`oracle.accumulation_widening`) and get the accumulation floor below.
- `CONDITIONED_BUDGET` (2^22) for linalg and for scenarios (a program of many ops): their error
  grows with a condition number the oracle does not know. float64's is then about 9.3e-10, still
  64 times below the 6e-8 a float32 rounding of the inputs alone costs.

The cap only tightens (the minimum of the two): float16 and bfloat16 keep assert_close's defaults,
float32 its rtol while its absolute 1e-5 becomes 64 ULPs (7.6e-6); OpInfo and manifest overrides
still win over it.

For results that each sum many inputs the absolute floor follows the error bound of a sum:
sqrt(n) * eps * sum|x| (`accumulation_floor`), with sum|x| estimated from the case's inputs, so
that cancellation (a result far smaller than its terms) is no false failure on a backend that
sums in another order, while a sum computed in a narrower dtype (eps 2^29 times float64's for
float32, 2^13 times float32's for float16) still fails.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

ULP_BUDGET = 64
CONDITIONED_BUDGET = 2**22
_CONDITIONED = frozenset({"linalg", None})  # None: a scenario (no op, no op category)
_PRODUCTS = frozenset({"matmul", "conv"})  # each term is a product of two operands' elements


def eps(dtype: torch.dtype) -> float:
    """The claimed dtype's machine epsilon (complex: its components')."""
    return torch.finfo(dtype.to_real() if dtype.is_complex else dtype).eps


def budget(category: str | None) -> int:
    """ULPs of the claimed dtype a comparison of `category` allows by default (None: a scenario)."""
    return CONDITIONED_BUDGET if category in _CONDITIONED else ULP_BUDGET


def capped(dtype: torch.dtype, category: str | None, rtol: float, atol: float) -> tuple[float, float]:
    """assert_close's (rtol, atol) for `dtype`, each at most `budget(category)` ULPs of the dtype."""
    bound = budget(category) * eps(dtype)
    return min(rtol, bound), min(atol, bound)


def capped_default(tol: Any) -> bool:
    """Whether a tolerance is a default the claimed-precision cap tightened (float64 and complex128: below
    assert_close's 1e-7). Ops outside the summing categories that still sum (scatter_add, index_add, pooling,
    interpolation) get the accumulation floor for those dtypes; others keep assert_close's elementwise defaults."""
    return tol.source.startswith("default") and tol.atol < 1e-7


def accumulation_floor(inputs: Any, expected: Any, category: str | None, n: float) -> float:
    """sqrt(n) * eps * sum|x|: the error of results that each sum n terms (`oracle.terms_per_output`), in the
    narrowest floating dtype of `expected`; 0 where nothing is summed (n <= 1).

    For matmul and convolutions n is at least the contraction (`contraction`: k, or the window), and sum|x| is
    taken as n times the product of the two largest input magnitudes (each term multiplies an element of each
    operand); elsewhere n times the largest: a bound on each output's sum of |terms|.
    """
    outputs = [t for t in tree_flatten(expected)[0] if _floating(t)]
    operands = [t for t in tree_flatten(inputs)[0] if _floating(t)]
    if category in _PRODUCTS:  # each output sums a contraction (k, or a convolution window) of products
        n = max(n, contraction(operands, category))
    if n <= 1 or not outputs:
        return 0.0
    magnitudes = sorted((_largest(t) for t in operands), reverse=True) or [0.0]
    scale = magnitudes[0] * (magnitudes[1] if category in _PRODUCTS and len(magnitudes) > 1 else 1.0)
    floor = math.sqrt(n) * max(eps(t.dtype) for t in outputs) * n * scale
    return floor if math.isfinite(floor) else 0.0


def contraction(operands: list[torch.Tensor], category: str | None) -> int:
    """The terms each output of a matmul or convolution sums: k of an (.., k) x (k, ..) (or (.., k) x (.., k),
    linear's weight) pair of consecutive operands; for a convolution, a bound: the larger of its weight's first two
    sizes (the input channels of a convolution, or of a transposed one) times its window. 0 when no pair or weight
    is recognised (the caller then keeps elements in over elements out)."""
    if category == "conv":
        weights = [w for w in operands[1:] if w.dim() >= 3]
        return max((max(w.shape[0], w.shape[1]) * math.prod(w.shape[2:]) for w in weights), default=0)
    found = 0
    for a, b in zip(operands, operands[1:]):
        if a.dim() >= 1 and b.dim() >= 1:
            inner = b.shape[-2] if b.dim() >= 2 else b.shape[0]
            if a.shape[-1] in (inner, b.shape[-1]):
                found = max(found, a.shape[-1])
    return found


def _floating(t: Any) -> bool:
    return (isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()) and t.layout == torch.strided
            and not t.is_nested and t.device.type != "meta" and t.numel() > 0)


def _largest(t: torch.Tensor) -> float:
    magnitude = t.detach().abs().to(torch.float64)
    finite = magnitude[torch.isfinite(magnitude)]
    return float(finite.max()) if finite.numel() else 0.0
