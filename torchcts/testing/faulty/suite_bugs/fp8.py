"""Seeded bugs for the fp8 suite (properties/suites/fp8.py): float8 encodings real kernels got wrong.

Casts reach the faulty device as `aten._to_copy.default` (`.to(dtype)`) or `aten.copy_.default`
(`dest.copy_(src)`); every bug here fires only when such a cast converts into (or out of) a float8
format and the data holds its condition, so other casts and copies are untouched. A `copy_` bug
rewrites the destination's data (the overload returns its mutated argument).
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from torchcts.testing.faulty.bug_model import Bug

_NAMES = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
_FLOAT8 = tuple(d for d in (getattr(torch, n, None) for n in _NAMES) if isinstance(d, torch.dtype))
_SIGNED_FLOAT8 = tuple(d for d in _FLOAT8 if d != getattr(torch, "float8_e8m0fnu", None))
_CASTS = ("aten._to_copy.default", "aten.copy_.default")


def _cast(func, args: tuple, kwargs: dict) -> tuple[torch.Tensor, torch.dtype] | None:
    """(source data, target dtype) of a dtype-converting cast, or None for anything else."""
    if str(func) == "aten._to_copy.default":
        source, target = args[0], kwargs.get("dtype")
    else:
        if len(args) < 2 or not isinstance(args[1], torch.Tensor):
            return None
        source, target = args[1], args[0].dtype
    if not isinstance(source, torch.Tensor) or target is None or source.dtype == target:
        return None
    if source.layout != torch.strided:
        return None
    return source, target


def _encoding(func, args, kwargs, targets: tuple[torch.dtype, ...]) -> tuple[torch.Tensor, torch.dtype] | None:
    """(source as float64 broadcast to the result's shape, target) of a cast from a wider float into `targets`."""
    found = _cast(func, args, kwargs)
    if found is None or found[1] not in targets or found[0].dtype in _FLOAT8 or not found[0].is_floating_point():
        return None
    source, target = found
    if str(func) == "aten.copy_.default":
        source = source.expand_as(args[0])
    return source.to(torch.float64), target


def _rewrite(func, args, result, codes: torch.Tensor, target: torch.dtype) -> Any:
    """The cast's result with the given uint8 codes: a new tensor for _to_copy, dest rewritten for copy_."""
    if str(func) == "aten.copy_.default":
        args[0].copy_(codes.view(target))
        return result
    return torch.empty_like(result).copy_(codes.view(target))  # the result's own strides


def _codes(func, args, result) -> torch.Tensor:
    out = args[0] if str(func) == "aten.copy_.default" else result
    return out.contiguous().view(torch.uint8).clone()


def _encode_bug(condition: Callable[[torch.Tensor, torch.Tensor, torch.dtype], torch.Tensor],
                change: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.dtype], torch.Tensor],
                targets: tuple[torch.dtype, ...]):
    """`fires` and `perturb` for an encoding bug: `condition(source64, codes, target)` marks the elements it
    affects, `change(source64, codes, marked, target)` gives their new codes."""
    def fires(func, args, kwargs) -> bool:
        found = _encoding(func, args, kwargs, targets)
        if found is None or not found[0].numel():
            return False
        source, target = found
        encoded = source.contiguous().to(target).view(torch.uint8)
        return bool(condition(source.contiguous(), encoded, target).any())

    def perturb(func, args, kwargs, result):
        source, target = _encoding(func, args, kwargs, targets)
        codes = _codes(func, args, result)
        source = source.contiguous().reshape(codes.shape)
        marked = condition(source, codes, target)
        return _rewrite(func, args, result, torch.where(marked, change(source, codes, marked, target), codes), target)

    return fires, perturb


# -- fp8_cast_truncates: rounds toward zero instead of to nearest even ---------------------------------

def _rounded_away(source: torch.Tensor, codes: torch.Tensor, target: torch.dtype) -> torch.Tensor:
    decoded = codes.view(target).to(torch.float64)
    return torch.isfinite(source) & ~decoded.isnan() & (decoded.abs() > source.abs())


def _one_code_toward_zero(source, codes, marked, target):
    magnitude = codes & 0x7F
    sign = codes & 0x80
    smaller = (magnitude.to(torch.int16) - 1).clamp_min(0).to(torch.uint8)
    return torch.where(smaller == 0, torch.zeros_like(codes), sign | smaller)  # fnuz: 0x80 is NaN, not -0


# -- fp8_e4m3fn_overflow_nan: NaN instead of saturating -------------------------------------------------

def _beyond_e4m3fn(source, codes, target):
    return ~source.isnan() & (source.abs() > 448.0)


