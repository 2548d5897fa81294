"""The dtype-semantics suite's programs: torch-only scenarios, run on CPU and on the device.

Each is a module-level function of its case's inputs that uses only `torch` (the contract of
`torchcts.engine.programs`: export copies its source into a reproduction script). Where CPU raises
a rejection (RuntimeError, TypeError, ValueError) the program returns "raises <type name>", so
the device must reject the same way; a NotImplementedError (no kernel for the dtype) propagates:
on CPU it makes the case `cpu_contract`, on the device it is a missing kernel. Integer division
by zero is replaced by division by one (CPU raises, other devices leave it undefined).
"""

from __future__ import annotations

import torch


def binary_promotion(input, other, op, other_on_cpu):
    """`op(input, other)` for two tensors of any dtypes (a 0-dim `other` maybe on CPU): CPU's dtype and values."""
    if other_on_cpu:
        other = other.cpu()
    integral = not (input.is_floating_point() or input.is_complex() or other.is_floating_point()
                    or other.is_complex())
    if integral and op in ("div_floor", "div_trunc", "remainder"):
        other = torch.where(other == 0, torch.ones_like(other), other)
    try:
        if op == "add":
            return torch.add(input, other)
        if op == "sub":
            return torch.sub(input, other)
        if op == "mul":
            return torch.mul(input, other)
        if op == "div":
            return torch.div(input, other)
        if op == "div_floor":
            return torch.div(input, other, rounding_mode="floor")
        if op == "div_trunc":
            return torch.div(input, other, rounding_mode="trunc")
        if op == "remainder":
            return torch.remainder(input, other)
        if op == "pow":
            return torch.pow(input, other.abs() if integral else other)  # an integer to a negative power raises
        if op == "maximum":
            return torch.maximum(input, other)
        if op == "minimum":
            return torch.minimum(input, other)
        if op == "bitwise_and":
            return torch.bitwise_and(input, other)
        if op == "bitwise_xor":
            return torch.bitwise_xor(input, other)
        if op == "logical_and":
            return torch.logical_and(input, other)
        if op == "logical_or":
            return torch.logical_or(input, other)
        if op == "eq":
            return torch.eq(input, other)
        if op == "lt":
            return torch.lt(input, other)
        if op == "where":
            return torch.where(input != 0, input, other)
        raise ValueError(f"unknown op {op!r}")
    except NotImplementedError:
        raise
    except (RuntimeError, TypeError, ValueError) as error:
        return "raises " + type(error).__name__


def scalar_promotion(input, scalar, op, reverse):
    """`input op scalar` (or `scalar op input`) with a Python bool/int/float/complex: a wrapped number's
    dtype never wins within its category, only across categories (int tensor + 2.5 -> the default float)."""
    integral = not (input.is_floating_point() or input.is_complex())
    if op in ("div_floor", "remainder") and integral:
        if reverse:
            input = torch.where(input == 0, torch.ones_like(input), input)
        elif scalar == 0 and not isinstance(scalar, (float, complex)):
            scalar = True if isinstance(scalar, bool) else 1
    if op == "pow" and integral and not isinstance(scalar, (bool, float, complex)):
        if reverse:
            input = input.abs()  # an integer to a negative power raises
        else:
            scalar = abs(scalar)
    try:
        if op == "add":
            return scalar + input if reverse else input + scalar
        if op == "sub":
            return scalar - input if reverse else input - scalar
        if op == "mul":
            return scalar * input if reverse else input * scalar
        if op == "div":
            return scalar / input if reverse else input / scalar
        if op == "div_floor":
            return scalar // input if reverse else input // scalar
        if op == "remainder":
            return scalar % input if reverse else input % scalar
        if op == "pow":
            return scalar ** input if reverse else input ** scalar
        if op == "bitwise_and":
            return scalar & input if reverse else input & scalar
        if op == "eq":
            return scalar == input if reverse else input == scalar
        if op == "lt":
            return scalar < input if reverse else input < scalar
        if op == "clamp_min":
            return torch.clamp(input, min=scalar)
        if op == "where":
            return torch.where(input != 0, input, scalar)
        raise ValueError(f"unknown op {op!r}")
    except NotImplementedError:
        raise
    except (RuntimeError, TypeError, ValueError) as error:
        return "raises " + type(error).__name__


