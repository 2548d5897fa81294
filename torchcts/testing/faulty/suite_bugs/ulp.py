"""Seeded bugs for the ULP-aware oracle: results one ULP off, inside every standard tolerance.

Each is a rounding mistake real backends made in ops that IEEE-754 (and CPU) round correctly: an
adder that rounds toward zero, a fast-math square root built from an approximate reciprocal square
root, a bfloat16 conversion that chops the low bits of the float32 result instead of rounding to
nearest even. `assert_close`'s float32, bfloat16 and float16 tolerances let all of them through;
only the forward property's ULP rule (`torchcts.engine.ulp_oracle`) sees them.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug


def _laid_out_like(result: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """`values` in a tensor with `result`'s strides: the bugs change values only, never the layout."""
    return torch.empty_like(result).copy_(values)


def _one_ulp_toward_zero(values: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """`values` with the magnitude of each finite non-zero element under `where` stepped one ULP down."""
    ints = {2: torch.int16, 4: torch.int32}[values.element_size()]
    bits = values.view(ints)
    movable = where & values.isfinite() & (values != 0)
    return _laid_out_like(values, torch.where(movable, bits - 1, bits).view(values.dtype))  # magnitude - 1


def _float32_tensor_pair(args: tuple, kwargs: dict) -> bool:
    return (len(args) >= 2 and all(isinstance(a, torch.Tensor) and a.dtype == torch.float32 for a in args[:2])
            and kwargs.get("alpha", 1) == 1)


def _add_toward_zero(func, args, kwargs, result):
    a, b = args[0].to(torch.float64), args[1].to(torch.float64)
    exact = (a + b if "add" in str(func) else a - b).expand(result.shape)  # float32 operands: exact in float64
    rounded_up = result.to(torch.float64).abs() > exact.abs()  # rounded to nearest, away from zero
    return _one_ulp_toward_zero(result, rounded_up)


def _sqrt_via_rsqrt(func, args, kwargs, result):
    x = args[0]
    fast = x * torch.rsqrt(x)  # x * (1/sqrt(x)): two roundings on an approximate reciprocal square root
    return _laid_out_like(result, torch.where((x > 0) & x.isfinite(), fast, result))


def _bfloat16_tensor_division(args: tuple, kwargs: dict) -> bool:
    return (len(args) >= 2 and all(isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 for a in args[:2])
            and kwargs.get("rounding_mode") is None)


def _chopped_bfloat16_quotient(func, args, kwargs, result):
    quotient = (args[0].to(torch.float32) / args[1].to(torch.float32)).expand(result.shape).contiguous()
    chopped = (quotient.view(torch.int32) & ~0xFFFF).view(torch.float32).to(torch.bfloat16)  # exact: 8 bits kept
    return _laid_out_like(result, torch.where(quotient.isfinite(), chopped, result))


BUGS = (
    Bug("add_round_toward_zero", ("aten.add.Tensor", "aten.sub.Tensor"),
        "a float32 addition or subtraction of two float32 tensors (alpha 1) whose exact result is not a float32",
        "rounds float32 sums toward zero instead of to nearest (an adder without a round bit): one ULP off",
        lambda f, a, k: _float32_tensor_pair(a, k),
        _add_toward_zero, suite="ulp"),
    Bug("sqrt_via_rsqrt", ("aten.sqrt.default",),
        "a float32 square root of a positive finite input",
        "computes float32 sqrt(x) as x * rsqrt(x) (fast math): up to two ULPs off",
        lambda f, a, k: isinstance(a[0], torch.Tensor) and a[0].dtype == torch.float32,
        _sqrt_via_rsqrt, suite="ulp"),
    Bug("bfloat16_div_truncates", ("aten.div.Tensor",),
        "a true division of two bfloat16 tensors",
        "converts the float32 quotient to bfloat16 by dropping its low 16 bits (toward zero) instead of "
        "rounding to nearest even: one ULP off",
        lambda f, a, k: _bfloat16_tensor_division(a, k),
        _chopped_bfloat16_quotient, suite="ulp"),
)
