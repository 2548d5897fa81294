"""The dtype-semantics suite's programs: torch-only scenarios, run on CPU and on the device.

Each is a module-level function of its case's inputs that uses only `torch` (the contract of
`torchcts.engine.programs`: export copies its source into a reproduction script). A program runs
every op of its scenario on the same inputs and returns {op: result}; where an op raises, its
entry is "raises <type name>", or "unsupported <type name>" where the message names the CPU
("nansum on CPU does not support complex inputs", "lt_cpu not implemented for 'ComplexFloat'"):
CPU's own limitation, which the check leaves out (CPU has no answer there; CUDA may have one). The dispatcher's missing-kernel error ("Could not run ...")
propagates: on the device it is a missing kernel, named. Integer division by zero is replaced by
division by one (CPU raises, other devices leave it undefined); integer exponents are kept small.
"""

from __future__ import annotations

import torch


def binary_promotion(input, other, other_on_cpu):
    """Every binary op on two tensors of any dtypes (a 0-dim `other` maybe on CPU): CPU's dtype and values."""
    if other_on_cpu:
        other = other.cpu()
    integral = not (input.is_floating_point() or input.is_complex() or other.is_floating_point()
                    or other.is_complex())
    divisor = torch.where(other == 0, torch.ones_like(other), other) if integral else other
    results = {}
    for op in ("add", "sub", "mul", "div", "div_floor", "div_trunc", "remainder", "pow", "maximum", "minimum",
               "bitwise_and", "bitwise_xor", "logical_and", "logical_or", "eq", "lt", "where"):
        try:
            if op == "add":
                results[op] = torch.add(input, other)
            elif op == "sub":
                results[op] = torch.sub(input, other)
            elif op == "mul":
                results[op] = torch.mul(input, other)
            elif op == "div":
                results[op] = torch.div(input, other)
            elif op == "div_floor":
                results[op] = torch.div(input, divisor, rounding_mode="floor")
            elif op == "div_trunc":
                results[op] = torch.div(input, divisor, rounding_mode="trunc")
            elif op == "remainder":
                results[op] = torch.remainder(input, divisor)
            elif op == "pow":
                results[op] = torch.pow(input, other.abs() if integral and other.dtype != torch.bool else other)
            elif op == "maximum":
                results[op] = torch.maximum(input, other)
            elif op == "minimum":
                results[op] = torch.minimum(input, other)
            elif op == "bitwise_and":
                results[op] = torch.bitwise_and(input, other)
            elif op == "bitwise_xor":
                results[op] = torch.bitwise_xor(input, other)
            elif op == "logical_and":
                results[op] = torch.logical_and(input, other)
            elif op == "logical_or":
                results[op] = torch.logical_or(input, other)
            elif op == "eq":
                results[op] = torch.eq(input, other)
            elif op == "lt":
                results[op] = torch.lt(input, other)
            else:
                results[op] = torch.where(input != 0, input, other)
        except Exception as error:  # noqa: BLE001 - CPU's rejection, which the device must share
            if "Could not run" in str(error):
                raise
            results[op] = ("unsupported " if "cpu" in str(error).lower() else "raises ") + type(error).__name__
    return results


def scalar_promotion(input, scalar, reverse):
    """Every binary op on a tensor and a Python bool/int/float/complex (a wrapped number), the scalar
    first where `reverse`: a wrapped number's dtype never wins within its category, only across
    categories (int tensor + 2.5 is the default float dtype; an int8 tensor + 1000 stays int8)."""
    integral = not (input.is_floating_point() or input.is_complex())
    exact = isinstance(scalar, int)  # bool or int
    safe_input = torch.where(input == 0, torch.ones_like(input), input) if integral else input
    safe_scalar = (True if isinstance(scalar, bool) else 1) if exact and scalar == 0 else scalar
    exponent = scalar
    if exact and not isinstance(scalar, bool):  # small integer exponents: no overflow, no negative int powers
        exponent = min(abs(scalar), 3) if integral else max(-3, min(3, scalar))
    results = {}
    for op in ("add", "sub", "mul", "div", "div_floor", "remainder", "pow", "bitwise_and", "eq", "lt", "clamp_min",
               "where"):
        try:
            if op == "add":
                results[op] = scalar + input if reverse else input + scalar
            elif op == "sub":
                results[op] = scalar - input if reverse else input - scalar
            elif op == "mul":
                results[op] = scalar * input if reverse else input * scalar
            elif op == "div":
                results[op] = scalar / input if reverse else input / scalar
            elif op == "div_floor":
                results[op] = scalar // safe_input if reverse else input // (safe_scalar if integral else scalar)
            elif op == "remainder":
                results[op] = scalar % safe_input if reverse else input % (safe_scalar if integral else scalar)
            elif op == "pow":
                base = input.abs() if integral and input.dtype != torch.bool else input
                results[op] = exponent ** base if reverse else input ** exponent
            elif op == "bitwise_and":
                results[op] = scalar & input if reverse else input & scalar
            elif op == "eq":
                results[op] = scalar == input if reverse else input == scalar
            elif op == "lt":
                results[op] = scalar < input if reverse else input < scalar
            elif op == "clamp_min":
                results[op] = torch.clamp(input, min=scalar)
            else:
                results[op] = torch.where(input != 0, input, scalar)
        except Exception as error:  # noqa: BLE001 - CPU's rejection, which the device must share
            if "Could not run" in str(error):
                raise
            results[op] = ("unsupported " if "cpu" in str(error).lower() else "raises ") + type(error).__name__
    return results


