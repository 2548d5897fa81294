"""Transforms of OpInfo sample tensors that change values or shapes, each aimed at a class of bugs.

Each returns a new CPU tensor and a note saying what changed. They are applied by
`opinfo_samples` under drawn choices; a transformed case the CPU rejects falls back, so a
transform never has to know the op.

- ties: the largest (or smallest, or any) element repeated next to itself (sorts, arg-max/min,
  unique, median; a sorted input stays sorted);
- broadcast: constant along one dimension and expanded there with stride 0 (broadcasting paths);
- resized: one dimension cut to length 0 (empty-tensor paths) or grown past a tile boundary by
  repeating each element in place (kernels that tile; order along the dimension is kept);
- raised: a tensor viewed as 4-d in channels_last memory format (memory-format paths of
  elementwise kernels).

Repeated values make some results unspecified or ill-conditioned (the index of a tied median, a
singular matrix, a normalisation by a zero spread): `repeats_are_safe` says where they are not.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from torchcts.strategies.layouts import is_overlapping
from torchcts.strategies.placement import copy_exact

# Ops whose result is unspecified, or numerically meaningless, when values repeat: selections
# returning an index of one of several equal values without a documented tie-break; linear
# algebra, where repeated rows make a singular matrix; normalisations and correlations that
# divide by a spread that repeats make zero. (sort and argsort with stable=True are specified.)
_REPEATS_UNSAFE = re.compile(
    r"(^|\.)(sort|argsort|topk|kthvalue|median|nanmedian|mode|cummax|cummin|unique|unique_consecutive|corrcoef)$"
    r"|max_pool|max_unpool|embedding_bag"
    r"|^(linalg\.|cholesky|lu|qr|svd|pinverse|inverse|det|logdet|slogdet|triangular_solve|geqrf|ormqr|"
    r"householder_product|lstsq|matrix_exp|pca_lowrank|norm\.nuc)|(^|\.)(cdist|pdist)$"
    r"|batch_norm|layer_norm|group_norm|instance_norm|rms_norm")
# Ops whose integer input must keep the sample's values: they size an allocation by value
# (bincount of INT_MAX asks for 16 GB) or need them sorted.
INTEGER_VALUES_KEPT = re.compile(r"bincount|one_hot|repeat_interleave|searchsorted|bucketize")


def repeats_are_safe(op_name: str, sample: Any) -> bool:
    """Whether ties, broadcast and repeat-grown inputs keep the op's result well defined."""
    if op_name.rsplit(".", 1)[-1] in ("sort", "argsort") and sample.kwargs.get("stable"):
        return True
    return not _REPEATS_UNSAFE.search(op_name)


def in_layout_of(like: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """`values` (same shape) laid out exactly as `like`: sizes, strides, storage offset.

    Value changes work on contiguous copies; this puts their result back into the case's layout,
    so a value change never undoes a re-layout drawn before it (a channels_last view stays one).
    A `like` whose elements overlap cannot hold distinct values: `values` is returned as it is.
    """
    if (values.stride(), values.storage_offset()) == (like.stride(), like.storage_offset()) or is_overlapping(like):
        return values
    out = copy_exact(like)
    with torch.no_grad():
        out.copy_(values)
    return out


def with_tie(t: torch.Tensor, choice: int) -> tuple[torch.Tensor, str]:
    """A contiguous copy of `t` where an element repeats next to itself along the last dimension.

    `choice` picks the element: the largest (ties at the maximum), the smallest, or any one.
    The copy goes to the neighbour within the same row, so a sorted row stays sorted.
    """
    if t.numel() < 2 or t.shape[-1] < 2:
        return t, ""
    out = t.contiguous().clone()
    flat = out.view(-1)
    which = choice % 3
    if which < 2 and t.dtype != torch.bool and not t.is_complex():
        ordered = flat.double() if t.is_floating_point() else flat.long()
        if t.is_floating_point():
            ordered = ordered.nan_to_num(nan=-float("inf") if which == 0 else float("inf"))
        source = int(ordered.argmax() if which == 0 else ordered.argmin())
        label = "largest" if which == 0 else "smallest"
    else:
        source = (choice // 3) % t.numel()
        label = "an"
    row_end = source % t.shape[-1] == t.shape[-1] - 1
    target = source - 1 if row_end else source + 1
    flat[target] = flat[source]
    return out, f"tie: {label} element {source} repeated at {target}"


def broadcast_along(t: torch.Tensor, dim_choice: int) -> tuple[torch.Tensor, str]:
    """`t` made constant along one dimension longer than 1 and expanded there (stride 0)."""
    dims = [d for d in range(t.dim()) if t.shape[d] > 1]
    if not dims:
        return t, ""
    dim = dims[dim_choice % len(dims)]
    return t.narrow(dim, 0, 1).expand(t.shape), f"broadcast along dim {dim} (stride 0)"


def resized(t: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    """A contiguous copy of `t` with dimension `dim` cut to 0 or grown to `size` by repeating each
    element in place (a, b -> a, a, b, b): values stay in range and in order along `dim`."""
    if size == 0:
        return t.narrow(dim, 0, 0).clone()
    old = t.shape[dim]
    index = torch.div(torch.arange(size) * old, size, rounding_mode="floor")
    return t.index_select(dim, index).contiguous()


def raised_to_4d(t: torch.Tensor) -> torch.Tensor:
    """`t` (0 to 3 dimensions) viewed as 4-d (1, *shape, 1...) and stored channels_last."""
    shape = (1, *t.shape, *([1] * (3 - t.dim())))
    return t.reshape(shape).contiguous(memory_format=torch.channels_last)
