"""Seeded bugs the native quantization suite (`properties/suites/native_quantization.py`) must catch.

Each imitates what a backend's quantized kernels got wrong: rounding ties away from zero (the
hardware's `round` instead of C's `nearbyint`), a per-channel kernel that only handles axis 0's
zero points, `int_repr` copying a non-contiguous tensor's storage as it lies, an add that wraps
around where it must saturate, a linear that leaves the output zero point out, a grouped conv that
forgets the bias, and a transfer that keeps per-channel scales as float32. The device runs CPU's
kernels: each bug sees the CPU arguments and result (quantized CPU tensors) and rebuilds the
result with `torch._make_per_tensor_quantized_tensor` / `_make_per_channel_quantized_tensor`.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug, argument

_RANGES = {torch.quint8: (0, 255), torch.qint8: (-128, 127), torch.qint32: (-2**31, 2**31 - 1)}


def _rebuilt(like: torch.Tensor, ints: torch.Tensor) -> torch.Tensor:
    """A quantized tensor holding `ints` with `like`'s quantization parameters."""
    ints = ints.to(like.int_repr().dtype)
    if like.qscheme() in (torch.per_channel_affine, torch.per_channel_affine_float_qparams):
        return torch._make_per_channel_quantized_tensor(ints, like.q_per_channel_scales(),
                                                        like.q_per_channel_zero_points(), like.q_per_channel_axis())
    return torch._make_per_tensor_quantized_tensor(ints, like.q_scale(), like.q_zero_point())


# -- quantize_per_tensor: ties away from zero ------------------------------------------------------

def _ties_to_break(func, args, kwargs) -> torch.Tensor:
    """Where `x / scale` lies exactly halfway between two steps whose lower one (in magnitude) is even, and the
    result is not saturated: there half-away-from-zero and half-to-even disagree."""
    x, scale = args[0], argument(func, args, kwargs, "scale")
    zero_point, dtype = argument(func, args, kwargs, "zero_point"), argument(func, args, kwargs, "dtype")
    v = x.to(torch.float64) / scale
    low, high = _RANGES.get(dtype, (0, -1))
    magnitude = v.abs()
    tie = (magnitude - magnitude.floor() == 0.5) & (magnitude.floor() % 2 == 0)
    away = torch.sign(v) * (magnitude.floor() + 1) + zero_point
    return tie & (away >= low) & (away <= high)


def _ties_fire(func, args, kwargs) -> bool:
    return args[0].is_floating_point() and bool(_ties_to_break(func, args, kwargs).any())


def _ties_away(func, args, kwargs, result):
    where = _ties_to_break(func, args, kwargs)
    step = torch.sign(args[0].to(torch.float64)).to(torch.int64)
    return _rebuilt(result, result.int_repr().to(torch.int64) + torch.where(where, step, 0))


# -- quantize_per_channel: axis 0's zero point everywhere -------------------------------------------

def _channel_zero_points_fire(func, args, kwargs) -> bool:
    zero_points = argument(func, args, kwargs, "zero_points")
    return argument(func, args, kwargs, "axis") != 0 and bool((zero_points != zero_points[0]).any())


def _first_zero_point(func, args, kwargs, result):
    scales, zero_points = argument(func, args, kwargs, "scales"), argument(func, args, kwargs, "zero_points")
    axis, dtype = argument(func, args, kwargs, "axis"), argument(func, args, kwargs, "dtype")
    wrong = func(args[0], scales, torch.full_like(zero_points, int(zero_points[0])), axis, dtype)
    return _rebuilt(result, wrong.int_repr())


# -- int_repr: storage order -----------------------------------------------------------------------

def _non_contiguous_fire(func, args, kwargs) -> bool:
    q = args[0]
    return q.is_quantized and q.numel() > 1 and not q.is_contiguous()


def _storage_order(func, args, kwargs, result):
    q = args[0]
    return q.as_strided((q.numel(),), (1,), q.storage_offset()).int_repr().reshape(q.shape)


# -- quantized::add: wraps around ------------------------------------------------------------------

def _unclamped_sum(func, args, kwargs) -> torch.Tensor:
    a, b = args[0], args[1]
    scale, zero_point = argument(func, args, kwargs, "scale"), argument(func, args, kwargs, "zero_point")
    total = a.dequantize().to(torch.float64) + b.dequantize().to(torch.float64)
    return torch.round(total / scale) + zero_point


