"""The bounds of what the channels_last suite's cases store (`cases.bounds`), one `CaseParams` a scenario.

Each scenario's parameters by name, in its program's order, bounded by what its strategy
(`properties.channels_last_cases`) can draw: the largest image a kernel's sizes allow, the module
hyperparameters' ranges, the rules between values a stored case must keep (size or scale factor,
trailing normalized shape, a second operand that does not broadcast past its bound). The case reader
refuses a stored case outside them, and the engine checks every drawn case against them.
"""

from __future__ import annotations

from torchcts.cases.bounds import Bound, CaseParams, Flag, Ints, Lists, OneOf, Optional, Tensors
from torchcts.properties.channels_last_cases import (
    ADAPTIVE_SIZE, BATCH, CHAIN_LENGTH, CHAIN_STEPS, CONV_GROUPS, CONV_PADDING, CONV_STRIDE, DILATION, DIVISOR, EPS,
    EXTRA_SIDE, FEW_CHANNELS, IN_PER_GROUP_FEW, IN_PER_GROUP_WIDE, KERNEL, MOMENTA, NEAREST_MODES, NORMALIZED_DIMS,
    NORM_GROUPS, OUT_PER_GROUP, PER_NORM_GROUP, POOL_PADDING, POOL_STRIDE, SCALES, SCENARIO_CASES, UPSAMPLE_SIZE,
    VECTOR_CHANNELS, conv_min_side)

_MOST_CHANNELS = max(FEW_CHANNELS.high, *VECTOR_CHANNELS)
_MOST_IN_PER_GROUP = max(IN_PER_GROUP_FEW.high, *IN_PER_GROUP_WIDE)
_MOST_CONV_IN = CONV_GROUPS.high * _MOST_IN_PER_GROUP
_MOST_CONV_OUT = CONV_GROUPS.high * OUT_PER_GROUP.high
# the largest smallest side a kernel asks of an input (no padding, the widest dilation; a transposed one: the widest
# padding, the smallest kernel); the drawn side adds EXTRA_SIDE
_MOST_KERNEL_SIDE = conv_min_side(KERNEL.high, 1, 0, DILATION.high, None)
_MOST_TRANSPOSED_SIDE = conv_min_side(KERNEL.low, CONV_STRIDE.low, CONV_PADDING.high, DILATION.low, 0)


def _image(channels: int, spatial: tuple[int, ...], least_side: int) -> Tensors:
    """An (N, C, *spatial) input of at most `channels` channels, each side at most `least_side` + EXTRA_SIDE."""
    most = BATCH.high * channels * (least_side + EXTRA_SIDE.high) ** max(spatial)
    return Tensors(most, 2 + max(spatial))


def _sizes(bound: Ints, spatial: int) -> Lists:
    return Lists(bound, spatial, spatial)


def _vector(length: int) -> Tensors:
    return Tensors(length, 1)


def _one_of_size_or_scale(params: dict) -> bool:
    return (params["size"] is None) != (params["scale_factor"] is None)


_SIZE_OR_SCALE = ("exactly one of size and scale_factor", _one_of_size_or_scale)


def _conv_params(spatial: int, transposed: bool) -> CaseParams:
    kernel_most = KERNEL.high ** spatial
    weight = Tensors(max(_MOST_CONV_OUT * _MOST_IN_PER_GROUP, _MOST_CONV_IN * OUT_PER_GROUP.high) * kernel_most,
                     2 + spatial)
    fields: dict[str, Bound] = {"weight": weight, "bias": Optional(_vector(_MOST_CONV_OUT)),
                                "stride": _sizes(CONV_STRIDE, spatial), "padding": _sizes(CONV_PADDING, spatial)}
    if transposed:  # output padding below max(stride, dilation)
        fields.update(output_padding=_sizes(Ints(0, max(CONV_STRIDE.high, DILATION.high) - 1), spatial),
                      groups=CONV_GROUPS, dilation=_sizes(DILATION, spatial))
    else:
        fields.update(dilation=_sizes(DILATION, spatial), groups=CONV_GROUPS)
    side = _MOST_TRANSPOSED_SIDE if transposed else _MOST_KERNEL_SIDE
    return CaseParams(fields, input=_image(_MOST_CONV_IN, (spatial,), side))


def _max_pool_params(spatial: int) -> CaseParams:
    return CaseParams({"kernel_size": _sizes(KERNEL, spatial), "stride": _sizes(POOL_STRIDE, spatial),
                       "padding": _sizes(POOL_PADDING, spatial), "dilation": _sizes(DILATION, spatial),
                       "ceil_mode": Flag()}, input=_image(_MOST_CHANNELS, (spatial,), _MOST_KERNEL_SIDE))


def _avg_pool_params(spatial: int) -> CaseParams:
    return CaseParams({"kernel_size": _sizes(KERNEL, spatial), "stride": _sizes(POOL_STRIDE, spatial),
                       "padding": _sizes(POOL_PADDING, spatial), "ceil_mode": Flag(), "count_include_pad": Flag(),
                       "divisor_override": Optional(DIVISOR)}, input=_image(_MOST_CHANNELS, (spatial,), KERNEL.high))


