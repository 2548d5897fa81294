"""Seeded bugs for the dtype-semantics suite: promotion, reduction `dtype=` and comparison mistakes real backends made.

Each fires only for its scalar kind or dtype combination, so OpInfo items (same-dtype operands,
no `dtype=`) stay clean; the dtype-semantics scenarios build exactly those combinations.
"""

from __future__ import annotations

import math

import torch

from torchcts.testing.faulty.bug_model import Bug

_ARITHMETIC = ("aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor")
_REDUCTIONS = ("aten.sum.default", "aten.sum.dim_IntList", "aten.prod.default", "aten.prod.dim_int",
               "aten.cumsum.default", "aten.nansum.default")
_COMPARISONS = tuple(f"aten.{name}.{overload}" for name in ("eq", "ne", "lt", "le", "gt", "ge")
                     for overload in ("Tensor", "Scalar"))


def _integral(value) -> bool:
    return isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex())


def _floating(value) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_floating_point()
    return isinstance(value, float)


# -- an integer tensor with a Python float: float64 instead of the default dtype ---------------------------------------

def _int_tensor_float_scalar(func, args, kwargs) -> bool:
    return len(args) >= 2 and _integral(args[0]) and isinstance(args[1], float)


# -- a reduction with dtype=: accumulates in the input's dtype, then casts --------------------------------------------

def _dtype_differs(func, args, kwargs) -> bool:
    dtype = kwargs.get("dtype")
    return (dtype is not None and args and isinstance(args[0], torch.Tensor) and dtype != args[0].dtype
            and args[0].dtype != torch.bool and not args[0].is_complex() and not dtype.is_complex)


def _accumulate_in_input_dtype(func, args, kwargs, result):
    return func(*args, **{**kwargs, "dtype": args[0].dtype}).to(kwargs["dtype"])


# -- a mixed integer/floating comparison: the floating operand truncated to the integer dtype --------------------------

_SIGNED_OR_BYTE = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _mixed_comparison(func, args, kwargs) -> bool:
    if len(args) < 2:
        return False
    a, b = args[0], args[1]
    return (_integral(a) and a.dtype in _SIGNED_OR_BYTE and _floating(b)) or (
        _integral(b) and b.dtype in _SIGNED_OR_BYTE and _floating(a))


def _truncated_to(value, dtype: torch.dtype):
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else value
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return torch.nan_to_num(value, nan=0.0).clamp(torch.iinfo(dtype).min, torch.iinfo(dtype).max).to(dtype)
    return value


def _compare_truncated(func, args, kwargs, result):
    a, b = args[0], args[1]
    dtype = a.dtype if _integral(a) else b.dtype
    return func(_truncated_to(a, dtype), _truncated_to(b, dtype), *args[2:], **kwargs)


# -- a Python int beyond 32 bits: passed to the kernel as a 32-bit int ---------------------------------------------

def _wide_int_scalar(func, args, kwargs) -> bool:
    return (len(args) >= 2 and isinstance(args[0], torch.Tensor) and args[0].dtype in (torch.int64, torch.float64)
            and isinstance(args[1], int) and not isinstance(args[1], bool) and not -2**31 <= args[1] < 2**31)


def _scalar_as_int32(func, args, kwargs, result):
    wrapped = (args[1] + 2**31) % 2**32 - 2**31
    return func(args[0], wrapped, *args[2:], **kwargs)


BUGS = (
    Bug("wide_int_scalar_truncated", _ARITHMETIC + ("aten.eq.Scalar", "aten.lt.Scalar", "aten.gt.Scalar"),
        "an int64 or float64 tensor meets a Python int outside the int32 range",
        "passes the Python int to the kernel as a 32-bit int (2**31 becomes -2**31)",
        _wide_int_scalar, _scalar_as_int32, suite="dtype_semantics"),
    Bug("float_scalar_promotes_to_double", _ARITHMETIC,
        "an integer or bool tensor meets a Python float (a wrapped number)",
        "promotes an integer tensor with a Python float to float64 instead of the default dtype (float32)",
        _int_tensor_float_scalar, lambda f, a, k, r: r.to(torch.float64), suite="dtype_semantics"),
    Bug("reduction_dtype_ignored", _REDUCTIONS,
        "a sum, prod, cumsum or nansum gets dtype= different from its (real, non-bool) input's dtype",
        "accumulates in the input's dtype and casts the result to dtype= (int8 sums wrap; floats truncate late)",
        _dtype_differs, _accumulate_in_input_dtype, suite="dtype_semantics"),
    Bug("mixed_comparison_truncates", _COMPARISONS,
        "an integer tensor (uint8, int8..int64) is compared with a floating tensor or a Python float",
        "compares in the integer dtype, truncating the floating operand (int 2 == 2.5 is True)",
        _mixed_comparison, _compare_truncated, suite="dtype_semantics"),
)