def _add_overflow_fire(func, args, kwargs) -> bool:
    if args[0].dtype != torch.quint8:
        return False
    unclamped = _unclamped_sum(func, args, kwargs)
    return bool(((unclamped < 0) | (unclamped > 255)).any())


def _wrapped(func, args, kwargs, result):
    unclamped = _unclamped_sum(func, args, kwargs)
    out = (unclamped < 0) | (unclamped > 255)
    ints = torch.where(out, torch.remainder(unclamped, 256).to(torch.int64), result.int_repr().to(torch.int64))
    return _rebuilt(result, ints)


# -- quantized::linear: output zero point left out -------------------------------------------------

def _output_zero_point_fire(func, args, kwargs) -> bool:
    return argument(func, args, kwargs, "Y_zero_point_i") != 0


def _without_zero_point(func, args, kwargs, result):
    low, high = _RANGES[result.dtype]
    ints = result.int_repr().to(torch.int64) - result.q_zero_point()
    return _rebuilt(result, ints.clamp(low, high))


# -- quantized::conv2d: grouped convolution without its bias ---------------------------------------

def _grouped_bias_fire(func, args, kwargs) -> bool:
    packed = args[1]
    if torch.ops.quantized.conv2d_groups(packed) <= 1:
        return False
    bias = packed.unpack()[1]
    return bias is not None and bool((bias != 0).any())


def _without_bias(func, args, kwargs, result):
    packed = args[1]
    weight = packed.unpack()[0]
    q = torch.ops.quantized
    repacked = q.conv2d_prepack(weight, None, q.conv2d_stride(packed), q.conv2d_padding(packed),
                                q.conv2d_dilation(packed), q.conv2d_groups(packed))
    return func(args[0], repacked, *args[2:], **kwargs)


# -- _to_copy to the host: per-channel scales as float32 -------------------------------------------

def _channel_scales_to_host_fire(func, args, kwargs) -> bool:
    q, device = args[0], kwargs.get("device")
    if not (q.is_quantized and q.qscheme() == torch.per_channel_affine and device is not None
            and torch.device(device).type == "cpu"):
        return False
    scales = q.q_per_channel_scales()
    return bool((scales.to(torch.float32).to(torch.float64) != scales).any())


def _float32_scales(func, args, kwargs, result):
    return torch._make_per_channel_quantized_tensor(result.int_repr(), result.q_per_channel_scales().float().double(),
                                                    result.q_per_channel_zero_points(), result.q_per_channel_axis())


BUGS = (
    Bug("quantize_ties_away", ("aten.quantize_per_tensor.default",),
        "x / scale lies exactly halfway between two steps, the lower (in magnitude) even, and does not saturate",
        "rounds the tie away from zero instead of to even: one step too far", _ties_fire, _ties_away,
        suite="native_quantization"),
    Bug("per_channel_zero_point_axis", ("aten.quantize_per_channel.default",),
        "quantize_per_channel along an axis other than 0, with zero points that differ between channels",
        "quantizes every channel with channel 0's zero point (the parameters still name each channel's)",
        _channel_zero_points_fire, _first_zero_point, suite="native_quantization"),
    Bug("int_repr_storage_order", ("aten.int_repr.default",),
        "int_repr of a non-contiguous quantized tensor of more than one element",
        "copies numel integers from the tensor's storage offset in memory order, ignoring its strides",
        _non_contiguous_fire, _storage_order, suite="native_quantization"),
    Bug("add_wraps_quint8", ("quantized.add.default",),
        "quantized::add of quint8 tensors whose requantized sum leaves 0..255",
        "wraps the out-of-range values modulo 256 instead of saturating", _add_overflow_fire, _wrapped,
        suite="native_quantization"),
    Bug("linear_drops_output_zero_point", ("quantized.linear.default",),
        "quantized::linear with an output zero point other than 0",
        "writes the output without adding its zero point (clamped), the tensor still naming it",
        _output_zero_point_fire, _without_zero_point, suite="native_quantization"),
    Bug("conv2d_grouped_drops_bias", ("quantized.conv2d.new",),
        "quantized::conv2d with groups > 1 and a non-zero bias packed with the weight",
        "computes the grouped convolution without the bias", _grouped_bias_fire, _without_bias,
        suite="native_quantization"),
    Bug("to_host_float32_channel_scales", ("aten._to_copy.default",),
        "a per-channel quantized tensor moved to the host, a scale of it not a float32 number",
        "the host copy's scales are rounded to float32", _channel_scales_to_host_fire, _float32_scales,
        suite="native_quantization"),
)
