"""Builders of hand-written calls with quantized tensors (`curated_calls.py` says how they are used).

A builder returns quantized tensors as torch makes them (`torch.quantize_per_tensor` of drawn
values, with a drawn dtype, scale and zero point); `curated_calls` turns each into its dequantized
values and quantizer parameters, so a case holds dense tensors and the call quantizes them again on
the device (`dispatch_calls.call_overload`, layout "quantized"): the device's own quantization is
part of what is tested, and dequantizing then quantizing with the same parameters gives the same
integers back. Quantized results compare as their integers and their dequantized values.
"""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import strategies as st

from torchcts.strategies.curated_builders import Builder, draw_shape, draw_size, draw_values, family_adder, functional, itself

QUANTIZED_DTYPES = (torch.quint8, torch.qint8, torch.qint32)
_INTEGERS = {torch.quint8: torch.uint8, torch.qint8: torch.int8, torch.qint32: torch.int32}
_ZERO_POINTS = {torch.quint8: (0, 255), torch.qint8: (-128, 127), torch.qint32: (-1000, 1000)}
_SCALES = (0.1, 0.05, 0.25, 1.0)  # shrinks toward 0.1: about 40 steps across the drawn values' range


def _qdtype(draw: Any, allowed: tuple[torch.dtype, ...] = QUANTIZED_DTYPES) -> torch.dtype:
    return draw(st.sampled_from(allowed), label="quantized dtype")


def _zero_point(draw: Any, qdtype: torch.dtype, label: str = "zero_point") -> int:
    low, high = _ZERO_POINTS[qdtype]
    return draw(st.integers(max(low, -20), min(high, 140)), label=label)  # values quantize inside the range too


def _float_values(draw: Any, shape: tuple[int, ...], label: str) -> torch.Tensor:
    """Drawn float32 values a few quantization steps wide, with a drawn spread (some clamp at small dtypes)."""
    spread = draw(st.sampled_from([1.0, 4.0, 20.0]), label=f"spread of {label}")
    return draw_values(draw, shape, torch.float32, label) * spread


def per_tensor(draw: Any, shape: tuple[int, ...], label: str,
               allowed: tuple[torch.dtype, ...] = QUANTIZED_DTYPES) -> torch.Tensor:
    """A per-tensor affine quantized tensor of `shape`: drawn values, dtype, scale and zero point."""
    qdtype = _qdtype(draw, allowed)
    return torch.quantize_per_tensor(_float_values(draw, shape, label), draw(st.sampled_from(_SCALES), label="scale"),
                                     _zero_point(draw, qdtype), qdtype)