def inplace_promotion(input, other, op):
    """`input.op_(other)`: the result keeps input's dtype where the promoted type casts back to it, and
    raises (leaving input untouched) where it cannot (an int tensor += a float)."""
    if isinstance(other, torch.Tensor):
        integral = not (input.is_floating_point() or input.is_complex() or other.is_floating_point()
                        or other.is_complex())
        if integral and op == "div_floor_":
            other = torch.where(other == 0, torch.ones_like(other), other)
        if integral and op == "pow_":
            other = other.abs()
    elif op == "div_floor_" and other == 0 and not isinstance(other, (float, complex)):
        other = True if isinstance(other, bool) else 1
    elif op == "pow_" and isinstance(other, int) and not isinstance(other, bool):
        other = abs(other)
    try:
        if op == "add_":
            result = input.add_(other)
        elif op == "sub_":
            result = input.sub_(other)
        elif op == "mul_":
            result = input.mul_(other)
        elif op == "div_":
            result = input.div_(other)
        elif op == "div_floor_":
            result = input.div_(other, rounding_mode="floor")
        elif op == "pow_":
            result = input.pow_(other)
        elif op == "bitwise_or_":
            result = input.bitwise_or_(other)
        elif op == "clamp_min_":
            result = input.clamp_min_(other)
        else:
            raise ValueError(f"unknown op {op!r}")
    except NotImplementedError:
        raise
    except (RuntimeError, TypeError, ValueError) as error:
        return "raises " + type(error).__name__, input
    return result is input, input


def reduction_dtype(input, op, dtype, dim):
    """`op(input[, dim], dtype=dtype)`: the result (or accumulation) dtype a reduction takes from `dtype=`, or
    CPU's default (sum of integers -> int64, mean of integers raises)."""
    kwargs = {} if dtype is None else {"dtype": dtype}
    try:
        if op == "sum":
            return torch.sum(input, **kwargs) if dim is None else torch.sum(input, dim, **kwargs)
        if op == "nansum":
            return torch.nansum(input, **kwargs) if dim is None else torch.nansum(input, dim, **kwargs)
        if op == "prod":
            return torch.prod(input, **kwargs) if dim is None else torch.prod(input, dim, **kwargs)
        if op == "mean":
            return torch.mean(input, **kwargs) if dim is None else torch.mean(input, dim, **kwargs)
        if op == "cumsum":
            return torch.cumsum(input, dim, **kwargs)
        raise ValueError(f"unknown op {op!r}")
    except NotImplementedError:
        raise
    except (RuntimeError, TypeError, ValueError) as error:
        return "raises " + type(error).__name__


def comparison_promotion(input, other, op, reverse):
    """`input op other` for a tensor or Python scalar of any dtype, compared in the promoted dtype
    (int64 2**24 + 1 == float32 2**24 is True: the integer rounds to float32 first)."""
    left, right = (other, input) if reverse else (input, other)
    try:
        if op == "eq":
            return left == right
        if op == "ne":
            return left != right
        if op == "lt":
            return left < right
        if op == "le":
            return left <= right
        if op == "gt":
            return left > right
        if op == "ge":
            return left >= right
        raise ValueError(f"unknown op {op!r}")
    except NotImplementedError:
        raise
    except (RuntimeError, TypeError, ValueError) as error:
        return "raises " + type(error).__name__


def cast(input, dtype):
    """`input.to(dtype)`, compared where C++ defines the conversion; returns (result, masked count).

    A floating (or complex: its real part) value converted to an integer type is undefined in C++ when
    it is NaN, infinite or out of the type's range after truncation; CPU's answer there is
    platform-defined, so those elements are set to 0 on both sides and only counted."""
    result = input.to(dtype)
    if input.is_floating_point() or input.is_complex():
        if not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool):
            real = (input.real if input.is_complex() else input).to(torch.float64).trunc()
            bits = torch.iinfo(dtype).bits
            low, high = (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1)) if torch.iinfo(dtype).min < 0 else (0.0, 2.0 ** bits)
            defined = real.isfinite() & (real >= low) & (real < high)
            return torch.where(defined, result, torch.zeros_like(result)), (~defined).sum()
    return result, torch.zeros((), dtype=torch.int64, device=input.device)


PROGRAMS = {"binary_promotion": binary_promotion, "scalar_promotion": scalar_promotion,
            "inplace_promotion": inplace_promotion, "reduction_dtype": reduction_dtype,
            "comparison_promotion": comparison_promotion, "cast": cast}
