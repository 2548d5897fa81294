"""Tensor values per dtype: ordinary values, and special values mixed in at drawn positions.

Drawing every element through Hypothesis is slow (hundreds of draws per tensor). Instead a
tensor's values are a fill drawn as a few choices (a fill kind and a seed for a torch.Generator)
plus a short list of (position, special value) pairs. That shrinks well: the fill kind toward
small integers, the seed toward 0, and the special list toward empty, so a failure caused by one
NaN shrinks to a tensor holding exactly one NaN among ordinary values.
"""

from __future__ import annotations

import enum
import functools
import math

import torch
from hypothesis import strategies as st

from torchcts import dtypes as dtype_names


class Fill(enum.IntEnum):
    """How ordinary values are spread; ordered from the simplest (the shrink target)."""

    SMALL_INTEGERS = 0  # integers in [-4, 4] (or [0, 8]): exact in every dtype
    NORMAL = 1  # standard normal, scaled by 4 (integers: [-9, 9])
    WIDE = 2  # magnitudes across the dtype's range (integers: the full range)
    UNIT = 3  # uniform in [0, 1) (integers: {0, 1})


def is_float_like(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


@functools.cache
def special_values(dtype: torch.dtype) -> tuple[object, ...]:
    """Values that backends get wrong, representable in `dtype` (NaN, ±inf, -0.0, extremes, ties, ...)."""
    if dtype == torch.bool:
        return (True, False)
    if not is_float_like(dtype):
        info = torch.iinfo(dtype)
        candidates = [info.min, info.max, 0, 1, info.max - 1, info.min + 1, -1]
        return tuple(dict.fromkeys(v for v in candidates if info.min <= v <= info.max))
    real = _real_specials(_real_dtype(dtype))
    if not dtype.is_complex:
        return real
    nan, inf = math.nan, math.inf
    pairs = [(nan, 0.0), (inf, 0.0), (0.0, inf), (-0.0, -0.0), (inf, nan), (-inf, inf), (0.0, nan)]
    pairs += [(v, 1.0) for v in real if not math.isnan(v)][:6]
    return tuple(complex(re, im) for re, im in pairs)


def _real_dtype(dtype: torch.dtype) -> torch.dtype:
    return {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}.get(
        dtype, dtype
    )


def _real_specials(dtype: torch.dtype) -> tuple[float, ...]:
    info = torch.finfo(dtype)
    smallest_subnormal = info.smallest_normal * info.eps
    candidates = [
        math.nan, math.inf, -math.inf, -0.0, smallest_subnormal, -smallest_subnormal,
        info.smallest_normal - smallest_subnormal,  # largest subnormal
        info.max, info.min, info.eps, info.smallest_normal,
        0.5, -0.5, 1.5, 2.5, -2.5,  # ties when rounding to integers
        # ties when casting down: halfway between 1 and the next bfloat16 / float16 / float32
        *(1.0 + torch.finfo(lower).eps / 2 for lower in (torch.bfloat16, torch.float16, torch.float32)),
    ]
    kept: dict[tuple[float, float], float] = {}
    for value in candidates:
        stored = torch.tensor([value], dtype=torch.float64).to(dtype).item()
        exact = (math.isnan(value) and math.isnan(stored)) or (
            stored == value and math.copysign(1.0, stored) == math.copysign(1.0, value)
        )
        if exact:
            kept.setdefault(("nan", 0.0) if math.isnan(value) else (value, math.copysign(1.0, value)), value)
    return tuple(kept.values())


def fill_tensor(shape: tuple[int, ...], dtype: torch.dtype, fill: Fill, seed: int) -> torch.Tensor:
    """A contiguous CPU tensor of ordinary values, determined by `fill` and `seed` alone."""
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if not is_float_like(dtype):
        return _integer_fill(shape, dtype, fill, generator)
    work = torch.float64 if dtype in (torch.float64, torch.complex128) else torch.float32
    if dtype.is_complex:
        real = _float_fill(shape, _real_dtype(dtype), work, fill, generator)
        imag = _float_fill(shape, _real_dtype(dtype), work, fill, generator)
        return torch.complex(real, imag).to(dtype)
    return _float_fill(shape, dtype, work, fill, generator).to(dtype)


def _float_fill(shape, dtype, work, fill: Fill, generator) -> torch.Tensor:
    if fill == Fill.SMALL_INTEGERS:
        low = 0 if dtype in dtype_names.FLOAT8_DTYPES and "e8m0" in str(dtype) else -4
        return torch.randint(low, 5, shape, generator=generator).to(work)
    if fill == Fill.NORMAL:
        return torch.randn(shape, generator=generator, dtype=work).mul_(4)
    if fill == Fill.UNIT:
        return torch.rand(shape, generator=generator, dtype=work)
    info = torch.finfo(dtype)
    exponent = torch.rand(shape, generator=generator, dtype=torch.float64)
    exponent = exponent * (math.log2(info.max) - math.log2(info.smallest_normal)) + math.log2(info.smallest_normal)
    sign = torch.randint(0, 2, shape, generator=generator).to(torch.float64) * 2 - 1
    return (sign * torch.exp2(exponent)).clamp(info.min, info.max).to(work)


def _integer_fill(shape, dtype, fill: Fill, generator) -> torch.Tensor:
    info = torch.iinfo(dtype)
    if fill == Fill.WIDE:
        if info.bits > 32:  # randint's bounds are int64: combine two 32-bit halves
            high = torch.randint(0, 2**32, shape, generator=generator, dtype=torch.int64)
            low = torch.randint(0, 2**32, shape, generator=generator, dtype=torch.int64)
            return ((high << 32) | low).to(dtype) if dtype != torch.uint64 else ((high << 32) | low).view(torch.uint64)
        return torch.randint(info.min, info.max + 1, shape, generator=generator, dtype=torch.int64).to(dtype)
    low, high = {Fill.SMALL_INTEGERS: (-4, 5), Fill.NORMAL: (-9, 10), Fill.UNIT: (0, 2)}[fill]
    if info.min == 0:
        low, high = 0, high - low
    return torch.randint(low, high, shape, generator=generator, dtype=torch.int64).to(dtype)


def division_safe_specials(dtype: torch.dtype) -> tuple[object, ...]:
    """`special_values` without the most negative integer: INT_MIN / -1 kills a CPU process
    (SIGFPE in gcd, lcm, floor_divide), so cases for kernels that divide leave it out."""
    values = special_values(dtype)
    if dtype == torch.bool or is_float_like(dtype):
        return values
    return tuple(v for v in values if v != torch.iinfo(dtype).min or v == 0)


@functools.cache
def _specials_tensor(dtype: torch.dtype, division_safe: bool = False) -> torch.Tensor:
    values = division_safe_specials(dtype) if division_safe else special_values(dtype)
    if dtype == torch.uint64:
        return torch.tensor([v & (2**64 - 1) for v in values], dtype=torch.uint64)
    work = torch.complex128 if dtype.is_complex else (torch.float64 if dtype.is_floating_point else None)
    if work is None:
        return torch.tensor(values, dtype=dtype)
    return torch.tensor(values, dtype=work).to(dtype)


_FILLS = st.sampled_from(Fill)
_SEEDS = st.integers(0, 2**32 - 1)
_PICK = st.tuples(st.integers(0, 2**20), st.integers(0, 63))


@functools.cache
def special_picks(max_count: int) -> st.SearchStrategy[list[tuple[int, int]]]:
    """Up to `max_count` (position, table index) pairs, wrapped into range when applied.

    Independent of the tensor's size, so the strategy is built once and an empty tensor draws as
    many choices as a full one (Hypothesis shrinks toward shorter draw sequences first).
    """
    return st.lists(_PICK, max_size=max_count)


def apply_special_picks(t: torch.Tensor, picks: list[tuple[int, int]], division_safe: bool = False
                        ) -> tuple[torch.Tensor, str]:
    """A contiguous copy of `t` with special values written at the picked positions, and a note."""
    if not picks or not t.numel() or t.dtype == torch.bool:
        return t, ""
    table = _specials_tensor(t.dtype, division_safe)
    labels = division_safe_specials(t.dtype) if division_safe else special_values(t.dtype)
    chosen = {position % t.numel(): k % len(table) for position, k in picks}
    out = t.contiguous().clone() if not t.is_contiguous() or t.storage_offset() else t
    put_elements(out, torch.tensor(list(chosen)), table[torch.tensor(list(chosen.values()))])
    return out, ", ".join(f"{labels[k]!r} at {p}" for p, k in chosen.items())


def apply_special_table(t: torch.Tensor, start: int, division_safe: bool = False,
                        kept: tuple[int, ...] | None = None) -> tuple[torch.Tensor, str]:
    """A contiguous copy of `t` holding the special-value table, in order, from flat `start`.

    One case then meets every special value at once; two operands spread from the same start
    meet them pairwise (inf with inf, NaN with NaN, -0.0 with -0.0). `kept` (one number per table
    entry, 0 = left out) selects entries: `special_table` draws it so shrinking drops the entries a
    failure does not need, leaving the one or two special values that matter.
    """
    if not t.numel() or t.dtype == torch.bool:
        return t, ""
    table = _specials_tensor(t.dtype, division_safe)
    labels = division_safe_specials(t.dtype) if division_safe else special_values(t.dtype)
    start = start % t.numel()
    count = min(len(table), t.numel() - start)
    entries = [k for k in range(count) if kept is None or (k < len(kept) and kept[k])]
    if not entries:
        return t, ""
    out = t.contiguous().clone() if not t.is_contiguous() or t.storage_offset() else t
    put_elements(out, torch.tensor([start + k for k in entries]), table[torch.tensor(entries)])
    if len(entries) == count:
        return out, f"special values {count} of {len(table)} from {start}"
    return out, "special values " + ", ".join(f"{labels[k]!r} at {start + k}" for k in entries)


# Per table entry: 0 (the shrink target) leaves it out, 1..7 keeps it; a fresh draw keeps most entries.
_KEEP = st.integers(0, 7)


@functools.cache
def special_table_mask(size: int) -> st.SearchStrategy[tuple[int, ...]]:
    """`size` numbers, one per table entry, each shrinking to 0 (entry left out): the mask
    `apply_special_table(kept=...)` takes. A fixed number of draws, whatever the tensor's size."""
    return st.tuples(*[_KEEP] * size)


# 0: a few special values at drawn positions (`special_picks`); s > 0: the table from s - 1 (`special_table`).
_SPREAD = st.integers(0, 4)
# Where near-limit values are drawn (`draw_special_values(near_limits=True)`), two more spreads: 5 and 6, near-limit
# values (two special-value draws in seven).
_NEAR_LIMIT_SPREAD = st.integers(0, 6)
NEAR_LIMIT_DTYPES = (torch.float16, torch.bfloat16)
# One near-limit value: (around the smallest normal?, negative?, fraction 0..256, exponent choice 0..3).
_NEAR_LIMIT = st.tuples(st.booleans(), st.booleans(), st.integers(0, 256), st.integers(0, 3))
_NEAR_LIMIT_RUN = st.tuples(st.integers(0, 2**20), st.lists(_NEAR_LIMIT, min_size=1, max_size=4))
_TINY_EXPONENTS = (0, -1, 1, -2)  # around the smallest normal: it, the subnormals below, the normals above


def near_limit_value(dtype: torch.dtype, drawn: tuple[bool, bool, int, int]) -> float:
    """A value of `dtype` near its range limits: max/2 * (1 + f/256), from max/2 up to max itself (sums and
    products of two overflow); or smallest normal * 2^e * (1 + f/256), e in 0, -1, 1, -2 (results flush or
    go subnormal). Shrinks toward +max/2."""
    tiny, negative, fraction, exponent = drawn
    info = torch.finfo(dtype)
    if tiny:
        value = math.ldexp(info.smallest_normal, _TINY_EXPONENTS[exponent]) * (1 + fraction / 256)
    else:
        value = info.max / 2 * (1 + fraction / 256)
    stored = torch.tensor([-value if negative else value], dtype=torch.float64).to(dtype)
    return stored.item()


def apply_near_limits(t: torch.Tensor, start: int, drawn: list[tuple[bool, bool, int, int]]
                      ) -> tuple[torch.Tensor, str]:
    """`t` with the drawn near-limit values in order from flat `start` (two operands with the same start meet them
    pairwise: max/2 + max/2 overflows), and a note. A strided or offset `t` is copied first; a dense one is written
    in place (callers pass a case's own copy)."""
    if not t.numel() or t.dtype not in NEAR_LIMIT_DTYPES:
        return t, ""
    start = start % t.numel()
    chosen = [near_limit_value(t.dtype, d) for d in drawn[: t.numel() - start]]
    out = t.contiguous().clone() if not t.is_contiguous() or t.storage_offset() else t
    put_elements(out, torch.arange(start, start + len(chosen)), torch.tensor(chosen, dtype=t.dtype))
    return out, "near-limit values " + ", ".join(f"{v!r} at {start + k}" for k, v in enumerate(chosen))


def draw_special_values(draw, t: torch.Tensor, where: str = "input", *, max_picks: int = 2,
                        division_safe: bool = False, near_limits: bool = False) -> tuple[torch.Tensor, str]:
    """Special values in `t`, drawn: up to `max_picks` at drawn positions, or the table (masked) from
    a drawn start. Every part shrinks toward fewer special elements: the picks list toward empty,
    each table entry toward left out; a failure caused by one NaN keeps that NaN alone.

    With `near_limits` (float16 and bfloat16 tensors only), two draws in seven are instead a run of one to
    four values near the dtype's range limits from a drawn start (`near_limit_value`); the run shrinks
    to one value, +max/2, at position 0, and the spread choice toward the picks."""
    near_limits = near_limits and t.dtype in NEAR_LIMIT_DTYPES
    spread = draw(_NEAR_LIMIT_SPREAD if near_limits else _SPREAD, label=f"{where} special spread")
    if spread >= 5:
        start, drawn = draw(_NEAR_LIMIT_RUN, label=f"{where} near-limit values")
        return apply_near_limits(t, start, drawn)
    if spread:
        size = len(division_safe_specials(t.dtype) if division_safe else special_values(t.dtype))
        kept = draw(special_table_mask(size), label=f"{where} special table entries")
        return apply_special_table(t, spread - 1, division_safe=division_safe, kept=kept)
    return apply_special_picks(t, draw(special_picks(max_picks), label=f"{where} special values"),
                               division_safe=division_safe)


def draw_values(draw, shape: tuple[int, ...], dtype: torch.dtype, special: bool = True,
                max_special: int = 4) -> torch.Tensor:
    """`values` as a plain function of `draw`, for other strategies to call without a new strategy object."""
    fill = draw(_FILLS, label="fill")
    seed = draw(_SEEDS, label="seed")
    t = fill_tensor(shape, dtype, fill, seed)
    if special:
        t, _ = apply_special_picks(t, draw(special_picks(max_special), label="special values"))
    return t


@st.composite
def values(draw, shape: tuple[int, ...], dtype: torch.dtype, *, special: bool = True, max_special: int = 4):
    """A contiguous CPU tensor of `shape` and `dtype`: ordinary values with up to `max_special`
    special values at drawn positions. Shrinks toward small integers and no special values."""
    return draw_values(draw, tuple(shape), dtype, special, max_special)


_SAME_SIZE_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def put_elements(t: torch.Tensor, flat_index: torch.Tensor, elements: torch.Tensor) -> None:
    """Write `elements` at flat positions of contiguous `t`, bit for bit, for every dtype.

    index_put has no CPU kernel for several dtypes (uint16/32/64, some float8); writing through
    an integer view of the same item size moves the same bits.
    """
    target = t.view(-1)
    if not t.dtype.is_complex and t.dtype.itemsize in _SAME_SIZE_INT:
        target = target.view(_SAME_SIZE_INT[t.dtype.itemsize])
        elements = elements.view(_SAME_SIZE_INT[t.dtype.itemsize])
    target[flat_index] = elements
