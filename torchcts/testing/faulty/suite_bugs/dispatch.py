"""Seeded bugs for the dispatch property (properties/suites/dispatch.py): kernels of overloads no OpInfo reaches.

Each acts on one overload the property generates cases for and no OpInfo property calls by name, under
a condition of its arguments, so only generated calls can catch it: a functional copy that loses an
element of strided inputs and an `out=` backward kernel that ignores its argument (schema draws), a
fused optimizer that ignores `maximize`, a dilated convolution that drops its bias and a quantization that
reads a zero point given as a tensor as 0 (curated calls). Arguments are
read by name (a generated call passes later arguments by keyword once it leaves one at its default).
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug, argument as _argument


# -- lift_fresh_copy_strided_tail: a copy of a non-contiguous input drops its last element -----------------------------

def _strided_input(func, args, kwargs) -> bool:
    t = _argument(func, args, kwargs, "self")
    return isinstance(t, torch.Tensor) and t.numel() > 1 and not t.is_contiguous()


def _zero_last(func, args, kwargs, result):
    flat = result.reshape(-1).clone()
    flat[-1] = flat[-1].logical_not() if flat.dtype == torch.bool else flat[-1] + 1
    return flat.reshape(result.shape)


# -- hardshrink_backward_default_lambd: the out= kernel shrinks with lambd=0.5 whatever it is given ---------------------

def _lambd_given(func, args, kwargs) -> bool:
    lambd = _argument(func, args, kwargs, "lambd", 0.5)
    return isinstance(lambd, (int, float)) and float(lambd) != 0.5


def _default_lambd(func, args, kwargs, result):
    grad_input = _argument(func, args, kwargs, "grad_input")
    torch.ops.aten.hardshrink_backward.grad_input(_argument(func, args, kwargs, "grad_out"),
                                                  _argument(func, args, kwargs, "self"), 0.5, grad_input=grad_input)
    return result


# -- fused_adam_ignores_maximize: the functional fused Adam descends where it was asked to ascend ----------------------

def _maximize(func, args, kwargs) -> bool:
    return bool(_argument(func, args, kwargs, "maximize", False))


def _minimized(func, args, kwargs, result):
    kwargs = dict(kwargs)
    position = next(i for i, arg in enumerate(func._schema.arguments) if arg.name == "maximize")
    if position < len(args):
        args = args[:position] + (False,) + args[position + 1:]
    else:
        kwargs["maximize"] = False
    return func(*args, **kwargs)


# -- slow_conv_dilated2d_drops_bias: the dilated convolution forgets the bias it is given ------------------------------

def _bias_given(func, args, kwargs) -> bool:
    return isinstance(_argument(func, args, kwargs, "bias"), torch.Tensor)


def _without_bias(func, args, kwargs, result):
    return result - _argument(func, args, kwargs, "bias").reshape(1, -1, 1, 1)


# -- quantize_tensor_qparams_drops_zero_point: quantizing with tensor parameters ignores the zero point -------------

def _zero_point_tensor_given(func, args, kwargs) -> bool:
    zero_point = _argument(func, args, kwargs, "zero_point")
    return isinstance(zero_point, torch.Tensor) and zero_point.numel() == 1 and int(zero_point) != 0


def _zero_point_dropped(func, args, kwargs, result):
    return torch.quantize_per_tensor(_argument(func, args, kwargs, "self"),
                                     float(_argument(func, args, kwargs, "scale")), 0, result.dtype)


BUGS = (
    Bug("lift_fresh_copy_strided_tail", ("aten.lift_fresh_copy.default",),
        "the input is non-contiguous (transposed, stepped, offset) with more than one element",
        "returns a copy whose last element is one more (negated for bool)",
        _strided_input, _zero_last, suite="dispatch"),
    Bug("hardshrink_backward_default_lambd", ("aten.hardshrink_backward.grad_input",),
        "the out= form is called with lambd other than 0.5",
        "computes the gradient with lambd=0.5 whatever lambd is given, writing it into grad_input",
        _lambd_given, _default_lambd, suite="dispatch"),
    Bug("fused_adam_ignores_maximize", ("aten._fused_adam.default",),
        "the functional fused Adam is called with maximize=True",
        "updates as if maximize were False (descends instead of ascending)",
        _maximize, _minimized, suite="dispatch"),
    Bug("slow_conv_dilated2d_drops_bias", ("aten.slow_conv_dilated2d.default",),
        "a bias is given",
        "returns the convolution without the bias added",
        _bias_given, _without_bias, suite="dispatch"),
    Bug("quantize_tensor_qparams_drops_zero_point", ("aten.quantize_per_tensor.tensor_qparams",),
        "the zero point is given as a nonzero 1-element tensor",
        "quantizes with zero point 0 (integers shifted by the zero point, dequantized values too)",
        _zero_point_tensor_given, _zero_point_dropped, suite="dispatch"),
)
