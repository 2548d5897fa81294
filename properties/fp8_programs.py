"""The fp8 suite's programs (`torchcts.engine.programs`): torch only, each returns what its float8 operation gives.

Casts to a float8 format return (NaN mask, codes with NaN codes zeroed), so a NaN compares as NaN whatever its sign
and payload while every other code compares exactly; casts from one return the same for another float8 target, the
bits for a wider float, the values for bool; data movement returns the result's codes; `scaled_mm` its values. Each
program repeats its format's NaN codes rather than sharing a helper: `torchcts replay --export-script` writes one
program's source into a torch-only script. The suite (`torchcts.properties.suites.fp8`) draws their cases.
"""

from __future__ import annotations

import torch


def cast_to_float8(input, dtype):
    """`input.to(dtype)` for a float8 `dtype`: (NaN mask, codes with NaN codes zeroed) of the result."""
    codes = input.to(dtype).view(torch.uint8)
    if dtype == torch.float8_e4m3fn:
        nan = (codes & 127) == 127
    elif dtype == torch.float8_e5m2:
        nan = (codes & 127) > 124
    elif dtype == torch.float8_e8m0fnu:
        nan = codes == 255
    else:  # the fnuz formats: one NaN code, 0x80
        nan = codes == 128
    return nan, torch.where(nan, torch.zeros_like(codes), codes)


def cast_from_float8(input, dtype, target):
    """The codes `input` (uint8) read as float8 `dtype`, cast to `target`: bool as is; another float8
    format as (NaN mask, codes); a wider float as (NaN mask, bits with NaN zeroed)."""
    out = input.view(dtype).to(target)
    if target == torch.bool:
        return out
    if out.element_size() == 1:
        codes = out.view(torch.uint8)
        if target == torch.float8_e4m3fn:
            nan = (codes & 127) == 127
        elif target == torch.float8_e5m2:
            nan = (codes & 127) > 124
        elif target == torch.float8_e8m0fnu:
            nan = codes == 255
        else:
            nan = codes == 128
        return nan, torch.where(nan, torch.zeros_like(codes), codes)
    nan = out.isnan()
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[out.element_size()]
    return nan, torch.where(nan, torch.zeros_like(out), out).view(bits)


def copy_into_float8(input, dest):
    """`dest.copy_(input)` into a float8 `dest` (any layout): (NaN mask, codes with NaN zeroed) of dest."""
    dest.copy_(input)
    codes = dest.view(torch.uint8)
    if dest.dtype == torch.float8_e4m3fn:
        nan = (codes & 127) == 127
    elif dest.dtype == torch.float8_e5m2:
        nan = (codes & 127) > 124
    elif dest.dtype == torch.float8_e8m0fnu:
        nan = codes == 255
    else:
        nan = codes == 128
    return nan, torch.where(nan, torch.zeros_like(codes), codes)


def move_float8(input, other, index, mask, op):
    """A data-movement op on the float8 matrix `input` (`other` of its shape, `index` int64 below its
    sides, `mask` a bool row): the result's codes, which must be the input's codes moved, NaN codes too."""
    if op == "clone":
        out = input.clone()
    elif op == "contiguous":
        out = input.t().contiguous()
    elif op == "cat":
        out = torch.cat([input, other])
    elif op == "stack":
        out = torch.stack([input, other], 1)
    elif op == "flip":
        out = input.flip(0, 1)
    elif op == "index_select":
        out = input.index_select(1, index)
    elif op == "index":
        out = input[index]
    elif op == "where":
        out = torch.where(mask, input, other)
    elif op == "roll":
        out = input.roll(1, 0)
    elif op == "repeat":
        out = input.repeat(2, 1)
    elif op == "pad":
        out = torch.nn.functional.pad(input, (1, 2))
    else:
        out = input.unfold(1, 2, 1).contiguous()
    return out.view(torch.uint8)


def scaled_mm(input, other, scale_a, scale_b, bias, out_dtype, use_fast_accum):
    """`torch._scaled_mm(input, other.t(), scale_a, scale_b, ...)`: `other` is (n, k), so the second
    operand is column-major as cuBLASLt wants it."""
    return torch._scaled_mm(input, other.t(), scale_a, scale_b, bias=bias, out_dtype=out_dtype,
                            use_fast_accum=use_fast_accum)


PROGRAMS = {"cast_to_float8": cast_to_float8, "cast_from_float8": cast_from_float8,
            "copy_into_float8": copy_into_float8, "move_float8": move_float8}
MM_PROGRAMS = {"scaled_mm": scaled_mm}