def _nan_code(source, codes, marked, target):
    return (codes & 0x80) | 0x7F


# -- fp8_e5m2_nan_to_inf: NaN encoded as infinity ------------------------------------------------------

def _is_nan(source, codes, target):
    return source.isnan()


def _infinity_code(source, codes, marked, target):
    return (codes & 0x80) | 0x7C


# -- fp8_decode_flushes_subnormals: float8 subnormals read as zero --------------------------------------

_EXPONENT_MASK = {}
for _dtype, _mask in (("float8_e4m3fn", 0x78), ("float8_e5m2", 0x7C), ("float8_e4m3fnuz", 0x78),
                      ("float8_e5m2fnuz", 0x7C)):
    if isinstance(getattr(torch, _dtype, None), torch.dtype):
        _EXPONENT_MASK[getattr(torch, _dtype)] = _mask


def _subnormal_codes(codes: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return ((codes & _EXPONENT_MASK[dtype]) == 0) & ((codes & 0x7F) != 0)


def _decodes_subnormals(func, args, kwargs) -> bool:
    found = _cast(func, args, kwargs)
    if found is None or found[0].dtype not in _EXPONENT_MASK or found[1] in _FLOAT8:
        return False
    source = found[0]
    return bool(source.numel()) and bool(_subnormal_codes(source.contiguous().view(torch.uint8), source.dtype).any())


def _flush_decoded(func, args, kwargs, result):
    source = _cast(func, args, kwargs)[0]
    if str(func) == "aten.copy_.default":
        source = source.expand_as(args[0])
    flushed = source.contiguous().view(torch.uint8).clone()
    flushed = torch.where(_subnormal_codes(flushed, source.dtype), flushed & 0x80, flushed)
    if source.dtype in (getattr(torch, "float8_e4m3fnuz", None), getattr(torch, "float8_e5m2fnuz", None)):
        flushed = torch.where(flushed == 0x80, torch.zeros_like(flushed), flushed)  # fnuz has no -0
    decoded = flushed.view(source.dtype).reshape(source.shape)
    if str(func) == "aten.copy_.default":
        args[0].copy_(decoded)
        return result
    return torch.empty_like(result).copy_(decoded)


# -- fp8_scaled_mm_rowwise_first: row-wise scales read as their first element ---------------------------

def _rowwise_scales_differ(func, args, kwargs) -> bool:
    scale_a = args[2] if len(args) > 2 else kwargs.get("scale_a")
    return isinstance(scale_a, torch.Tensor) and scale_a.numel() > 1 and bool((scale_a != scale_a.reshape(-1)[0]).any())


def _first_scale_only(func, args, kwargs, result):
    scale_a = args[2]
    return func(args[0], args[1], torch.full_like(scale_a, scale_a.reshape(-1)[0].item()), *args[3:], **kwargs)


_truncate = _encode_bug(_rounded_away, _one_code_toward_zero, _SIGNED_FLOAT8)
_overflow = _encode_bug(_beyond_e4m3fn, _nan_code, tuple(d for d in _FLOAT8 if str(d) == "torch.float8_e4m3fn"))
_nan_inf = _encode_bug(_is_nan, _infinity_code, tuple(d for d in _FLOAT8 if str(d) == "torch.float8_e5m2"))

BUGS = (
    Bug("fp8_cast_truncates", _CASTS,
        "a cast or copy from a wider float into a signed float8 format, of a value that rounds away from zero",
        "rounds toward zero instead of to nearest even (one code smaller in magnitude)",
        *_truncate, suite="fp8"),
    Bug("fp8_e4m3fn_overflow_nan", _CASTS,
        "a cast or copy into float8_e4m3fn of a value beyond 448 in magnitude (inf included)",
        "encodes NaN (0x7f/0xff) where CPU saturates to +-448",
        *_overflow, suite="fp8"),
    Bug("fp8_e5m2_nan_to_inf", _CASTS,
        "a cast or copy into float8_e5m2 of a NaN",
        "encodes NaN as an infinity (0x7c/0xfc), as truncating a float16 NaN with a low payload does",
        *_nan_inf, suite="fp8"),
    Bug("fp8_decode_flushes_subnormals", _CASTS,
        "a cast or copy out of a float8 format (not e8m0) into a wider dtype, of a subnormal code",
        "flushes float8 subnormals to (signed) zero when decoding",
        _decodes_subnormals, _flush_decoded, suite="fp8"),
    Bug("fp8_scaled_mm_rowwise_first", ("aten._scaled_mm.default",),
        "torch._scaled_mm with row-wise scale_a whose elements differ",
        "scales every row by scale_a's first element",
        _rowwise_scales_differ, _first_scale_only, suite="fp8"),
)
