"""Seeded bugs for the ieee754 suite: IEEE-754 corner cases real backends have got wrong.

- a half-precision multiply/divide that flushes subnormal results to zero (FTZ in a fast path);
- `round` that rounds halves away from zero (C `round` instead of `nearbyint`);
- `atan2(-0.0, x<0)` giving +pi (the sign of a zero numerator dropped);
- `minimum`/`min` that returns the non-NaN operand (fmin semantics where NaN must propagate);
- half-precision arithmetic, exp and casts that saturate an overflow to the largest finite value (a
  saturating convert instruction, or a clamp meant for fp8 left on);
- float16 matrix products and products that flush subnormal results to zero (FTZ in a GEMM or
  reduction kernel);
- a float32 sum that saturates instead of overflowing (an accumulator clamped to the dtype's range).
Each fires only when its input holds the value class it mishandles (the range-limit bugs: finite
operands whose result leaves the dtype's range).
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug

_HALF = (torch.float16, torch.bfloat16)


def _tensors(args: tuple) -> list[torch.Tensor]:
    return [a for a in args if isinstance(a, torch.Tensor)]


def _flushed(func, args, kwargs, result: torch.Tensor) -> torch.Tensor:
    """Subnormal elements of `result` replaced by a zero of the same sign."""
    if result.dtype not in _HALF:
        return result
    tiny = torch.finfo(result.dtype).smallest_normal
    subnormal = (result != 0) & (result.abs() < tiny)
    return torch.where(subnormal, torch.zeros_like(result).copysign(result), result)


def _has_exact_half(args: tuple) -> bool:
    x = args[0]
    return x.is_floating_point() and bool(((x - x.trunc()).abs() == 0.5).any())


def _half_away_from_zero(func, args, kwargs, result: torch.Tensor) -> torch.Tensor:
    x = args[0]
    away = (x.abs() + 0.5).floor().copysign(x)
    return torch.where((x - x.trunc()).abs() == 0.5, away, result)


def _negative_zero_over_negative(args: tuple) -> torch.Tensor:
    y, x = torch.broadcast_tensors(args[0], args[1])
    return (y == 0) & y.signbit() & x.signbit()


def _nan_dropped_min(func, args, kwargs, result: torch.Tensor) -> torch.Tensor:
    """minimum(a, b): the other operand where one is NaN; min(a): the minimum of the non-NaN elements."""
    if len(_tensors(args)) == 2:
        return torch.fmin(args[0], args[1])
    finite = args[0][~args[0].isnan()]
    return finite.min() if finite.numel() else result


def _all_finite_of(dtypes: tuple[torch.dtype, ...], args: tuple) -> bool:
    """Floating operands of `dtypes`, every element finite: an infinite result of the op is then an overflow."""
    tensors = [t for t in _tensors(args) if t.is_floating_point()]
    return bool(tensors) and tensors[0].dtype in dtypes and all(bool(t.isfinite().all()) for t in tensors)


def _saturated(func, args, kwargs, result):
    """Infinite elements of `result` replaced by the dtype's largest finite value of the same sign."""
    if not isinstance(result, torch.Tensor) or not result.is_floating_point():
        return result
    largest = torch.full_like(result, torch.finfo(result.dtype).max)
    return torch.where(result.isinf(), largest.copysign(result), result)


def _float16_flushed(func, args, kwargs, result):
    return _flushed(func, args, kwargs, result) if result.dtype == torch.float16 else result


def _zero_divisor(func, args) -> bool:
    """x / 0 is a division by zero, not an overflow: its infinity is `inf_arithmetic`'s to get wrong."""
    if str(func) != "aten.div.Tensor" or len(args) < 2:
        return False
    divisor = args[1]
    return bool((divisor == 0).any()) if isinstance(divisor, torch.Tensor) else divisor == 0


BUGS = (
    Bug("subnormal_flush_half", ("aten.mul.Tensor", "aten.div.Tensor"),
        "a float16/bfloat16 product or quotient is subnormal",
        "flushes subnormal float16/bfloat16 products and quotients to zero",
        lambda f, a, k: any(t.dtype in _HALF for t in _tensors(a)),
        _flushed, suite="ieee754"),
    Bug("round_half_away", ("aten.round.default",),
        "a floating input holds an exact half (0.5, 2.5, -1.5, ...)",
        "rounds halves away from zero instead of to even",
        lambda f, a, k: _has_exact_half(a),
        _half_away_from_zero, suite="ieee754"),
    Bug("atan2_negative_zero", ("aten.atan2.default",),
        "y is -0.0 where x is negative (or -0.0)",
        "returns +pi for atan2(-0.0, x < 0), dropping the sign of the zero",
        lambda f, a, k: a[0].is_floating_point() and bool(_negative_zero_over_negative(a).any()),
        lambda f, a, k, r: torch.where(_negative_zero_over_negative(a), r.abs(), r), suite="ieee754"),
    Bug("nan_dropped_min", ("aten.minimum.default", "aten.min.default"),
        "a floating input holds NaN",
        "returns the non-NaN operand (minimum) or the least non-NaN element (min) instead of NaN",
        lambda f, a, k: any(t.is_floating_point() and bool(t.isnan().any()) for t in _tensors(a)),
        _nan_dropped_min, suite="ieee754"),
    Bug("overflow_saturate_half",
        ("aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor",
         "aten.exp.default", "aten._to_copy.default"),
        "float16/bfloat16 operands (or a cast to float16/bfloat16) all finite, no zero divisor, and the result "
        "overflows",
        "saturates an overflowing half-precision result to ±finfo.max instead of ±inf",
        lambda f, a, k: not _zero_divisor(f, a) and (_all_finite_of(_HALF, a) or (
            k.get("dtype") in _HALF and _all_finite_of((torch.float32, torch.float64), a))),
        _saturated, suite="ieee754"),
    Bug("underflow_flush_float16",
        ("aten.mm.default", "aten.mv.default", "aten.dot.default", "aten.prod.dim_int", "aten.cumprod.default"),
        "a float16 matrix product or product is subnormal",
        "flushes subnormal float16 matrix products and products to zero",
        lambda f, a, k: any(t.dtype == torch.float16 for t in _tensors(a)),
        _float16_flushed, suite="ieee754"),
    Bug("sum_saturates_float32", ("aten.sum.default", "aten.sum.dim_IntList", "aten.cumsum.default"),
        "a float32 input is all finite and its sum overflows",
        "saturates an overflowing float32 sum or cumulative sum to ±finfo.max instead of ±inf",
        lambda f, a, k: _all_finite_of((torch.float32,), a),
        _saturated, suite="ieee754"),
)
