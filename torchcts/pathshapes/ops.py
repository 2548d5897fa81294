"""The ops a path-shapes case may call: an explicit table from names to callables.

A case's `op` is looked up here and nowhere else (no `getattr` on strings from files, no eval). Each
entry names the callable and the tolerance category its results compare under (`engine.oracle`), so
a manifest's `tolerance_overrides` for `conv` or `matmul` apply. Composite entries (`rotary_embedding`)
are the few lines real models write around single ops, kept here so their shapes can be tested whole.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
import torch
import torch.nn.functional as F


@attrs.frozen
class OpSpec:
    """One allowed op: its callable and its tolerance category (see `engine.oracle.category`)."""

    name: str
    fn: Callable[..., Any]
    category: str
    constants: tuple[int | str, ...] = ()  # floating operands autograd cannot differentiate (positions, names)


def rotary_embedding(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding as GPT-NeoX / LLaMA apply it: x * cos + rotate_half(x) * sin."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


def swiglu(x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """The gated MLP activation of LLaMA-style blocks: silu(gate) * x."""
    return F.silu(gate) * x


def _table(*entries: tuple[Any, ...]) -> dict[str, OpSpec]:
    return {entry[0]: OpSpec(*entry) for entry in entries}


OPS: dict[str, OpSpec] = _table(
    ("conv1d", F.conv1d, "conv"),
    ("conv2d", F.conv2d, "conv"),
    ("conv_transpose2d", F.conv_transpose2d, "conv"),
    ("linear", F.linear, "matmul"),
    ("matmul", torch.matmul, "matmul"),
    ("bmm", torch.bmm, "matmul"),
    ("baddbmm", torch.baddbmm, "matmul"),
    ("addmm", torch.addmm, "matmul"),
    ("layer_norm", F.layer_norm, "norm"),
    ("group_norm", F.group_norm, "norm"),
    ("batch_norm", F.batch_norm, "norm", (1, 2, "running_mean", "running_var")),  # running statistics
    ("rms_norm", F.rms_norm, "norm"),
    ("softmax", F.softmax, "reduction"),
    ("log_softmax", F.log_softmax, "reduction"),
    ("mean", torch.mean, "reduction"),
    ("sum", torch.sum, "reduction"),
    ("cross_entropy", F.cross_entropy, "loss"),
    ("gelu", F.gelu, "elementwise"),
    ("silu", F.silu, "elementwise"),
    ("relu", F.relu, "elementwise"),
    ("relu6", F.relu6, "elementwise"),
    ("hardswish", F.hardswish, "elementwise"),
    ("sigmoid", torch.sigmoid, "elementwise"),
    ("tanh", torch.tanh, "elementwise"),
    ("add", torch.add, "elementwise"),
    ("mul", torch.mul, "elementwise"),
    ("cat", torch.cat, "elementwise"),
    ("rotary_embedding", rotary_embedding, "elementwise"),
    ("swiglu", swiglu, "elementwise"),
    ("scaled_dot_product_attention", F.scaled_dot_product_attention, "sdpa"),
    ("max_pool2d", F.max_pool2d, "elementwise"),
    ("avg_pool2d", F.avg_pool2d, "reduction"),
    ("adaptive_avg_pool2d", F.adaptive_avg_pool2d, "reduction"),
    ("interpolate", F.interpolate, "elementwise"),
    ("embedding", F.embedding, "elementwise"),
    ("embedding_bag", F.embedding_bag, "reduction"),
)

# Pointwise ops keep their input's memory format (TensorIterator): their output strides are compared too.
POINTWISE = frozenset({"add", "mul", "relu", "relu6", "gelu", "silu", "hardswish", "sigmoid", "tanh"})


def lookup(name: str) -> OpSpec | None:
    """The allowed op `name`, or None."""
    return OPS.get(name)
