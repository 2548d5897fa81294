"""Packed quantized containers of a format (`torchcts.containers`): codes, scale, zero point, byte layout.

`containers(name)` draws a `Container` of format `name`: a logical shape, how the scale groups the
elements (one scale for the tensor, one per row of dimension 0, or one per block of the last
dimension; the MX formats' blocks of 32 and NVFP4's 16 are fixed), every element's code (every code
the format has, NaN and infinity codes included), a scale tensor in a dtype the format allows (float32,
float16 or bfloat16; E8M0 or E4M3 scale bytes as uint8 or as torch's float8 dtype), a zero point where
the format has one (int32, or the element's own width), and the packed bytes, contiguous or in one of
`PACKED_LAYOUTS` (`relaid_packed`): a window of a larger buffer, every other byte, padded rows,
column-major rows. Bytes around a view hold 0xA5 so a copy that reads past a view shows.

Shrinking goes to a one-dimensional tensor of one scale group, code 0 everywhere, scale 1 (E8M0 127),
zero point 0, contiguous bytes.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.cases.bounds import Bound, Ints, Lists, OneOf, Tensors
from torchcts.containers import FORMATS, Container, ContainerFormat, pack_codes

PACKED_LAYOUTS = ("contiguous", "window", "interleaved", "padded_rows", "column_major")
GROUPINGS = ("tensor", "channel", "block")
FLOAT_SCALE_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_BYTE_SCALE_DTYPES = {"e8m0": (torch.uint8, torch.float8_e8m0fnu), "e4m3": (torch.uint8, torch.float8_e4m3fn)}
_FILL = 0xA5  # the bytes around a packed view
MAX_ROWS, MAX_BLOCKS = 3, 2  # `containers`' defaults: leading sides, blocks of a fixed-block format a row
LEADING_DIMS = 2  # at most this many leading sides
LAST_SIDE = Ints(1, 9)  # the last side of a format without a fixed block


def containers(name: str, *, layouts: Sequence[str] = ("contiguous",), max_rows: int = MAX_ROWS,
               max_blocks: int = MAX_BLOCKS) -> st.SearchStrategy[Container]:
    """Containers of format `name` whose packed bytes take one of `layouts` (PACKED_LAYOUTS)."""
    if name not in FORMATS:
        raise InvalidArgument(f"containers(name={name!r}): not a container format; known: {', '.join(FORMATS)}")
    bad = [layout for layout in layouts if layout not in PACKED_LAYOUTS]
    if not layouts or bad:
        raise InvalidArgument(f"containers(layouts={list(layouts)!r}): each one of {', '.join(PACKED_LAYOUTS)}")
    for arg, value in (("max_rows", max_rows), ("max_blocks", max_blocks)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgument(f"containers({arg}={value!r}): a positive integer")
    spec = FORMATS[name]
    layouts = tuple(layouts)

    @st.composite
    def draw(draw_: Any) -> Container:
        shape, groups = _draw_shape(draw_, spec, max_rows, max_blocks)
        count = 1
        for side in shape:
            count *= side
        codes = draw_(st.lists(st.sampled_from(spec.codes), min_size=count, max_size=count), label="codes")
        scale = _draw_scale(draw_, spec, groups)
        zero_point = _draw_zero_point(draw_, spec, groups) if spec.zero_point else None
        packed = pack_codes(codes, spec.bits, spec.msb_first)
        layout = draw_(st.sampled_from(layouts), label="packed layout")
        return Container(name, relaid_packed(draw_, packed, layout), scale, zero_point, shape)

    return draw()


def _draw_shape(draw: Any, spec: ContainerFormat, max_rows: int, max_blocks: int) -> tuple[tuple[int, ...], tuple]:
    """A shape and the scale tensor's shape (its number of groups splits the elements into equal runs)."""
    rows = draw(st.lists(st.integers(1, max_rows), max_size=LEADING_DIMS), label="leading sides")
    if spec.block is not None:
        grouping, block = "block", spec.block
        last = block * draw(st.integers(1, max_blocks), label="blocks per row")
    else:
        last = draw(LAST_SIDE.strategy(), label="last side")
        grouping = draw(st.sampled_from(GROUPINGS if rows else ("tensor", "block")), label="scale grouping")
        divisors = [d for d in range(1, last + 1) if last % d == 0]
        block = draw(st.sampled_from(divisors[::-1]), label="block size") if grouping == "block" else last
    shape = (*rows, last)
    if grouping == "tensor":
        return shape, ()
    if grouping == "channel":
        return shape, (shape[0],)
    return shape, (*rows, last // block)


def _draw_scale(draw: Any, spec: ContainerFormat, groups: tuple[int, ...]) -> torch.Tensor:
    count = 1
    for side in groups:
        count *= side
    if spec.scale == "float":
        dtype = draw(st.sampled_from(FLOAT_SCALE_DTYPES), label="scale dtype")
        magnitude = st.one_of(st.sampled_from((1.0, 0.5, 2.0, 0.0625, 3.0, 0.1)),
                              st.floats(2.0 ** -14, 2.0 ** 14, allow_subnormal=False))
        values = draw(st.lists(magnitude, min_size=count, max_size=count), label="scales")
        return torch.tensor(values, dtype=torch.float32).to(dtype).reshape(groups)
    if spec.scale == "e8m0":  # 2**(b - 127); 255 is NaN
        byte = st.one_of(st.integers(112, 142), st.sampled_from((127, 254, 255)))
    else:  # E4M3 bytes of positive numbers (0x7F is NaN)
        byte = st.integers(0x08, 0x7E)
    values = draw(st.lists(byte, min_size=count, max_size=count), label="scale bytes")
    dtype = draw(st.sampled_from(_BYTE_SCALE_DTYPES[spec.scale]), label="scale dtype")
    return torch.tensor(values, dtype=torch.uint8).view(dtype).reshape(groups)


def _draw_zero_point(draw: Any, spec: ContainerFormat, groups: tuple[int, ...]) -> torch.Tensor:
    low, high = spec.zero_point_range
    count = 1
    for side in groups:
        count *= side
    values = draw(st.lists(st.integers(low, high), min_size=count, max_size=count), label="zero points")
    own = torch.int8 if low < 0 else torch.uint8
    dtype = draw(st.sampled_from((torch.int32, own)), label="zero point dtype")
    return torch.tensor(values, dtype=dtype).reshape(groups)


def relaid_packed(draw: Any, packed: torch.Tensor, layout: str) -> torch.Tensor:
    """A view with the bytes of 1-D `packed` in logical order (its `reshape(-1)`), laid out as `layout`."""
    n = packed.numel()
    if layout == "contiguous" or n == 0:
        return packed
    offset = draw(st.integers(1, 7), label="offset into the buffer")
    if layout == "window":
        buffer = torch.full((offset + n + draw(st.integers(0, 5), label="bytes after"),), _FILL, dtype=torch.uint8)
        buffer[offset:offset + n] = packed
        return buffer[offset:offset + n]
    if layout == "interleaved":
        buffer = torch.full((offset + 2 * n,), _FILL, dtype=torch.uint8)
        view = buffer[offset::2][:n]
        view.copy_(packed)
        return view
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    rows = draw(st.sampled_from(divisors), label="rows")
    width = n // rows
    if layout == "padded_rows":
        pitch = width + draw(st.integers(1, 3), label="row padding")
        buffer = torch.full((offset + rows * pitch,), _FILL, dtype=torch.uint8)
        view = buffer[offset:].as_strided((rows, width), (pitch, 1), offset)
        view.copy_(packed.view(rows, width))
        return view
    buffer = torch.full((offset + n,), _FILL, dtype=torch.uint8)  # column_major: rows x width, stored by columns
    view = buffer.as_strided((rows, width), (1, rows), offset)
    view.copy_(packed.view(rows, width))
    return view


# -- bounds of a stored container (`cases.bounds`) ----------------------------------------------------------------

def container_bounds(name: str, *, max_rows: int = MAX_ROWS, max_blocks: int = MAX_BLOCKS) -> dict[str, Bound]:
    """The bounds of a container of format `name` as a case stores it (what `containers` draws): its packed bytes,
    scale, zero point (None where the format has none) and shape; `container_fits` ties them together."""
    spec = FORMATS[name]
    last = spec.block * max_blocks if spec.block is not None else LAST_SIDE.high
    elements = max_rows ** LEADING_DIMS * last
    groups = Tensors(elements, LEADING_DIMS + 1)  # one scale (and zero point) a group, at most one an element
    return {"packed": Tensors(spec.packed_bytes(elements), 2), "scale": groups,
            "zero_point": groups if spec.zero_point else OneOf((None,)),
            "shape": Lists(Ints(1, max(max_rows, last)), 1, LEADING_DIMS + 1)}


def container_fits(name: str, packed: Any, scale: Any, zero_point: Any, shape: Sequence[int]) -> bool:
    """Whether stored parts make one container of format `name`: uint8 bytes that hold exactly the shape's codes,
    scale groups that split its elements evenly (a fixed block's worth each), a zero point of the scale's shape where
    the format has one. A decoder sizes its work by the shape: this ties the shape to the stored bytes."""
    spec = FORMATS[name]
    count = 1
    for side in shape:
        count *= side
    groups = scale.numel()
    if packed.dtype != torch.uint8 or packed.numel() != spec.packed_bytes(count) or groups == 0 or count % groups:
        return False
    if spec.block is not None and count // groups != spec.block:
        return False
    if not spec.zero_point:
        return zero_point is None
    return isinstance(zero_point, torch.Tensor) and zero_point.shape == scale.shape
