"""The native quantization suite's programs (`torchcts.engine.programs`): torch only, exported verbatim into
reproduction scripts.

Each quantizes its inputs (or runs a `torch.ops.quantized` kernel with its prepack) and returns plain
observables of the quantized result, never the quantized tensor itself: `int_repr()`, `dequantize()`,
the qparams, `str(q.qscheme())` and `str(q.dtype)`. The suite (`torchcts.properties.suites.native_quantization`)
draws their cases and compares the device's observables with CPU's (`quantization_comparison`).
"""

from __future__ import annotations

import torch


def quantize_per_tensor(input, scale, zero_point, dtype, view):
    """`torch.quantize_per_tensor` of `input`, observed whole and through a view (`view`: none, t, step)."""
    q = torch.quantize_per_tensor(input, scale, zero_point, getattr(torch, dtype))
    v = q.transpose(0, -1) if view == "t" else q[..., ::2] if view == "step" else q
    return {"int_repr": q.int_repr(), "dequantize": q.dequantize(), "scale": q.q_scale(),
            "zero_point": q.q_zero_point(), "qscheme": str(q.qscheme()), "dtype": str(q.dtype),
            "view_int_repr": v.int_repr(), "view_dequantize": v.dequantize()}


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """`torch.quantize_per_channel` of `input` along `axis` (float64 scales, int64 zero points on the device)."""
    q = torch.quantize_per_channel(input, scales, zero_points, axis, getattr(torch, dtype))
    return {"int_repr": q.int_repr(), "dequantize": q.dequantize(), "scales": q.q_per_channel_scales(),
            "zero_points": q.q_per_channel_zero_points(), "axis": q.q_per_channel_axis(),
            "qscheme": str(q.qscheme()), "dtype": str(q.dtype)}


def to_host(input, scale, zero_point, axis, dtype, how):
    """Quantized on the device (per channel when `scale` is a tensor), then moved to the host by `how`."""
    if isinstance(scale, torch.Tensor):
        q = torch.quantize_per_channel(input, scale, zero_point, axis, getattr(torch, dtype))
    else:
        q = torch.quantize_per_tensor(input, scale, zero_point, getattr(torch, dtype))
    host = q.cpu() if how == "cpu" else q.to("cpu")
    seen = {"on_host": host.device.type == "cpu", "int_repr": host.int_repr(), "dequantize": host.dequantize(),
            "qscheme": str(host.qscheme()), "dtype": str(host.dtype)}
    if isinstance(scale, torch.Tensor):
        seen.update(scales=host.q_per_channel_scales(), zero_points=host.q_per_channel_zero_points(),
                    axis=host.q_per_channel_axis())
    else:
        seen.update(scale=host.q_scale(), zero_point=host.q_zero_point())
    return seen


def from_host(input, scale, zero_point, dtype):
    """Quantized on the host, moved to `input`'s device (read there) and back."""
    q = torch.quantize_per_tensor(input.cpu(), scale, zero_point, getattr(torch, dtype))
    there = q.to(input.device)
    back = there.to("cpu")
    return {"int_repr": there.int_repr(), "dequantize": there.dequantize(), "scale": there.q_scale(),
            "zero_point": there.q_zero_point(), "dtype": str(there.dtype), "back_int_repr": back.int_repr(),
            "back_scale": back.q_scale(), "back_zero_point": back.q_zero_point()}


def binary(input, other, qparams, out_scale, out_zero_point, dtype, op):
    """`quantized::add` or `quantized::mul` (`op`) of `input` and `other` quantized with `qparams` (scale, zero point
    of each)."""
    a = torch.quantize_per_tensor(input, qparams[0], qparams[1], getattr(torch, dtype))
    b = torch.quantize_per_tensor(other, qparams[2], qparams[3], getattr(torch, dtype))
    y = getattr(torch.ops.quantized, op)(a, b, out_scale, out_zero_point)
    return {"int_repr": y.int_repr(), "dequantize": y.dequantize(), "scale": y.q_scale(),
            "zero_point": y.q_zero_point(), "dtype": str(y.dtype)}


def linear(input, weight, bias, x_qparams, w_scale, out_scale, out_zero_point):
    """`quantized::linear` of quint8 `input` and qint8 `weight` (per channel when `w_scale` is a tensor)."""
    x = torch.quantize_per_tensor(input, x_qparams[0], x_qparams[1], torch.quint8)
    if isinstance(w_scale, torch.Tensor):
        w = torch.quantize_per_channel(weight, w_scale, torch.zeros_like(w_scale, dtype=torch.int64), 0, torch.qint8)
    else:
        w = torch.quantize_per_tensor(weight, w_scale, 0, torch.qint8)
    y = torch.ops.quantized.linear(x, torch.ops.quantized.linear_prepack(w, bias), out_scale, out_zero_point)
    return {"int_repr": y.int_repr(), "dequantize": y.dequantize(), "scale": y.q_scale(),
            "zero_point": y.q_zero_point(), "dtype": str(y.dtype)}


def conv2d(input, weight, bias, x_qparams, w_scale, out_qparams, geometry):
    """`quantized::conv2d` of quint8 `input`, qint8 `weight`; `geometry`: stride, padding, dilation, groups."""
    x = torch.quantize_per_tensor(input, x_qparams[0], x_qparams[1], torch.quint8)
    w = torch.quantize_per_tensor(weight, w_scale, 0, torch.qint8)
    stride, padding, dilation, groups = geometry
    packed = torch.ops.quantized.conv2d_prepack(w, bias, [stride, stride], [padding, padding],
                                                [dilation, dilation], groups)
    y = torch.ops.quantized.conv2d(x, packed, out_qparams[0], out_qparams[1])
    return {"int_repr": y.int_repr(), "dequantize": y.dequantize(), "scale": y.q_scale(),
            "zero_point": y.q_zero_point(), "dtype": str(y.dtype)}


PROGRAMS = {"quantize_per_tensor": quantize_per_tensor, "quantize_per_channel": quantize_per_channel,
            "to_host": to_host, "from_host": from_host, "add": binary, "mul": binary, "linear": linear,
            "conv2d": conv2d}
OPS = frozenset({"add", "mul", "linear", "conv2d"})  # requantizing ops: one step allowed whatever the scale
