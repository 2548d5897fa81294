"""Case strategies of the channels_last suite: images in channels-last storage and module parameters.

Every strategy here returns `((input, args, kwargs), notes)`: the program's arguments (CPU tensors
and plain values) and a description of what was drawn. Sizes are built valid (a kernel never
larger than its padded input, channels divisible by groups) rather than filtered. Everything
shrinks toward the simplest case that still fails: batch 1, few channels, small spatial sides,
a dense channels_last input (the first layout), no bias, groups 1, small integer values.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import Ints, Lists, OneOf
from torchcts.strategies.layouts import strided_view
from torchcts.strategies.values import Fill, apply_special_picks, fill_tensor, special_picks

# Input storage: dense channels-last (the subject and shrink target), a channels-last view with gaps
# between elements and a storage offset (a slice of a larger channels-last tensor), plain contiguous.
INPUT_LAYOUTS = ("channels_last", "channels_last view", "contiguous")
WEIGHT_LAYOUTS = ("contiguous", "channels_last")
_ORDINARY_FILLS = st.sampled_from((Fill.SMALL_INTEGERS, Fill.NORMAL, Fill.UNIT))  # no overflowing magnitudes
_SEEDS = st.integers(0, 2**16)
BATCH = Ints(1, 3)
_BATCH = BATCH.strategy()
# A few channels (the shrink target), or counts around a vector width (7, 8, 9, 16, 17): NHWC kernels
# vectorize over C, and their tails are where they break.
FEW_CHANNELS, VECTOR_CHANNELS = Ints(1, 4), (7, 8, 9, 16, 17)
CHANNELS = st.one_of(FEW_CHANNELS.strategy(), st.sampled_from(VECTOR_CHANNELS))
IN_PER_GROUP_FEW, IN_PER_GROUP_WIDE = Ints(1, 2), (8, 9)
_IN_PER_GROUP = st.one_of(IN_PER_GROUP_FEW.strategy(), st.sampled_from(IN_PER_GROUP_WIDE))
EXTRA_SIDE = Ints(0, 4)
_EXTRA_SIDE = EXTRA_SIDE.strategy()
# module hyperparameters: each drawn per spatial dimension within these
CONV_GROUPS, OUT_PER_GROUP = Ints(1, 3), Ints(1, 2)
KERNEL, CONV_STRIDE, CONV_PADDING, DILATION = Ints(1, 3), Ints(1, 2), Ints(0, 1), Ints(1, 2)
POOL_STRIDE, POOL_PADDING = Ints(1, 3), Ints(0, KERNEL.high // 2)  # padding at most half the kernel
DIVISOR = Ints(1, 3)
ADAPTIVE_SIZE, UPSAMPLE_SIZE = Ints(1, 4), Ints(1, 8)
NORM_GROUPS, PER_NORM_GROUP = Ints(1, 2), Ints(1, 2)
NORMALIZED_DIMS = Ints(1, 3)
MOMENTA, EPS = (0.1, 0.5), 1e-5
CHAIN_LENGTH = Ints(1, 4)
_STEP = st.integers(1, 2)
_OFFSET = st.integers(0, 3)

# Scenarios whose kernels accumulate (their tolerance widens below 32 bits; see the suite module).
WIDENED_BELOW_32_BITS = frozenset({
    "conv1d", "conv2d", "conv3d", "conv_transpose2d", "conv_transpose3d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "batch_norm2d", "batch_norm3d", "group_norm", "layer_norm",
    "upsample_bilinear", "upsample_bicubic", "upsample_trilinear"})

CHAIN_STEPS = ("add", "relu", "mul", "sigmoid", "sub", "where", "tanh", "silu", "hardswish", "gelu", "clamp",
               "add_", "relu_")


def channels_last_order(ndim: int) -> tuple[int, ...]:
    """Storage order, outermost first, of channels-last memory: N, the spatial dimensions, then C."""
    return (0, *range(2, ndim), 1)


def _per_dim(draw, count: int, bound: Ints, label: str) -> tuple[int, ...]:
    return tuple(draw(bound.strategy(), label=f"{label}[{d}]") for d in range(count))


def _values(draw, shape: tuple[int, ...], dtype: torch.dtype, special: bool = False) -> tuple[torch.Tensor, str]:
    """Contiguous ordinary values (no magnitudes that overflow a sum), maybe up to 2 special values."""
    t = fill_tensor(shape, dtype, draw(_ORDINARY_FILLS, label="fill"), draw(_SEEDS, label="seed"))
    if not special:
        return t, ""
    return apply_special_picks(t, draw(special_picks(2), label="special values"))


def stored(draw, t: torch.Tensor, layout: str) -> tuple[torch.Tensor, str]:
    """`t` in the named storage layout, and a note saying which (steps and offset for a view)."""
    if layout == "contiguous" or t.dim() < 3:
        return t.contiguous(), "contiguous"
    order = channels_last_order(t.dim())
    if layout == "channels_last":
        return strided_view(t, order, (1,) * t.dim(), 0), "channels_last"
    steps = _per_dim(draw, t.dim(), Ints(1, 2), "step")
    offset = draw(_OFFSET, label="storage offset")
    return strided_view(t, order, steps, offset), f"channels_last view (steps {steps}, offset {offset})"


@st.composite
def images(draw, dtype: torch.dtype, channels: int, min_sides: tuple[int, ...], special: bool = False,
           layouts: tuple[str, ...] = INPUT_LAYOUTS) -> tuple[torch.Tensor, str]:
    """(N, C, *spatial) CPU tensors: batch 1-3, each side `min_sides[i]` plus 0-4, stored in a drawn layout."""
    shape = (draw(_BATCH, label="batch"), channels, *(low + draw(_EXTRA_SIDE, label="side") for low in min_sides))
    t, specials = _values(draw, shape, dtype, special)
    t, how = stored(draw, t, draw(st.sampled_from(layouts), label="input layout"))
    return t, f"input {shape} {how}" + (f" with {specials}" if specials else "")


def _weight(draw, shape: tuple[int, ...], dtype: torch.dtype, name: str = "weight") -> tuple[torch.Tensor, str]:
    t, _ = _values(draw, shape, dtype)
    t, how = stored(draw, t, draw(st.sampled_from(WEIGHT_LAYOUTS), label=f"{name} layout"))
    return t, f"{name} {shape} {how}"


def _optional(draw, shape: tuple[int, ...], dtype: torch.dtype, name: str) -> tuple[torch.Tensor | None, str]:
    if not draw(st.booleans(), label=f"with {name}"):
        return None, f"no {name}"
    return _values(draw, shape, dtype)[0], f"{name} {shape}"


# -- convolution ---------------------------------------------------------------------------------

def conv_min_side(kernel: int, stride: int, padding: int, dilation: int, output_padding: int | None) -> int:
    """The smallest input side giving an output side of at least 1."""
    if output_padding is None:
        return max(1, dilation * (kernel - 1) + 1 - 2 * padding)
    shortfall = 2 * padding - dilation * (kernel - 1) - output_padding  # (side - 1) * stride must cover it
    return 1 + max(0, math.ceil(shortfall / stride))


def conv_cases(spatial: int, transposed: bool) -> Callable[[torch.dtype], st.SearchStrategy]:
    @st.composite
    def draw_case(draw, dtype):
        groups = draw(CONV_GROUPS.strategy(), label="groups")
        c_in = groups * draw(_IN_PER_GROUP, label="in per group")
        c_out = groups * draw(OUT_PER_GROUP.strategy(), label="out per group")
        kernel = _per_dim(draw, spatial, KERNEL, "kernel")
        stride = _per_dim(draw, spatial, CONV_STRIDE, "stride")
        padding = _per_dim(draw, spatial, CONV_PADDING, "padding")
        dilation = _per_dim(draw, spatial, DILATION, "dilation")
        output_padding = tuple(draw(st.integers(0, max(s, d) - 1), label="output padding")
                               for s, d in zip(stride, dilation)) if transposed else (None,) * spatial
        sides = tuple(conv_min_side(*p) for p in zip(kernel, stride, padding, dilation, output_padding))
        input, note = draw(images(dtype, c_in, sides))
        shape = (c_in, c_out // groups, *kernel) if transposed else (c_out, c_in // groups, *kernel)
        weight, weight_note = _weight(draw, shape, dtype)
        bias, bias_note = _optional(draw, (c_out,), dtype, "bias")
        if transposed:
            args = (weight, bias, stride, padding, output_padding, groups, dilation)
            hyper = f"stride {stride}, padding {padding}, output_padding {output_padding}, groups {groups}, " \
                    f"dilation {dilation}"
        else:
            args = (weight, bias, stride, padding, dilation, groups)
            hyper = f"stride {stride}, padding {padding}, dilation {dilation}, groups {groups}"
        return (input, args, {}), (note, weight_note, bias_note, hyper)

    return draw_case


# -- pooling -------------------------------------------------------------------------------------

def max_pool_cases(spatial: int) -> Callable[[torch.dtype], st.SearchStrategy]:
    @st.composite
    def draw_case(draw, dtype):
        kernel = _per_dim(draw, spatial, KERNEL, "kernel")
        stride = _per_dim(draw, spatial, POOL_STRIDE, "stride")
        padding = tuple(draw(st.integers(0, k // 2), label="padding") for k in kernel)
        dilation = _per_dim(draw, spatial, DILATION, "dilation")
        ceil_mode = draw(st.booleans(), label="ceil_mode")
        sides = tuple(conv_min_side(k, s, p, d, None) for k, s, p, d in zip(kernel, stride, padding, dilation))
        input, note = draw(images(dtype, draw(CHANNELS, label="channels"), sides, special=True))
        return (input, (kernel, stride, padding, dilation, ceil_mode), {}), (
            note, f"kernel {kernel}, stride {stride}, padding {padding}, dilation {dilation}, ceil_mode {ceil_mode}")

    return draw_case


def avg_pool_cases(spatial: int) -> Callable[[torch.dtype], st.SearchStrategy]:
    @st.composite
    def draw_case(draw, dtype):
        kernel = _per_dim(draw, spatial, KERNEL, "kernel")
        stride = _per_dim(draw, spatial, POOL_STRIDE, "stride")
        padding = tuple(draw(st.integers(0, k // 2), label="padding") for k in kernel)
        ceil_mode, count_include_pad = draw(st.booleans(), label="ceil_mode"), draw(st.booleans(), label="pad counts")
        divisor = draw(st.one_of(st.none(), DIVISOR.strategy()), label="divisor_override")
        sides = kernel  # avg_pool3d wants the unpadded input at least as large as the kernel
        input, note = draw(images(dtype, draw(CHANNELS, label="channels"), sides))
        return (input, (kernel, stride, padding, ceil_mode, count_include_pad, divisor), {}), (
            note, f"kernel {kernel}, stride {stride}, padding {padding}, ceil_mode {ceil_mode}, "
                  f"count_include_pad {count_include_pad}, divisor_override {divisor}")

    return draw_case


def adaptive_pool_cases(spatial: int, special: bool) -> Callable[[torch.dtype], st.SearchStrategy]:
    @st.composite
    def draw_case(draw, dtype):
        output_size = _per_dim(draw, spatial, ADAPTIVE_SIZE, "output size")
        input, note = draw(images(dtype, draw(CHANNELS, label="channels"), (1,) * spatial, special=special))
        return (input, (output_size,), {}), (note, f"output_size {output_size}")

    return draw_case


# -- normalization -------------------------------------------------------------------------------

def batch_norm_cases(spatial: int) -> Callable[[torch.dtype], st.SearchStrategy]:
    @st.composite
    def draw_case(draw, dtype):
        channels = draw(CHANNELS, label="channels")
        training = draw(st.booleans(), label="training")
        sides = (1,) * (spatial - 1) + (2 if training else 1,)  # training needs more than one value per channel
        input, note = draw(images(dtype, channels, sides))
        mean = _values(draw, (channels,), dtype)[0]
        var = _values(draw, (channels,), dtype)[0].abs() + 1
        weight, weight_note = _optional(draw, (channels,), dtype, "weight")
        bias, bias_note = _optional(draw, (channels,), dtype, "bias")
        momentum = draw(st.sampled_from(MOMENTA), label="momentum")
        return (input, (mean, var, weight, bias, training, momentum, EPS), {}), (
            note, weight_note, bias_note, f"training {training}, momentum {momentum}")

    return draw_case


@st.composite
def group_norm_cases(draw, dtype):
    groups = draw(NORM_GROUPS.strategy(), label="groups")
    channels = groups * draw(PER_NORM_GROUP.strategy(), label="channels per group")
    spatial = draw(st.sampled_from((2, 3)), label="spatial dimensions")
    input, note = draw(images(dtype, channels, (1,) * (spatial - 1) + (2,)))  # more than 1 value per group
    affine = draw(st.booleans(), label="affine")
    weight = _values(draw, (channels,), dtype)[0] if affine else None
    bias = _values(draw, (channels,), dtype)[0] if affine else None
    return (input, (groups, weight, bias, EPS), {}), (note, f"num_groups {groups}, affine {affine}")


@st.composite
def layer_norm_cases(draw, dtype):
    spatial = draw(st.sampled_from((2, 3)), label="spatial dimensions")
    input, note = draw(images(dtype, draw(CHANNELS, label="channels"), (1,) * spatial))
    normalized = tuple(input.shape[-draw(NORMALIZED_DIMS.strategy(), label="normalized dimensions"):])
    affine = draw(st.booleans(), label="affine")
    weight = _values(draw, normalized, dtype)[0] if affine else None
    bias = _values(draw, normalized, dtype)[0] if affine else None
    return (input, (normalized, weight, bias, EPS), {}), (note, f"normalized_shape {normalized}, affine {affine}")


# -- interpolation -------------------------------------------------------------------------------

SCALES = (2.0, 1.5, 3.0, 0.5)
NEAREST_MODES = ("nearest", "nearest-exact")


def _resize(draw, spatial: int) -> tuple[tuple[int, ...] | None, float | None, int]:
    """(size, scale_factor, smallest input side): one of an output size or a scale factor."""
    if draw(st.booleans(), label="by scale factor"):
        scale = draw(st.sampled_from(SCALES), label="scale factor")
        return None, scale, 2 if scale < 1 else 1
    return _per_dim(draw, spatial, UPSAMPLE_SIZE, "output size"), None, 1


def _resize_note(size, scale) -> str:
    return f"size {size}" if size is not None else f"scale_factor {scale}"


def nearest_cases(spatial: int) -> Callable[[torch.dtype], st.SearchStrategy]:
    @st.composite
    def draw_case(draw, dtype):
        size, scale, low = _resize(draw, spatial)
        mode = draw(st.sampled_from(NEAREST_MODES), label="mode")
        input, note = draw(images(dtype, draw(CHANNELS, label="channels"), (low,) * spatial, special=True))
        return (input, (size, scale, mode), {}), (note, f"{_resize_note(size, scale)}, mode {mode}")

    return draw_case


def linear_cases(spatial: int, antialias: bool) -> Callable[[torch.dtype], st.SearchStrategy]:
    @st.composite
    def draw_case(draw, dtype):
        size, scale, low = _resize(draw, spatial)
        align_corners = draw(st.booleans(), label="align_corners")
        # CPU has antialiased kernels for float32/float64 only: other dtypes would only be cpu_contract
        smooth = antialias and dtype in (torch.float32, torch.float64) and draw(st.booleans(), label="antialias")
        input, note = draw(images(dtype, draw(CHANNELS, label="channels"), (low,) * spatial))
        args = (size, scale, align_corners, smooth) if antialias else (size, scale, align_corners)
        return (input, args, {}), (note, f"{_resize_note(size, scale)}, align_corners {align_corners}"
                                         + (f", antialias {smooth}" if antialias else ""))

    return draw_case


# -- elementwise chains --------------------------------------------------------------------------

OTHER_OPERANDS = ("same shape, channels_last", "per channel", "same shape, contiguous")


@st.composite
def chain_cases(draw, dtype):
    spatial = draw(st.sampled_from((2, 3)), label="spatial dimensions")
    input, note = draw(images(dtype, draw(CHANNELS, label="channels"), (1,) * spatial, special=True))
    kind = draw(st.sampled_from(OTHER_OPERANDS), label="other operand")
    if kind == "per channel":
        other = _values(draw, (1, input.shape[1]) + (1,) * spatial, dtype)[0]
    else:
        other, _ = _values(draw, tuple(input.shape), dtype)
        other = stored(draw, other, "channels_last" if kind.endswith("channels_last") else "contiguous")[0]
    steps = tuple(draw(Lists(OneOf(CHAIN_STEPS), CHAIN_LENGTH.low, CHAIN_LENGTH.high).strategy(), label="steps"))
    return (input, (other, steps), {}), (note, f"other {tuple(other.shape)} {kind}", f"steps {steps}")


SCENARIO_CASES: dict[str, Callable[[torch.dtype], st.SearchStrategy]] = {
    "conv1d": conv_cases(1, False), "conv2d": conv_cases(2, False), "conv3d": conv_cases(3, False),
    "conv_transpose2d": conv_cases(2, True), "conv_transpose3d": conv_cases(3, True),
    "max_pool2d": max_pool_cases(2), "max_pool3d": max_pool_cases(3),
    "avg_pool2d": avg_pool_cases(2), "avg_pool3d": avg_pool_cases(3),
    "adaptive_avg_pool2d": adaptive_pool_cases(2, False), "adaptive_avg_pool3d": adaptive_pool_cases(3, False),
    "adaptive_max_pool2d": adaptive_pool_cases(2, True), "adaptive_max_pool3d": adaptive_pool_cases(3, True),
    "batch_norm2d": batch_norm_cases(2), "batch_norm3d": batch_norm_cases(3),
    "group_norm": group_norm_cases, "layer_norm": layer_norm_cases,
    "upsample_nearest2d": nearest_cases(2), "upsample_nearest3d": nearest_cases(3),
    "upsample_bilinear": linear_cases(2, True), "upsample_bicubic": linear_cases(2, True),
    "upsample_trilinear": linear_cases(3, False),
    "elementwise_chain": chain_cases,
}