def inplace_promotion(input, other):
    """Every in-place op on a copy of `input` with a tensor or Python scalar `other`: the result keeps
    input's dtype where the promoted type casts back to it, and raises, leaving the copy untouched,
    where it cannot (an int tensor += a float, a bool tensor += an int)."""
    if isinstance(other, torch.Tensor):
        integral = not (input.is_floating_point() or input.is_complex() or other.is_floating_point()
                        or other.is_complex())
        divisor = torch.where(other == 0, torch.ones_like(other), other) if integral else other
        exponent = other.abs() if integral and other.dtype != torch.bool else other  # no negative int powers
    else:
        exact = isinstance(other, int) and not isinstance(other, bool)
        divisor = (True if isinstance(other, bool) else 1) if isinstance(other, int) and other == 0 else other
        exponent = min(abs(other), 3) if exact else other
    results = {}
    for op in ("add_", "sub_", "mul_", "div_", "div_floor_", "pow_", "bitwise_or_", "clamp_min_"):
        target = input.clone()
        try:
            if op == "add_":
                result = target.add_(other)
            elif op == "sub_":
                result = target.sub_(other)
            elif op == "mul_":
                result = target.mul_(other)
            elif op == "div_":
                result = target.div_(other)
            elif op == "div_floor_":
                result = target.div_(divisor, rounding_mode="floor")
            elif op == "pow_":
                result = target.pow_(exponent)
            elif op == "bitwise_or_":
                result = target.bitwise_or_(other)
            else:
                result = target.clamp_min_(other)
            results[op] = (result is target, target)
        except Exception as error:  # noqa: BLE001 - CPU's rejection, which the device must share
            if "Could not run" in str(error):
                raise
            kind = "unsupported " if "cpu" in str(error).lower() else "raises "
            results[op] = (kind + type(error).__name__, target)
    return results


def reduction_dtype(input, dtype, dim):
    """Every reduction with `dtype=dtype` (None: CPU's default: sum of integers is int64, mean of
    integers raises) over `dim` (None: all; cumsum over dimension 0 then)."""
    kwargs = {} if dtype is None else {"dtype": dtype}
    results = {}
    for op in ("sum", "nansum", "prod", "mean", "cumsum"):
        try:
            if op == "sum":
                results[op] = torch.sum(input, **kwargs) if dim is None else torch.sum(input, dim, **kwargs)
            elif op == "nansum":
                results[op] = torch.nansum(input, **kwargs) if dim is None else torch.nansum(input, dim, **kwargs)
            elif op == "prod":
                results[op] = torch.prod(input, **kwargs) if dim is None else torch.prod(input, dim, **kwargs)
            elif op == "mean":
                results[op] = torch.mean(input, **kwargs) if dim is None else torch.mean(input, dim, **kwargs)
            else:
                results[op] = torch.cumsum(input, 0 if dim is None else dim, **kwargs)
        except Exception as error:  # noqa: BLE001 - CPU's rejection, which the device must share
            if "Could not run" in str(error):
                raise
            results[op] = ("unsupported " if "cpu" in str(error).lower() else "raises ") + type(error).__name__
    return results


def comparison_promotion(input, other, reverse):
    """Every comparison of `input` with a tensor or Python scalar of any dtype, `other` first where
    `reverse`, computed in the promoted dtype (int64 2**24 + 1 == float32 2**24 is True)."""
    left, right = (other, input) if reverse else (input, other)
    results = {}
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        try:
            if op == "eq":
                results[op] = left == right
            elif op == "ne":
                results[op] = left != right
            elif op == "lt":
                results[op] = left < right
            elif op == "le":
                results[op] = left <= right
            elif op == "gt":
                results[op] = left > right
            else:
                results[op] = left >= right
        except Exception as error:  # noqa: BLE001 - CPU's rejection, which the device must share
            if "Could not run" in str(error):
                raise
            results[op] = ("unsupported " if "cpu" in str(error).lower() else "raises ") + type(error).__name__
    return results


def cast(input, dtype):
    """{"to": input.to(dtype), "undefined": how many elements were masked}, compared where C++ defines
    the conversion: a floating value (a complex one's real part) converted to an integer type is
    undefined when it is NaN, infinite or out of the type's range after truncation, so CPU's answer
    there is platform-defined; those elements are set to 0 on both sides and only counted."""
    result = input.to(dtype)
    undefined = torch.zeros((), dtype=torch.int64, device=input.device)
    if (input.is_floating_point() or input.is_complex()) and not (
            dtype.is_floating_point or dtype.is_complex or dtype == torch.bool):
        real = (input.real if input.is_complex() else input).to(torch.float64).trunc()
        bits = torch.iinfo(dtype).bits
        low, high = (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1)) if torch.iinfo(dtype).min < 0 else (0.0, 2.0 ** bits)
        defined = real.isfinite() & (real >= low) & (real < high)
        result = torch.where(defined, result, torch.zeros_like(result))
        undefined = (~defined).sum()
    return {"to": result, "undefined": undefined}


PROGRAMS = {"binary_promotion": binary_promotion, "scalar_promotion": scalar_promotion,
            "inplace_promotion": inplace_promotion, "reduction_dtype": reduction_dtype,
            "comparison_promotion": comparison_promotion, "cast": cast}
