"""Value-preserving re-layouts: the same values placed differently in memory.

A re-layout of tensor `t` is a tensor equal to `t` element for element (NaN where NaN, -0.0
where -0.0) whose storage differs: permuted dimension order (channels_last among them), steps
and gaps between elements, a non-zero storage offset, zero strides. The CPU oracle's answer on it
is therefore the answer on `t`; a backend that reads memory wrongly gives a different one.

Overlapping layouts (a stride of 0 on a dimension of size > 1, where `t` is constant along it)
alias several elements to one memory location: only for inputs an op reads, never writes.
Gaps are filled with a sentinel (NaN, or the dtype's maximum) so a kernel reading them shows it.
"""

from __future__ import annotations

import functools

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument



@functools.cache
def _storage_orders(ndim: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Dimension orders in memory (outermost first); shrinks toward the contiguous order."""
    identity = tuple(range(ndim))
    named = [identity]
    if ndim == 4:
        named.append((0, 2, 3, 1))  # channels_last
    if ndim == 5:
        named.append((0, 2, 3, 4, 1))  # channels_last_3d
    if ndim == 2:
        named.append((1, 0))  # transposed
    return st.one_of(st.sampled_from(named), st.permutations(identity).map(tuple)) if ndim > 1 else st.just(identity)


@functools.cache
def _per_dim(ndim: int, values: st.SearchStrategy) -> st.SearchStrategy[list]:
    return st.lists(values, min_size=ndim, max_size=ndim)


@functools.cache
def _zero_stride_masks(ndim: int) -> st.SearchStrategy[int]:
    return st.integers(0, 2**ndim - 1)


_STEP = st.integers(1, 3)
_OFFSET = st.integers(0, 7)
_FLAG = st.booleans()


def gap_sentinel(dtype: torch.dtype) -> object:
    """The value written into memory a view does not cover."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max


def _constant_along(t: torch.Tensor, dim: int) -> bool:
    """Whether every slice of `t` along `dim` is bit-identical to the first (NaN and -0.0 included)."""
    bits = t.contiguous().unsqueeze(-1).view(torch.uint8)  # (..., itemsize): compares bit patterns
    return bool((bits == bits.narrow(dim, 0, 1)).all())


def strided_view(t: torch.Tensor, order: tuple[int, ...], steps: tuple[int, ...], offset: int,
                 zero_stride_dims: tuple[int, ...] = ()) -> torch.Tensor:
    """A copy of `t` laid out with the given storage order, per-dimension steps and storage offset.

    `zero_stride_dims` get stride 0; each must have size 1, or `t` must be constant along it.
    """
    shape = tuple(t.shape)
    stored_shape = [1 if d in zero_stride_dims else shape[d] for d in range(t.dim())]
    physical = [max(stored_shape[d], 1) * steps[d] for d in order]
    numel = 1
    for side in physical:
        numel *= side
    storage = torch.full((offset + numel,), gap_sentinel(t.dtype), dtype=t.dtype)
    base = storage.as_strided(tuple(physical), _contiguous_strides(physical), offset)
    view = base[tuple(slice(0, max(stored_shape[d], 1) * steps[d], steps[d]) for d in order)]
    view = view.permute(_inverse(order))
    view = view[tuple(slice(0, stored_shape[d]) for d in range(t.dim()))]
    source = t
    for d in zero_stride_dims:
        source = source.narrow(d, 0, min(1, shape[d]))
    view.copy_(source)
    strides = [0 if d in zero_stride_dims else view.stride(d) for d in range(t.dim())]
    return view.as_strided(shape, strides, view.storage_offset())


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for side in reversed(shape):
        strides.append(step)
        step *= max(side, 1)
    return tuple(reversed(strides))


def _inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(order)
    for position, dim in enumerate(order):
        inverse[dim] = position
    return tuple(inverse)


def draw_relayout(draw, t: torch.Tensor, allow_overlap: bool = True) -> torch.Tensor:
    """`relayouts` as a plain function of `draw`, for other strategies to call cheaply."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    order = draw(_storage_orders(t.dim()), label="storage order")
    steps = (1,) * t.dim()
    if t.dim() and draw(_FLAG, label="gaps between elements"):
        steps = tuple(draw(_per_dim(t.dim(), _STEP), label="steps"))
    offset = draw(_OFFSET, label="storage offset")
    mask = draw(_zero_stride_masks(t.dim()), label="zero-stride dims (bit mask)")
    zero_stride_dims = tuple(d for d in range(t.dim()) if mask >> d & 1 and (
        t.shape[d] == 1 or (allow_overlap and t.shape[d] > 1 and t.numel() and _constant_along(t, d))))
    return strided_view(t, order, steps, offset, zero_stride_dims)


def relayouts(t: torch.Tensor, *, allow_overlap: bool = True) -> st.SearchStrategy[torch.Tensor]:
    """Tensors equal to `t` in another memory layout; shrinks toward a contiguous copy of `t`.

    Draws a storage order (channels_last and transposes among them), maybe a step of 1 to 3 per
    dimension, a storage offset of 0 to 7, and zero strides: on size-1 dimensions always allowed,
    on larger ones only with `allow_overlap` and where `t` is constant along the dimension.
    """
    if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.is_nested:
        raise InvalidArgument(f"relayouts needs a dense strided tensor, got {type(t).__name__} "
                              f"{getattr(t, 'layout', '')}")
    return st.composite(lambda draw: draw_relayout(draw, t, allow_overlap))()


def is_overlapping(t: torch.Tensor) -> bool:
    """Whether two elements of `t` share a memory location (writes through `t` would collide)."""
    if any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride())):
        return True
    verdict = torch._debug_has_internal_overlap(t)  # 0: no, 1: yes, 2: too hard to tell cheaply
    if verdict != 2:
        return verdict == 1
    span = t.storage_offset() + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride())) + 1
    positions = torch.arange(span).as_strided(t.shape, t.stride(), t.storage_offset())
    return positions.unique().numel() < t.numel()


def describe_layout(t: torch.Tensor) -> str:
    """'contiguous' or e.g. 'strides (1, 3), offset 2, channels_last' for reports."""
    if t.layout != torch.strided:
        return str(t.layout).removeprefix("torch.")
    if t.is_contiguous() and t.storage_offset() == 0:
        return "contiguous"
    parts = [f"strides {tuple(t.stride())}"]
    if t.storage_offset():
        parts.append(f"offset {t.storage_offset()}")
    if t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last):
        parts.append("channels_last")
    if t.dim() == 5 and t.is_contiguous(memory_format=torch.channels_last_3d):
        parts.append("channels_last_3d")
    if is_overlapping(t):
        parts.append("overlapping")
    return ", ".join(parts)
