"""Seeded bugs for the channels_last suite: kernels that mishandle channels-last memory.

Each fires only for a dense channels-last input that is not also contiguous (so the formats
really differ), on the overloads the faulty device runs for convolution, pooling and
interpolation, and models a bug class real backends shipped: an output that loses the input's
memory format, a layout-specific kernel that mixes up channel groups or misreads NHWC storage as
NCHW, a mixed-format convolution whose output format ignores the weight, and a padding rule lost
in the channels_last_3d path.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug

_FORMATS = {4: torch.channels_last, 5: torch.channels_last_3d}


def channels_last_only(t: object) -> bool:
    """A dense 4-d channels_last or 5-d channels_last_3d tensor whose storage order is not also NCHW."""
    return (isinstance(t, torch.Tensor) and t.dim() in _FORMATS and not t.is_contiguous()
            and t.is_contiguous(memory_format=_FORMATS[t.dim()]))


def _same_layout(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """`values` copied into a tensor with `like`'s strides: a wrong answer in the right format."""
    out = torch.empty_like(like)
    out.copy_(values)
    return out


def _contiguous_outputs(func, args, kwargs, result):
    return tuple(r.contiguous() for r in result) if isinstance(result, tuple) else result.contiguous()


def _groups_rotated(func, args, kwargs, result):
    """The convolution run on input channels rotated by one group: group g reads group g + 1's channels."""
    x, groups = args[0], args[8]
    per_group = x.size(1) // groups
    rotated = torch.cat([x[:, per_group:], x[:, :per_group]], dim=1)
    return _same_layout(func(rotated, *args[1:], **kwargs), result)


def _read_as_nchw(func, args, kwargs, result):
    """The op on the input's storage read with contiguous (NCHW) strides, in the result's format."""
    x = args[0]
    misread = x.as_strided(x.shape, torch.empty(x.shape).stride(), x.storage_offset())
    return _same_layout(func(misread, *args[1:], **kwargs), result)


def _grouped_conv(args) -> bool:
    return not args[6] and args[8] > 1 and channels_last_only(args[0])  # not transposed, groups > 1


def _weight_decides_format(args) -> bool:
    """A contiguous input and a channels-last weight: CPU's output is channels-last (either operand decides)."""
    return args[0].dim() in _FORMATS and args[0].is_contiguous() and channels_last_only(args[1])


# aten.avg_pool3d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)
_AVG_POOL3D = (("kernel_size", None), ("stride", ()), ("padding", 0), ("ceil_mode", False),
               ("count_include_pad", True), ("divisor_override", None))


def _avg_pool3d_arguments(args, kwargs) -> list:
    """avg_pool3d's arguments after the input, defaults filled in."""
    return [args[i + 1] if i + 1 < len(args) else kwargs.get(name, default)
            for i, (name, default) in enumerate(_AVG_POOL3D)]


def _padded_average(args, kwargs) -> bool:
    _, _, padding, _, count_include_pad, _ = _avg_pool3d_arguments(args, kwargs)
    padding = [padding] if isinstance(padding, int) else padding
    return channels_last_only(args[0]) and any(p > 0 for p in padding) and bool(count_include_pad)


def _pad_not_counted(func, args, kwargs, result):
    kernel, stride, padding, ceil_mode, _, divisor = _avg_pool3d_arguments(args, kwargs)
    return func(args[0], kernel, stride, padding, ceil_mode, False, divisor)


BUGS = (
    Bug("pooling_drops_channels_last", ("aten.max_pool2d_with_indices.default", "aten.avg_pool2d.default"),
        "the input is 4-d channels_last (and not contiguous)",
        "returns contiguous pooling outputs (values and indices) for a channels_last input (right values, "
        "wrong strides)",
        lambda f, a, k: channels_last_only(a[0]), _contiguous_outputs, suite="channels_last"),
    Bug("grouped_conv_channels_last", ("aten.convolution.default",),
        "a non-transposed convolution with groups > 1 on a channels_last or channels_last_3d input",
        "mixes up channel groups: group g convolves the input channels of group g + 1",
        lambda f, a, k: _grouped_conv(a), _groups_rotated, suite="channels_last"),
    Bug("upsample_reads_nchw", ("aten.upsample_bilinear2d.default", "aten.upsample_bicubic2d.default"),
        "a bilinear or bicubic upsample of a 4-d channels_last input (not contiguous)",
        "reads the channels_last (NHWC) input storage as if it were NCHW",
        lambda f, a, k: channels_last_only(a[0]), _read_as_nchw, suite="channels_last"),
    Bug("conv_weight_format_ignored", ("aten.convolution.default",),
        "a contiguous input with a channels_last (or channels_last_3d) weight",
        "picks the output memory format from the input alone: a contiguous result where CPU gives channels_last "
        "(right values, wrong strides)",
        lambda f, a, k: _weight_decides_format(a), lambda f, a, k, r: r.contiguous(), suite="channels_last"),
    Bug("avg_pool3d_pad_counted_out", ("aten.avg_pool3d.default",),
        "a padded avg_pool3d with count_include_pad=True on a channels_last_3d input",
        "divides by the unpadded window size (count_include_pad ignored) in its channels_last_3d path",
        lambda f, a, k: _padded_average(a, k), _pad_not_counted, suite="channels_last"),
)
