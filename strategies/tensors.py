"""Dense CPU tensors for any dtype: a shape, values with special values mixed in, a memory layout.

The plain case (the shrink target) is a small contiguous tensor of small integer-valued numbers.
Every other layout holds the same kind of values, so a failure that needs a non-contiguous input
shrinks to a small non-contiguous tensor, and one that needs a NaN shrinks to a single NaN.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.strategies.layouts import draw_relayout
from torchcts.strategies.shapes import DEFAULT_MAX_NUMEL, Shape, shapes
from torchcts.strategies.values import draw_values


def _check_dtype(dtype: object) -> None:
    if not isinstance(dtype, torch.dtype):
        raise InvalidArgument(f"dtype must be a torch.dtype, got {dtype!r}")
    if dtype.is_signed is None or str(dtype).startswith(("torch.q", "torch.bits")):  # pragma: no cover
        raise InvalidArgument(f"cannot generate values for {dtype}")


def tensors(dtype: torch.dtype, shape: Shape | st.SearchStrategy[Shape] | None = None, *, min_dims: int = 0,
            max_dims: int = 4, max_side: int = 5, allow_empty: bool = True, special_values: bool = True,
            relayout: bool = True, allow_overlap: bool = True, tile_sizes: bool = False,
            max_numel: int = DEFAULT_MAX_NUMEL) -> st.SearchStrategy[torch.Tensor]:
    """CPU tensors of `dtype`.

    `shape` fixes the shape (a tuple) or draws it (a strategy); otherwise `shapes(...)` draws one
    from the size arguments. `special_values` mixes NaN, ±inf, -0.0, subnormals, extremes and
    rounding ties into floating tensors (integer extremes into integer ones). `relayout` draws a
    memory layout (permuted, stepped, offset, zero strides); `allow_overlap` also allows layouts
    where elements share memory (stride 0 on a larger dimension, sliding windows), which only
    inputs an op never writes may have.

    Shrinks toward a contiguous tensor of `min_dims` size-1 dimensions holding small integers.
    """
    _check_dtype(dtype)
    if shape is None:
        shape_strategy = shapes(min_dims=min_dims, max_dims=max_dims, max_side=max_side, allow_empty=allow_empty,
                                tile_sizes=tile_sizes, max_numel=max_numel)
    elif isinstance(shape, st.SearchStrategy):
        shape_strategy = shape
    else:
        shape_strategy = st.just(tuple(shape))

    @st.composite
    def draw_tensor(draw) -> torch.Tensor:
        size = draw(shape_strategy, label="shape")
        t = draw_values(draw, size, dtype, special_values)
        if relayout:
            t = draw_relayout(draw, t, allow_overlap)
        # Decided last, so the ordinary tensor stays the shortest draw sequence (the shrink target).
        windowed = relayout and allow_overlap and len(size) >= 2 and all(size[-2:])
        if draw(_WINDOW, label="sliding window") == 7 and windowed:
            return _sliding_window(draw, size, dtype, special_values)
        return t

    return draw_tensor()


_WINDOW = st.integers(0, 7)


def _sliding_window(draw, size: Shape, dtype: torch.dtype, special_values: bool) -> torch.Tensor:
    """An overlapping view: element [..., i, j] is storage [..., i + j] (strides 1 and 1)."""
    rows, cols = size[-2:]
    storage = draw_values(draw, (*size[:-2], rows + cols - 1), dtype, special_values)
    return storage.as_strided(size, (*storage.stride()[:-1], 1, 1))
