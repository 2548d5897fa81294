"""Transforms of one tensor of an OpInfo sample that change its values or shape, for classes of bugs.

Each returns a new CPU tensor and a note saying what changed. They are applied by
`opinfo_samples` under drawn flags; a transformed case the CPU rejects falls back to the sample
as given, so a transform never has to know the op.

- ties: one element's value copied to another position (sorts, arg-max/min, unique, median);
- broadcast: constant along one dimension and expanded there with stride 0 (broadcasting paths);
- emptied: one dimension cut to length 0 (empty-tensor paths);
- grown: the last dimension repeated out to a tile-boundary length (kernels that tile).
"""

from __future__ import annotations

import torch

from torchcts.strategies.shapes import TILE_BOUNDARY_SIZES


def with_tie(t: torch.Tensor, source: int, target: int) -> tuple[torch.Tensor, str]:
    """A contiguous copy of `t` where the element at flat `target` repeats the one at flat `source`."""
    if t.numel() < 2:
        return t, ""
    source, target = source % t.numel(), target % t.numel()
    if source == target:
        target = (target + 1) % t.numel()
    out = t.contiguous().clone()
    flat = out.view(-1)
    flat[target] = flat[source]
    return out, f"tie: element {target} repeats element {source}"


def broadcast_along(t: torch.Tensor, dim_choice: int) -> tuple[torch.Tensor, str]:
    """`t` made constant along one dimension longer than 1 and expanded there (stride 0)."""
    dims = [d for d in range(t.dim()) if t.shape[d] > 1]
    if not dims:
        return t, ""
    dim = dims[dim_choice % len(dims)]
    return t.narrow(dim, 0, 1).expand(t.shape), f"broadcast along dim {dim} (stride 0)"


def emptied(t: torch.Tensor, dim_choice: int) -> tuple[torch.Tensor, str]:
    """`t` with one dimension cut to length 0."""
    if t.dim() == 0:
        return t, ""
    dim = dim_choice % t.dim()
    return t.narrow(dim, 0, 0).clone(), f"dim {dim} cut to length 0"


def grown(t: torch.Tensor, size_choice: int, max_numel: int) -> tuple[torch.Tensor, str]:
    """`t` with its last dimension repeated out to a tile-boundary length that fits `max_numel`."""
    if t.dim() == 0 or t.shape[-1] == 0:
        return t, ""
    rest = t.numel() // t.shape[-1]
    sizes = [s for s in TILE_BOUNDARY_SIZES if s > t.shape[-1] and s * rest <= max_numel]
    if not sizes:
        return t, ""
    size = sizes[size_choice % len(sizes)]
    reps = -(-size // t.shape[-1])
    out = t.repeat(*([1] * (t.dim() - 1)), reps).narrow(-1, 0, size).contiguous()
    return out, f"last dim grown to {size}"
