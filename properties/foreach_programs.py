"""The foreach suite's programs (`torchcts.engine.programs`): torch only, each returns what its foreach call gives.

One program per overload family of `torch._foreach_*` (binary, pointwise, unary, lerp, norm, zero, copy,
long lists): the result list (out-of-place) or the mutated input list (in-place). The suite
(`torchcts.properties.suites.foreach`) draws their cases and compares the device's return with CPU's;
`torchcts replay --export-script` writes a program's source into a torch-only script.
"""

from __future__ import annotations

import torch


def foreach_binary(input, other, op, alpha, inplace):
    """`torch._foreach_<op>(input, other[, alpha=])` or its in-place form; `other` is a tensor list,
    a Python scalar, a list of scalars or a 0-dim tensor: Python's binding picks the overload."""
    functions = {
        "add": (torch._foreach_add, torch._foreach_add_), "sub": (torch._foreach_sub, torch._foreach_sub_),
        "mul": (torch._foreach_mul, torch._foreach_mul_), "div": (torch._foreach_div, torch._foreach_div_),
        "maximum": (torch._foreach_maximum, torch._foreach_maximum_),
        "minimum": (torch._foreach_minimum, torch._foreach_minimum_),
        "clamp_min": (torch._foreach_clamp_min, torch._foreach_clamp_min_),
        "clamp_max": (torch._foreach_clamp_max, torch._foreach_clamp_max_),
        "pow": (torch._foreach_pow, torch._foreach_pow_),
    }
    function = functions[op][1 if inplace else 0]
    result = function(input, other) if alpha is None else function(input, other, alpha=alpha)
    return input if inplace else result


def foreach_pointwise(input, tensor1, tensor2, op, value, inplace):
    """`torch._foreach_addcmul/addcdiv(input, tensor1, tensor2, value)`: value None (the default 1),
    a scalar, a list of scalars, or ("tensor", [...]): a 1-d CPU tensor of scalars (the .Tensor overload)."""
    functions = {"addcmul": (torch._foreach_addcmul, torch._foreach_addcmul_),
                 "addcdiv": (torch._foreach_addcdiv, torch._foreach_addcdiv_)}
    function = functions[op][1 if inplace else 0]
    if value is None:
        result = function(input, tensor1, tensor2)
    elif isinstance(value, tuple):
        result = function(input, tensor1, tensor2, torch.tensor(value[1], dtype=torch.float64))
    else:
        result = function(input, tensor1, tensor2, value)
    return input if inplace else result


def foreach_unary(input, op, inplace):
    """`torch._foreach_<op>(input)` or `torch._foreach_<op>_(input)` for a unary op."""
    functions = {
        "abs": (torch._foreach_abs, torch._foreach_abs_), "neg": (torch._foreach_neg, torch._foreach_neg_),
        "sign": (torch._foreach_sign, torch._foreach_sign_), "ceil": (torch._foreach_ceil, torch._foreach_ceil_),
        "floor": (torch._foreach_floor, torch._foreach_floor_), "round": (torch._foreach_round, torch._foreach_round_),
        "trunc": (torch._foreach_trunc, torch._foreach_trunc_), "exp": (torch._foreach_exp, torch._foreach_exp_),
        "sqrt": (torch._foreach_sqrt, torch._foreach_sqrt_), "log": (torch._foreach_log, torch._foreach_log_),
        "sin": (torch._foreach_sin, torch._foreach_sin_), "cos": (torch._foreach_cos, torch._foreach_cos_),
        "tanh": (torch._foreach_tanh, torch._foreach_tanh_),
        "sigmoid": (torch._foreach_sigmoid, torch._foreach_sigmoid_),
        "reciprocal": (torch._foreach_reciprocal, torch._foreach_reciprocal_),
        "expm1": (torch._foreach_expm1, torch._foreach_expm1_), "log1p": (torch._foreach_log1p, torch._foreach_log1p_),
        "erf": (torch._foreach_erf, torch._foreach_erf_), "rsqrt": (torch._foreach_rsqrt, torch._foreach_rsqrt_),
        "frac": (torch._foreach_frac, torch._foreach_frac_), "atan": (torch._foreach_atan, torch._foreach_atan_),
    }
    function = functions[op][1 if inplace else 0]
    result = function(input)
    return input if inplace else result


def foreach_lerp(input, end, weight, inplace):
    """`torch._foreach_lerp(input, end, weight)`: weight a scalar, a list of scalars or a tensor list."""
    if inplace:
        torch._foreach_lerp_(input, end, weight)
        return input
    return torch._foreach_lerp(input, end, weight)


def foreach_norm(input, ord, dtype):
    """`torch._foreach_norm(input, ord[, dtype=])`: one 0-dim norm per tensor."""
    if dtype is None:
        return torch._foreach_norm(input, ord)
    return torch._foreach_norm(input, ord, dtype=dtype)


def foreach_zero(input):
    """`torch._foreach_zero_(input)`: every tensor of the list zeroed in place."""
    torch._foreach_zero_(input)
    return input


def foreach_copy(input, src, non_blocking):
    """`torch._foreach_copy_(input, src)`: each tensor takes its source's values (converting dtypes)."""
    torch._foreach_copy_(input, src, non_blocking=non_blocking)
    return input


def foreach_long_list(input, other, scalars, op):
    """One foreach op over a list long enough to span several multi-tensor launches."""
    if op == "add_list":
        return torch._foreach_add(input, other, alpha=2)
    if op == "add_list_inplace":
        torch._foreach_add_(input, other)
        return input
    if op == "mul_scalar_list":
        return torch._foreach_mul(input, scalars)
    if op == "addcmul_scalar_list":
        return torch._foreach_addcmul(input, other, other, scalars)
    if op == "exp":
        return torch._foreach_exp(input)
    return torch._foreach_norm(input)


PROGRAMS = {
    "binary_list": foreach_binary, "binary_scalar": foreach_binary, "binary_scalar_list": foreach_binary,
    "binary_tensor": foreach_binary, "mixed_dtypes": foreach_binary, "pointwise": foreach_pointwise,
    "unary": foreach_unary, "zero": foreach_zero, "copy": foreach_copy, "long_lists": foreach_long_list,
}
FLOATING_PROGRAMS = {"lerp": foreach_lerp, "norm": foreach_norm}
