"""Channels-last semantics: convolution, pooling, normalization, interpolation and elementwise
chains on channels_last (4-d) and channels_last_3d (5-d) inputs give CPU's values and CPU's output
memory format.

Each scenario is a torch-only program (`torchcts.engine.programs`) taking the input image and the
module's parameters (weights as tensors, hyperparameters as ints and tuples). Inputs are stored
channels_last (the shrink target), as a stepped or offset channels_last view, or contiguous (then a
convolution's weight may be channels_last: mixed formats). Output strides are compared on the
dimensions longer than 1 (`strides="significant"`): at ambiguous sizes (C=1, H=W=1, N=1) several
formats describe the same tensor and only those strides are defined; where CPU itself drops an
operand's channels-last format (no channels-last kernel), channels-last strides pass too. Kernels that accumulate
(convolution, norms, average pooling, linear and cubic interpolation) may sum in another order or
precision: below 32 bits their tolerance is the dtype's default widened 4x, on top of the engine's
accumulation widening and norm-wise floor (`inputs=`). See docs/suites/channels_last.md.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from torch.utils._pytree import tree_leaves, tree_map

from torchcts.cases import scenario_case
from torchcts.properties.channels_last_cases import SCENARIO_CASES, WIDENED_BELOW_32_BITS, channels_last_order
from torchcts.properties.channels_last_params import SCENARIO_PARAMS
from torchcts.properties.scenario_table import Scenario, Tolerance, scenario_suite

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("conv, pooling, norms, upsampling and elementwise chains on channels_last inputs: values and CPU's output "
          "memory format")


# -- programs: torch-only, module level; each returns what it observes ---------------------------

def conv1d(input, weight, bias, stride, padding, dilation, groups):
    return torch.nn.functional.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias, stride, padding, dilation, groups):
    return torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias, stride, padding, dilation, groups):
    return torch.nn.functional.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation):
    return torch.nn.functional.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation):
    return torch.nn.functional.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode):
    return torch.nn.functional.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                                          return_indices=True)


def max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode):
    return torch.nn.functional.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                                          return_indices=True)


def avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return torch.nn.functional.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                          divisor_override)


def avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    return torch.nn.functional.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                          divisor_override)


def adaptive_avg_pool2d(input, output_size):
    return torch.nn.functional.adaptive_avg_pool2d(input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return torch.nn.functional.adaptive_avg_pool3d(input, output_size)


def adaptive_max_pool2d(input, output_size):
    return torch.nn.functional.adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d(input, output_size):
    return torch.nn.functional.adaptive_max_pool3d(input, output_size, return_indices=True)


def batch_norm2d(input, running_mean, running_var, weight, bias, training, momentum, eps):
    out = torch.nn.functional.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    return out, running_mean, running_var  # training updates the running statistics in place


def batch_norm3d(input, running_mean, running_var, weight, bias, training, momentum, eps):
    out = torch.nn.functional.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    return out, running_mean, running_var


def group_norm(input, num_groups, weight, bias, eps):
    return torch.nn.functional.group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input, normalized_shape, weight, bias, eps):
    return torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)


def upsample_nearest2d(input, size, scale_factor, mode):
    return torch.nn.functional.interpolate(input, size=size, scale_factor=scale_factor, mode=mode)


def upsample_nearest3d(input, size, scale_factor, mode):
    return torch.nn.functional.interpolate(input, size=size, scale_factor=scale_factor, mode=mode)


def upsample_bilinear(input, size, scale_factor, align_corners, antialias):
    return torch.nn.functional.interpolate(input, size=size, scale_factor=scale_factor, mode="bilinear",
                                           align_corners=align_corners, antialias=antialias)


def upsample_bicubic(input, size, scale_factor, align_corners, antialias):
    return torch.nn.functional.interpolate(input, size=size, scale_factor=scale_factor, mode="bicubic",
                                           align_corners=align_corners, antialias=antialias)


def upsample_trilinear(input, size, scale_factor, align_corners):
    return torch.nn.functional.interpolate(input, size=size, scale_factor=scale_factor, mode="trilinear",
                                           align_corners=align_corners)


def elementwise_chain(input, other, steps):
    """Each step in turn on the running result (`other`: a second operand, same shape or per channel)."""
    x = input
    for step in steps:
        if step == "add":
            x = x + other
        elif step == "sub":
            x = x - other
        elif step == "mul":
            x = x * other
        elif step == "where":
            x = torch.where(x > 0, x, other)
        elif step == "relu":
            x = torch.relu(x)
        elif step == "sigmoid":
            x = torch.sigmoid(x)
        elif step == "tanh":
            x = torch.tanh(x)
        elif step == "silu":
            x = torch.nn.functional.silu(x)
        elif step == "hardswish":
            x = torch.nn.functional.hardswish(x)
        elif step == "gelu":
            x = torch.nn.functional.gelu(x)
        elif step == "clamp":
            x = torch.clamp(x, -1.0, 1.0)
        elif step == "add_":
            x = x.add_(other)  # in place: the first step writes the (fresh, placed) input itself
        elif step == "relu_":
            x = torch.relu_(x)
    return x


PROGRAMS = {program.__name__: program for program in (
    conv1d, conv2d, conv3d, conv_transpose2d, conv_transpose3d,
    max_pool2d, max_pool3d, avg_pool2d, avg_pool3d, adaptive_avg_pool2d, adaptive_avg_pool3d,
    adaptive_max_pool2d, adaptive_max_pool3d,
    batch_norm2d, batch_norm3d, group_norm, layer_norm,
    upsample_nearest2d, upsample_nearest3d, upsample_bilinear, upsample_bicubic, upsample_trilinear,
    elementwise_chain)}
assert set(PROGRAMS) == set(SCENARIO_CASES), "every scenario has a program and a case strategy"

DTYPES = ("float32", "float64", "bfloat16", "float16")
_FORMATS = {4: torch.channels_last, 5: torch.channels_last_3d}


def stored_channels_last(t: object) -> bool:
    """A 4-d or 5-d tensor whose strides on dimensions longer than 1 order C innermost and are not also
    NCHW's: channels-last storage (dense or a view), unambiguously."""
    if not isinstance(t, torch.Tensor) or t.dim() not in (4, 5) or t.layout != torch.strided:
        return False
    significant = lambda order: [t.stride(d) for d in order if t.size(d) > 1]
    in_order = lambda order: significant(order) == sorted(significant(order), reverse=True)
    return in_order(channels_last_order(t.dim())) and not in_order(tuple(range(t.dim())))


