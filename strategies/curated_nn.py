"""Builders of hand-written calls for neural-network kernels: normalization, attention, convolution.

Each keeps the shape rules its CPU kernel trusts or checks (a weight that fits its input, saved
statistics from a real forward, heads that divide the embedding); `curated_calls.py` says how the
calls are used.
"""

from __future__ import annotations

from typing import Any

import torch
from hypothesis import strategies as st

from torchcts.strategies.curated_builders import Builder, draw_shape, draw_size, draw_values


def weight_norm(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    rows, cols = draw_shape(draw, 2, "v")
    v, g = draw_values(draw, (rows, cols), dtype, "v"), draw_values(draw, (rows, 1), dtype, "g", low=0.1)
    _, norms = torch.ops.aten._weight_norm_interface.default(v, g, 0)
    return {"v": v, "g": g, "dim": 0, "grad_w": draw_values(draw, (rows, cols), dtype, "grad_w"), "saved_v": v,
            "saved_g": g, "saved_norms": norms}


def batch_norm_no_update(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    batch, channels, length = draw_shape(draw, 3, "input")
    return {"input": draw_values(draw, (batch, channels, length), dtype, "input"),
            "weight": draw_values(draw, (channels,), dtype, "weight"), "bias": draw_values(draw, (channels,), dtype, "bias"),
            "running_mean": draw_values(draw, (channels,), dtype, "running_mean"),
            "running_var": draw_values(draw, (channels,), dtype, "running_var", low=0.1), "momentum": 0.1, "eps": 1e-5}


def transform_bias_rescale_qkv(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    batch, tokens, heads = draw_shape(draw, 3, "qkv", high=3)
    width = 3 * heads * draw_size(draw, "head size", 1, 3)
    return {"qkv": draw_values(draw, (batch, tokens, width), dtype, "qkv"),
            "qkv_bias": draw_values(draw, (width,), dtype, "qkv_bias"), "num_heads": heads}


def glu(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    rows, half = draw_shape(draw, 2, "x")
    dim = draw(st.sampled_from([0, 1, -1]), label="dim")
    shape = (2 * rows, half) if dim == 0 else (rows, 2 * half)
    x = draw_values(draw, shape, dtype, "x")
    glu = torch.nn.functional.glu(x, dim)
    grad_glu = draw_values(draw, tuple(glu.shape), dtype, "grad_glu")
    return {"glu": glu, "x": x, "dx": draw_values(draw, shape, dtype, "dx"), "dim": dim, "grad_glu": grad_glu,
            "grad_x": torch.ops.aten.glu_backward.default(grad_glu, x, dim),
            "dgrad_glu": draw_values(draw, tuple(glu.shape), dtype, "dgrad_glu")}


def _convolution_shapes(draw: Any, spatial: int, transposed: bool) -> dict[str, Any]:
    """Input, weight, stride, padding and dilation of a valid convolution with `spatial` spatial dimensions
    (a transposed one unpadded, so that its output is never empty)."""
    kernel = list(draw_shape(draw, spatial, "kernel", high=3))
    dilation = [draw_size(draw, f"dilation {i}", 1, 2) for i in range(spatial)]
    padding = [0 if transposed else draw_size(draw, f"padding {i}", 0, 1) for i in range(spatial)]
    stride = [draw_size(draw, f"stride {i}", 1, 2) for i in range(spatial)]
    reach = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    size = [max(r - 2 * p, 1) + draw_size(draw, f"input extent {i}", 0, 2) for i, (r, p) in enumerate(zip(reach, padding))]
    return {"batch": draw_size(draw, "batch", 1, 2), "channels": draw_size(draw, "channels", 1, 3),
            "out_channels": draw_size(draw, "out channels", 1, 3), "kernel": kernel, "dilation": dilation,
            "padding": padding, "stride": stride, "size": size}


def convolution(spatial: int, transposed: bool = False, backward: bool = False) -> Builder:
    def build(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
        c = _convolution_shapes(draw, spatial, transposed)
        weight_shape = [c["channels"], c["out_channels"]] if transposed else [c["out_channels"], c["channels"]]
        x = draw_values(draw, (c["batch"], c["channels"], *c["size"]), dtype, "input")
        weight = draw_values(draw, (*weight_shape, *c["kernel"]), dtype, "weight")
        bias = draw_values(draw, (c["out_channels"],), dtype, "bias") if draw(st.booleans(), label="bias") else None
        output_padding = [draw(st.integers(0, max(s, d) - 1), label=f"output padding {i}")
                          for i, (s, d) in enumerate(zip(c["stride"], c["dilation"]))]
        call = {"self": x, "input": x, "weight": weight, "kernel_size": c["kernel"], "bias": bias,
                "stride": c["stride"], "padding": c["padding"], "dilation": c["dilation"],
                "output_padding": output_padding if transposed else [0] * spatial, "transposed": transposed,
                "groups": 1, "benchmark": False, "deterministic": False, "cudnn_enabled": False, "allow_tf32": False}
        if backward:  # _slow_conv2d_backward: no dilation; the gradient of its forward's output
            call["dilation"] = [1] * spatial
            out = torch.ops.aten._slow_conv2d_forward.default(x, weight, c["kernel"], None, c["stride"], c["padding"])
            call |= {"grad_output": draw_values(draw, tuple(out.shape), dtype, "grad_output"),
                     "output_mask": [True] * 3}  # out= overloads write all three gradients
        return call
    return build


def conv_tbc(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    kernel, pad = draw_size(draw, "kernel", 1, 3), draw_size(draw, "pad", 0, 1)
    time = max(kernel - 2 * pad, 1) + draw_size(draw, "time extent", 0, 2)
    batch, channels, out_channels = draw_shape(draw, 3, "batch, channels, out channels", high=3)
    return {"self": draw_values(draw, (time, batch, channels), dtype, "self"),
            "weight": draw_values(draw, (kernel, channels, out_channels), dtype, "weight"),
            "bias": draw_values(draw, (out_channels,), dtype, "bias"), "pad": pad}


def batch_norm_backward(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    batch, channels, length = draw_shape(draw, 3, "input")
    train = draw(st.booleans(), label="train")
    x = draw_values(draw, (batch, channels, length), dtype, "input")
    weight = draw_values(draw, (channels,), dtype, "weight")
    mean, var = draw_values(draw, (channels,), dtype, "running_mean"), draw_values(draw, (channels,), dtype, "running_var", 0.1)
    _, save_mean, save_invstd = torch.ops.aten.native_batch_norm.default(x, weight, None, mean.clone(), var.clone(),
                                                                         train, 0.1, 1e-5)
    return {"grad_out": draw_values(draw, (batch, channels, length), dtype, "grad_out"), "input": x, "weight": weight,
            "running_mean": mean, "running_var": var, "save_mean": save_mean, "save_invstd": save_invstd,
            "train": train, "eps": 1e-5, "output_mask": [True] * 3}  # out= overloads write all three


def embedding_bag_backward(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """The saved tensors of an `_embedding_bag` forward (sum, mean or max of bags), and a gradient of its output."""
    weights, width = draw_shape(draw, 2, "weight")
    indices = draw_values(draw, (draw_size(draw, "indices", 1, 6),), torch.int64, "indices", low=0).remainder(weights)
    offsets = torch.tensor(sorted({0} | set(draw(st.lists(st.integers(0, len(indices) - 1), max_size=3),
                                                 label="offsets"))))  # no empty bag: max mode indexes each
    mode = draw(st.integers(0, 2), label="mode")
    weight = draw_values(draw, (weights, width), dtype, "weight")
    output, offset2bag, bag_size, maximum = torch.ops.aten._embedding_bag.default(weight, indices, offsets, False, mode)
    if offset2bag.numel() != indices.numel():  # CPU's fast sum path leaves it empty: each index's bag
        offset2bag = torch.bucketize(torch.arange(indices.numel()), offsets, right=True) - 1
    return {"grad": draw_values(draw, tuple(output.shape), dtype, "grad"), "indices": indices, "offset2bag": offset2bag,
            "bag_size": bag_size, "maximum_indices": maximum, "num_weights": weights,
            "scale_grad_by_freq": draw(st.booleans(), label="scale_grad_by_freq") if mode != 2 else False,
            "mode": mode, "per_sample_weights": None}


def multi_head_attention(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """Self-attention of [batch, tokens, embed] with `num_head` heads dividing `embed_dim`, in-projection weights
    [3 * embed, embed]."""
    batch, tokens, heads = draw_shape(draw, 3, "batch, tokens, heads", high=3)
    embed = heads * draw_size(draw, "head size", 1, 3)
    x = draw_values(draw, (batch, tokens, embed), dtype, "query")
    return {"query": x, "key": x, "value": x, "embed_dim": embed, "num_head": heads,
            "qkv_weight": draw_values(draw, (3 * embed, embed), dtype, "qkv_weight"),
            "qkv_bias": draw_values(draw, (3 * embed,), dtype, "qkv_bias"),
            "proj_weight": draw_values(draw, (embed, embed), dtype, "proj_weight"),
            "proj_bias": draw_values(draw, (embed,), dtype, "proj_bias"),
            "need_weights": draw(st.booleans(), label="need_weights"),
            "average_attn_weights": draw(st.booleans(), label="average_attn_weights")}
