"""Seeded bugs the copies suite (`properties/suites/copies.py`) must catch: transfers and copies that move the wrong bits.

Each imitates what real backends got wrong: a device-to-host (or device-to-device) transfer that
copies from the start of the storage and forgets the view's storage offset, a `copy_` into a
non-contiguous destination that writes the values as if the destination were contiguous, and a
float -> integer conversion that rounds to nearest (the hardware's default rounding mode) instead
of truncating toward zero as C++ and CPU do.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug


def _transfer_of_offset_view(func, args, kwargs) -> bool:
    # `to(device)`, `cpu()`: _to_copy naming a device (the device's name arrives as "cpu": the data lives there)
    return kwargs.get("device") is not None and args[0].layout == torch.strided and args[0].storage_offset() != 0


def _from_storage_start(func, args, kwargs, result):
    x = args[0]
    return func(x.as_strided(x.shape, x.stride(), 0), *args[1:], **kwargs)


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for side in reversed(shape):
        strides.append(step)
        step *= max(side, 1)
    return tuple(reversed(strides))


def _into_strided_destination(func, args, kwargs) -> bool:
    dst = args[0]
    return (dst.layout == torch.strided and dst.numel() > 1 and not dst.is_contiguous()
            and all(stride > 0 for size, stride in zip(dst.shape, dst.stride()) if size > 1))


def _written_as_contiguous(func, args, kwargs, result):
    dst, src = args[0], args[1]
    values = src.expand(dst.shape).to(dst.dtype).reshape(-1)  # the values, in logical order
    torch.as_strided(dst, (dst.numel(),), (1,), dst.storage_offset()).copy_(values)
    return result


def _float_to_integer(source: torch.Tensor, target: torch.dtype) -> bool:
    integral = not (target.is_floating_point or target.is_complex or target == torch.bool)
    if not (source.is_floating_point() and integral and source.numel()):
        return False
    finite = source[source.isfinite()]
    return bool((finite != finite.trunc()).any())


def _rounding_conversion(func, args, kwargs) -> bool:
    if str(func) == "aten._to_copy.default":
        target = kwargs.get("dtype")
        return target is not None and _float_to_integer(args[0], target)
    return _float_to_integer(args[1], args[0].dtype)


def _rounded(func, args, kwargs, result):
    if str(func) == "aten._to_copy.default":
        result.copy_(args[0].round())
        return result
    args[0].copy_(args[1].round())
    return result


BUGS = (
    Bug("transfer_drops_offset", ("aten._to_copy.default",),
        "a transfer (`to(device)`, `cpu()`) of a tensor with a non-zero storage offset",
        "copies from the start of the storage, ignoring the source's storage offset",
        _transfer_of_offset_view, _from_storage_start, suite="copies"),
    Bug("strided_copy_as_contiguous", ("aten.copy_.default",),
        "copy_ into a non-contiguous destination without zero strides, of more than one element",
        "writes the values contiguously from the destination's offset, as if it were contiguous",
        _into_strided_destination, _written_as_contiguous, suite="copies"),
    Bug("float_to_int_rounds", ("aten._to_copy.default", "aten.copy_.default"),
        "a floating tensor holding a finite non-integer value is converted to an integer dtype",
        "rounds to nearest (even) instead of truncating toward zero",
        _rounding_conversion, _rounded, suite="copies"),
)