def format_dropped_by_cpu(sample, expected) -> bool:
    """CPU returned NCHW although an operand is stored channels-last: its kernel has no channels-last path
    there (conv3d in float64/float16, avg_pool3d, layer_norm), so CPU does not define the output format."""
    operands = [sample.input, *sample.args]
    rank = sample.input.dim()
    outputs = [t for t in tree_leaves(expected) if isinstance(t, torch.Tensor) and t.dim() == rank]
    return any(stored_channels_last(t) for t in operands) and any(
        t.is_contiguous() and not t.is_contiguous(memory_format=_FORMATS[rank]) for t in outputs)


def in_channels_last(expected, rank: int):
    """CPU's result with its `rank`-d tensors in channels-last memory (the other acceptable format)."""
    return tree_map(lambda t: t.contiguous(memory_format=_FORMATS[rank])
                    if isinstance(t, torch.Tensor) and t.dim() == rank else t, expected)


# scenarios whose every output element comes from one input element: no norm-wise floor (the others resample,
# average or accumulate: upsampling, average pooling, convolutions, norms)
_POINTWISE = ("elementwise_chain", "max_pool", "adaptive_max_pool", "upsample_nearest")


def channels_last_where_cpu_dropped_it(sample, expected):
    """The other acceptable result: CPU's in channels-last memory where CPU dropped an operand's channels-last
    format (`format_dropped_by_cpu`); None where CPU kept it (its strides are the only right ones)."""
    if not format_dropped_by_cpu(sample, expected):
        return None
    return in_channels_last(expected, sample.input.dim())


def comparison(scenario: str) -> Tolerance:
    """The program on the device gives CPU's result: values, dtypes, shapes, and strides of every dimension longer
    than 1 (the memory format), or channels-last strides where CPU drops the format. Accumulating kernels widen 4x
    below 32 bits (another summation order or accumulator precision is legitimate there); scenarios that resample,
    average or accumulate get the norm-wise floor."""
    widen = 4.0 if scenario in WIDENED_BELOW_32_BITS else None
    return Tolerance(strides="significant", dtype_widen={"float16": widen, "bfloat16": widen} if widen else {},
                     normwise=not scenario.startswith(_POINTWISE), said="{scenario}: {case}",
                     alternative=channels_last_where_cpu_dropped_it)


def scenario_cases(scenario: str, dtype: torch.dtype) -> st.SearchStrategy:
    """Cases of one scenario: its strategy's drawn arguments, named by the scenario's parameters, with a
    description of what was drawn."""
    params = SCENARIO_PARAMS[scenario]

    def as_case(drawn):
        (input, args, kwargs), transforms = drawn
        values = {"input": input, **dict(zip(scenario_case.names(params)[1:], args)), **kwargs}
        return scenario_case.scenario_case(scenario, dtype, params, values, tuple(transforms))

    return SCENARIO_CASES[scenario](dtype).map(as_case)


# the aten overloads channels_last dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten._adaptive_avg_pool2d.default", "aten._adaptive_avg_pool3d.default", "aten._upsample_bicubic2d_aa.default",
    "aten._upsample_bilinear2d_aa.default", "aten._upsample_nearest_exact2d.default",
    "aten._upsample_nearest_exact3d.default", "aten.adaptive_max_pool2d.default",
    "aten.adaptive_max_pool3d.default", "aten.add.Tensor", "aten.add_.Tensor", "aten.avg_pool2d.default",
    "aten.avg_pool3d.default", "aten.clamp.default", "aten.clone.default", "aten.convolution.default",
    "aten.empty.memory_format", "aten.gelu.default", "aten.gt.Scalar", "aten.hardswish.default",
    "aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default", "aten.mean.dim",
    "aten.mul.Tensor", "aten.native_batch_norm.default", "aten.native_group_norm.default",
    "aten.native_layer_norm.default", "aten.relu.default", "aten.relu_.default", "aten.sigmoid.default",
    "aten.silu.default", "aten.sub.Tensor", "aten.upsample_bicubic2d.default", "aten.upsample_bilinear2d.default",
    "aten.upsample_nearest2d.default", "aten.upsample_nearest3d.default", "aten.upsample_trilinear3d.default",
    "aten.where.self",
)


test_channels_last = scenario_suite(
    "channels_last", capability="channels_last", level=4, dtypes=DTYPES, overloads=_OVERLOADS,
    scenarios=[Scenario(name, SCENARIO_PARAMS[name], program, comparison(name),
                        cases=lambda cts: scenario_cases(cts.item.op, cts.dtype))
               for name, program in PROGRAMS.items()])
