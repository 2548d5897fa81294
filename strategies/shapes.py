"""Tensor shapes: scalars, empty and size-1 dimensions, broadcastable sets, tile-boundary sizes.

Sizes shrink toward 1 (not 0): the plain case is a small non-empty tensor; empty dimensions are
drawn on purpose, about one draw in ten. Tile-boundary sizes (31/32/33, 1023/1024/1025, ...) are
drawn only when the caller allows them and the element budget holds them.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

Shape = tuple[int, ...]

# Sizes just below, at and above common kernel tile and vector widths.
TILE_BOUNDARY_SIZES: tuple[int, ...] = (31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 4095, 4096, 4097, 65537)

DEFAULT_MAX_NUMEL = 2**17


def _check(min_dims: int, max_dims: int, max_side: int, max_numel: int) -> None:
    if not 0 <= min_dims <= max_dims:
        raise InvalidArgument(f"need 0 <= min_dims <= max_dims, got min_dims={min_dims}, max_dims={max_dims}")
    if max_side < 1:
        raise InvalidArgument(f"max_side must be at least 1, got {max_side}")
    if max_numel < 1:
        raise InvalidArgument(f"max_numel must be at least 1, got {max_numel}")


_SIDE_KIND = st.integers(0, 9)  # 0..7: ordinary, 8: tile boundary, 9: empty; shrinks toward ordinary


def shapes(*, min_dims: int = 0, max_dims: int = 4, max_side: int = 5, allow_empty: bool = True,
           tile_sizes: bool = False, max_numel: int = DEFAULT_MAX_NUMEL) -> st.SearchStrategy[Shape]:
    """Shapes with `min_dims`..`max_dims` dimensions; shrinks toward `min_dims` dimensions of size 1.

    About one dimension in ten is empty (with `allow_empty`); with `tile_sizes`, about one in ten
    takes a size from `TILE_BOUNDARY_SIZES`, only where the element count stays within
    `max_numel`. Sizes that do not fit are never drawn, so nothing is filtered.
    """
    _check(min_dims, max_dims, max_side, max_numel)
    ndims = st.integers(min_dims, max_dims)
    sides = st.integers(1, max_side)
    tiles = tuple(s for s in TILE_BOUNDARY_SIZES if s <= max_numel) if tile_sizes else ()
    tile_choice = st.sampled_from(tiles) if tiles else None

    @st.composite
    def draw_shape(draw) -> Shape:
        shape: list[int] = []
        filled = 1  # product of the non-empty sides so far
        for _ in range(draw(ndims, label="ndim")):
            # The ordinary size is always drawn first, so the plain case is also the shortest
            # draw sequence, which is what Hypothesis shrinks toward.
            side = min(draw(sides, label="side"), max(1, max_numel // filled))
            kind = draw(_SIDE_KIND, label="side kind")
            if kind == 9 and allow_empty:
                side = 0
            elif kind == 8 and tile_choice is not None:
                tile = draw(tile_choice, label="tile size")
                side = tile if tile * filled <= max_numel else side
            shape.append(side)
            filled *= max(side, 1)
        return tuple(shape)

    return draw_shape()


TILE_SIZES_LEVEL = 5  # semantic level from which tile-boundary sizes are drawn


def shapes_for(manifest: Any = None, level: int = 1, dtype: torch.dtype = torch.float32, *, min_dims: int = 0,
               max_dims: int = 4, max_side: int = 5) -> st.SearchStrategy[Shape]:
    """`shapes` sized by what the run allows: tile-boundary sizes from semantic level 5 on, and an
    element budget from the manifest's `resource_limits.max_tensor_size_mb` (default 2**17 elements)."""
    max_numel = DEFAULT_MAX_NUMEL
    limit = manifest.resource_limits.max_tensor_size_mb if manifest is not None else None
    if limit is not None:
        max_numel = max(1, int(limit * 2**20) // dtype.itemsize)
    return shapes(min_dims=min_dims, max_dims=max_dims, max_side=max_side, tile_sizes=level >= TILE_SIZES_LEVEL,
                  max_numel=max_numel)


def broadcastable_shapes(shape: Shape) -> st.SearchStrategy[Shape]:
    """Shapes that broadcast to `shape`: leading dimensions maybe dropped, others equal or 1.

    Shrinks toward `shape` itself.
    """
    ndim = len(shape)

    @st.composite
    def draw_shape(draw) -> Shape:
        dropped = draw(st.integers(0, ndim), label="dropped leading dims") if ndim else 0
        kept = shape[dropped:]
        ones = draw(st.lists(st.booleans(), min_size=len(kept), max_size=len(kept)), label="size-1 dims")
        return tuple(1 if one else side for side, one in zip(kept, ones))

    return draw_shape()


@st.composite
def mutually_broadcastable_shapes(draw, num_shapes: int, *, min_dims: int = 0, max_dims: int = 4,
                                  max_side: int = 5, allow_empty: bool = True) -> tuple[tuple[Shape, ...], Shape]:
    """`num_shapes` shapes that broadcast together, and the shape they broadcast to.

    Shrinks toward every shape equal to the result shape.
    """
    if num_shapes < 1:
        raise InvalidArgument(f"num_shapes must be at least 1, got {num_shapes}")
    result = draw(shapes(min_dims=min_dims, max_dims=max_dims, max_side=max_side, allow_empty=allow_empty),
                  label="broadcast result")
    inputs = tuple(draw(broadcastable_shapes(result), label=f"shape {i}") for i in range(num_shapes))
    return inputs, _broadcast(inputs)


def _broadcast(shapes_: tuple[Shape, ...]) -> Shape:
    ndim = max(len(s) for s in shapes_)
    result = []
    for axis in range(ndim):
        sides = {s[len(s) - ndim + axis] for s in shapes_ if len(s) - ndim + axis >= 0}
        sides.discard(1)
        result.append(sides.pop() if sides else 1)
    return tuple(result)