def _adaptive_params(spatial: int) -> CaseParams:
    return CaseParams({"output_size": _sizes(ADAPTIVE_SIZE, spatial)}, input=_image(_MOST_CHANNELS, (spatial,), 1))


def _batch_norm_params(spatial: int) -> CaseParams:
    channel = _vector(_MOST_CHANNELS)
    return CaseParams({"running_mean": channel, "running_var": channel, "weight": Optional(channel),
                       "bias": Optional(channel), "training": Flag(), "momentum": OneOf(MOMENTA), "eps": OneOf((EPS,))},
                      input=_image(_MOST_CHANNELS, (spatial,), 2))


def _upsample_params(spatial: int, *flags: str, mode: bool = False) -> CaseParams:
    fields: dict[str, Bound] = {"size": Optional(_sizes(UPSAMPLE_SIZE, spatial)),
                                "scale_factor": Optional(OneOf(SCALES))}
    fields.update({"mode": OneOf(NEAREST_MODES)} if mode else {flag: Flag() for flag in flags})
    return CaseParams(fields, input=_image(_MOST_CHANNELS, (spatial,), 2), rules=(_SIZE_OR_SCALE,))


_NORM_CHANNELS = NORM_GROUPS.high * PER_NORM_GROUP.high
_LAYER_NORM_INPUT = _image(_MOST_CHANNELS, (2, 3), 1)
_NORMALIZED_MOST = max(_MOST_CHANNELS * (1 + EXTRA_SIDE.high) ** 2, (1 + EXTRA_SIDE.high) ** 3)


def _normalized_is_trailing(params: dict) -> bool:
    shape = tuple(params["normalized_shape"])
    return tuple(params["input"].shape[-len(shape):]) == shape


def _other_fits_input(params: dict) -> bool:
    """elementwise_chain's `other` is drawn the input's shape or (1, C, 1, ...): two stored images that broadcast
    each other (25,1,255,1,1) with (1,25,1,255,1) would make a result far past either one's bound."""
    input, other = params["input"], params["other"]
    per_channel = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    return input.dim() >= 2 and tuple(other.shape) in (tuple(input.shape), per_channel)


_OTHER_FITS_INPUT = ("other has the input's shape or (1, C, 1, ...), one value a channel", _other_fits_input)


SCENARIO_PARAMS: dict[str, CaseParams] = {
    "conv1d": _conv_params(1, False), "conv2d": _conv_params(2, False), "conv3d": _conv_params(3, False),
    "conv_transpose2d": _conv_params(2, True), "conv_transpose3d": _conv_params(3, True),
    "max_pool2d": _max_pool_params(2), "max_pool3d": _max_pool_params(3),
    "avg_pool2d": _avg_pool_params(2), "avg_pool3d": _avg_pool_params(3),
    "adaptive_avg_pool2d": _adaptive_params(2), "adaptive_avg_pool3d": _adaptive_params(3),
    "adaptive_max_pool2d": _adaptive_params(2), "adaptive_max_pool3d": _adaptive_params(3),
    "batch_norm2d": _batch_norm_params(2), "batch_norm3d": _batch_norm_params(3),
    "group_norm": CaseParams({"num_groups": NORM_GROUPS, "weight": Optional(_vector(_NORM_CHANNELS)),
                              "bias": Optional(_vector(_NORM_CHANNELS)), "eps": OneOf((EPS,))},
                             input=_image(_NORM_CHANNELS, (2, 3), 2)),
    "layer_norm": CaseParams({"normalized_shape": Lists(Ints(1, _MOST_CHANNELS), NORMALIZED_DIMS.low,
                                                        NORMALIZED_DIMS.high),
                              "weight": Optional(Tensors(_NORMALIZED_MOST, NORMALIZED_DIMS.high)),
                              "bias": Optional(Tensors(_NORMALIZED_MOST, NORMALIZED_DIMS.high)), "eps": OneOf((EPS,))},
                             input=_LAYER_NORM_INPUT,
                             rules=(("normalized_shape is the input's trailing sizes", _normalized_is_trailing),)),
    "upsample_nearest2d": _upsample_params(2, mode=True), "upsample_nearest3d": _upsample_params(3, mode=True),
    "upsample_bilinear": _upsample_params(2, "align_corners", "antialias"),
    "upsample_bicubic": _upsample_params(2, "align_corners", "antialias"),
    "upsample_trilinear": _upsample_params(3, "align_corners"),
    "elementwise_chain": CaseParams({"other": _image(_MOST_CHANNELS, (2, 3), 1),
                                     "steps": Lists(OneOf(CHAIN_STEPS), CHAIN_LENGTH.low, CHAIN_LENGTH.high)},
                                    input=_image(_MOST_CHANNELS, (2, 3), 1), rules=(_OTHER_FITS_INPUT,)),
}
assert set(SCENARIO_PARAMS) == set(SCENARIO_CASES), "every scenario declares the bounds of what it stores"