def _channel_parameters(draw: Any, channels: int, qdtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    scales = torch.tensor([draw(st.sampled_from(_SCALES), label=f"scale {i}") for i in range(channels)],
                          dtype=torch.float64)
    zero_points = torch.tensor([_zero_point(draw, qdtype, f"zero_point {i}") for i in range(channels)])
    return scales, zero_points


def per_channel(draw: Any, shape: tuple[int, ...], label: str) -> torch.Tensor:
    """A per-channel affine quantized tensor of `shape` along a drawn axis."""
    qdtype = _qdtype(draw, (torch.quint8, torch.qint8))  # CPU quantizes per channel to 8 bits (and qint32)
    axis = draw(st.integers(0, len(shape) - 1), label="axis")
    scales, zero_points = _channel_parameters(draw, shape[axis], qdtype)
    return torch.quantize_per_channel(_float_values(draw, shape, label), scales, zero_points, axis, qdtype)


def quantize(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`quantize_per_tensor` in its forms: float values, a quantized dtype, scale and zero point as numbers,
    0-dim tensors (`tensor_qparams`) or one per tensor of a list (`tensors`)."""
    qdtype = _qdtype(draw)
    shape = draw_shape(draw, 2, "self")
    if target.startswith("tensors"):
        count = draw_size(draw, "tensors", 1, 3)
        tensors = [_float_values(draw, draw_shape(draw, 2, f"tensors[{i}]"), f"tensors[{i}]") for i in range(count)]
        scales = torch.tensor([draw(st.sampled_from(_SCALES), label=f"scale {i}") for i in range(count)])
        zero_points = torch.tensor([_zero_point(draw, qdtype, f"zero_point {i}") for i in range(count)])
        return {"tensors": tensors, "scales": scales, "zero_points": zero_points, "dtype": qdtype}
    scale, zero_point = draw(st.sampled_from(_SCALES), label="scale"), _zero_point(draw, qdtype)
    if target.startswith("tensor_qparams"):
        scale, zero_point = torch.tensor(scale, dtype=torch.float64), torch.tensor(zero_point)
    return {"self": _float_values(draw, shape, "self"), "scale": scale, "zero_point": zero_point, "dtype": qdtype}


def quantize_channels(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    shape = draw_shape(draw, 3, "self")
    qdtype = _qdtype(draw, (torch.quint8, torch.qint8))
    axis = draw(st.integers(0, 2), label="axis")
    scales, zero_points = _channel_parameters(draw, shape[axis], qdtype)
    return {"self": _float_values(draw, shape, "self"), "scales": scales, "zero_points": zero_points, "axis": axis,
            "dtype": qdtype}


def quantize_dynamic(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    return {"self": _float_values(draw, draw_shape(draw, 2, "self"), "self"),
            "dtype": _qdtype(draw, (torch.quint8, torch.qint8)),
            "reduce_range": draw(st.booleans(), label="reduce_range")}


def quantized_self(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`self` quantized per tensor (for the accessors of its parameters, or of both schemes where both apply)."""
    return {"self": per_tensor(draw, draw_shape(draw, 2, "self"), "self")}


def any_quantized_self(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    shape = draw_shape(draw, 2, "self")
    scheme = draw(st.sampled_from(["per_tensor", "per_channel"]), label="qscheme")
    return {"self": per_tensor(draw, shape, "self") if scheme == "per_tensor" else per_channel(draw, shape, "self")}


def channel_quantized_self(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    return {"self": per_channel(draw, draw_shape(draw, 3, "self"), "self")}


def dequantize_list(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    return {"tensors": [per_tensor(draw, draw_shape(draw, 2, f"tensors[{i}]"), f"tensors[{i}]")
                        for i in range(draw_size(draw, "tensors", 1, 3))]}


def make_quantized(per_channel_call: bool) -> Builder:
    """`_make_per_*_quantized_tensor`: integers of a quantized dtype's storage type and the parameters to read
    them with (per tensor, or per channel along a drawn axis)."""
    def build(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
        return _make_quantized_call(draw, per_channel_call)
    return build


def _make_quantized_call(draw: Any, per_channel_call: bool) -> dict[str, Any]:
    qdtype = _qdtype(draw, (torch.quint8, torch.qint8) if per_channel_call else QUANTIZED_DTYPES)
    shape = draw_shape(draw, 2, "self")
    low, high = _ZERO_POINTS[qdtype]
    seed = draw(st.integers(0, 2**16 - 1), label="seed of self")
    integers = torch.randint(max(low, -300), min(high, 300) + 1, shape, generator=torch.Generator().manual_seed(seed),
                             dtype=_INTEGERS[qdtype])
    if per_channel_call:
        axis = draw(st.integers(0, 1), label="axis")
        scale, zero_point = _channel_parameters(draw, shape[axis], qdtype)
        return {"self": integers, "scale": scale, "zero_point": zero_point, "axis": axis}
    return {"self": integers, "scale": draw(st.sampled_from(_SCALES), label="scale"),
            "zero_point": _zero_point(draw, qdtype)}


def empty_quantized(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """Uninitialized quantized tensors (compared in dtype and shape): a size and the quantizer to make them with."""
    qdtype = _qdtype(draw, (torch.quint8, torch.qint8))
    size = list(draw_shape(draw, 2, "size"))
    axis = draw(st.integers(0, 1), label="axis")
    scales, zero_points = _channel_parameters(draw, size[axis], qdtype)
    return {"size": size, "dtype": qdtype, "scale": draw(st.sampled_from(_SCALES), label="scale"),
            "zero_point": _zero_point(draw, qdtype), "scales": scales, "zero_points": zero_points, "axis": axis,
            "qtensor": per_tensor(draw, tuple(size), "qtensor", (qdtype,))}


def max_pool(rank: int) -> Builder:
    """`quantized_max_poolNd`: a quantized input [N, C, *spatial] (1-d: [C, L]) and a window that fits it."""
    def build(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
        kernel = [draw_size(draw, f"kernel {i}", 1, 3) for i in range(rank)]
        dilation = [draw_size(draw, f"dilation {i}", 1, 2) for i in range(rank)]
        padding = [draw(st.integers(0, k // 2), label=f"padding {i}") for i, k in enumerate(kernel)]
        spatial = [dilation[i] * (k - 1) + 1 + draw_size(draw, f"extra {i}", 0, 3) for i, k in enumerate(kernel)]
        leading = (draw_size(draw, "channels", 1, 3),) if rank == 1 else draw_shape(draw, 2, "batch, channels", high=2)
        return {"self": per_tensor(draw, (*leading, *spatial), "self", (torch.quint8, torch.qint8)),
                "kernel_size": kernel, "stride": [draw_size(draw, f"stride {i}", 1, 2) for i in range(rank)],
                "padding": padding, "dilation": dilation, "ceil_mode": draw(st.booleans(), label="ceil_mode")}
    return build


def batch_norm(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`quantized_batch_norm`: a quint8 input [N, C, H, W], float parameters, the output's scale and zero point."""
    shape = draw_shape(draw, 4, "input", high=3)
    channels = shape[1]
    return {"input": per_tensor(draw, shape, "input", (torch.quint8,)),
            "weight": draw_values(draw, (channels,), torch.float32, "weight"),
            "bias": draw_values(draw, (channels,), torch.float32, "bias"),
            "mean": draw_values(draw, (channels,), torch.float32, "mean"),
            "var": draw_values(draw, (channels,), torch.float32, "var", low=0.1), "eps": 1e-5,
            "output_scale": draw(st.sampled_from(_SCALES), label="output_scale"),
            "output_zero_point": _zero_point(draw, torch.quint8, "output_zero_point")}


def quantized_table() -> dict[str, tuple[Builder, str]]:
    """target overload -> (its builder, the overload the built call is for), for calls that make or take torch
    quantized tensors (the `native_quantization` capability)."""
    table: dict[str, tuple[Builder, str]] = {}
    family = family_adder(table)
    family(quantize, functional, "aten.quantize_per_tensor.default", "aten.quantize_per_tensor.out",
           "aten.quantize_per_tensor.tensor_qparams", "aten.quantize_per_tensor.tensor_qparams_out",
           "aten.quantize_per_tensor.tensors", "aten.quantize_per_tensor.tensors_out")
    family(quantize_channels, functional, "aten.quantize_per_channel.default", "aten.quantize_per_channel.out")
    family(quantize_dynamic, functional, "aten.quantize_per_tensor_dynamic.default",
           "aten.quantize_per_tensor_dynamic.out")
    family(dequantize_list, functional, "aten.dequantize.tensors", "aten.dequantize.tensors_out")
    family(any_quantized_self, functional, "aten.int_repr.default", "aten.int_repr.out")
    family(quantized_self, itself, "aten.q_scale.default", "aten.q_zero_point.default", "aten.qscheme.default")
    family(channel_quantized_self, functional, "aten.q_per_channel_axis.default", "aten.q_per_channel_scales.default",
           "aten.q_per_channel_scales.out", "aten.q_per_channel_zero_points.default",
           "aten.q_per_channel_zero_points.out")
    family(make_quantized(False), functional, "aten._make_per_tensor_quantized_tensor.default",
           "aten._make_per_tensor_quantized_tensor.out")
    family(make_quantized(True), functional, "aten._make_per_channel_quantized_tensor.default",
           "aten._make_per_channel_quantized_tensor.out")
    family(empty_quantized, functional, "aten._empty_affine_quantized.default", "aten._empty_affine_quantized.out",
           "aten._empty_per_channel_affine_quantized.default", "aten._empty_per_channel_affine_quantized.out",
           "aten.empty_quantized.default", "aten.empty_quantized.out")
    for rank in (1, 2, 3):
        family(max_pool(rank), functional, f"aten.quantized_max_pool{rank}d.default",
               f"aten.quantized_max_pool{rank}d.out")
    family(batch_norm, functional, "aten.quantized_batch_norm.default", "aten.quantized_batch_norm.out")
    return table
