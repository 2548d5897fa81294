"""The ieee754 suite's cases: elements exactly representable in the dtype, shaped into one- or two-row tensors,
and the draw of each scenario's case.

Elements are Python floats, simplest first (small integers, halves, then ±0, ±inf, NaN, subnormals, powers of
two, values at the range limits), so a failure shrinks to the one or two special values that matter. Every case
stores tensors of at most `MAX_ELEMENTS` elements and the plain values `SORT_K` and `DECIMALS` bound.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import Ints
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input

MAX_ELEMENTS = 8
SORT_K, DECIMALS = Ints(1, MAX_ELEMENTS), Ints(-2, 3)  # nan_sort's k and round_decimals' decimals
_HALF_DTYPES = (torch.float16, torch.bfloat16)


# -- elements: Python floats exactly representable in the dtype, simplest first ------------------

SPECIALS = (math.nan, math.inf, -math.inf, -0.0, 0.0)


def small_integers(bound: int = 4) -> st.SearchStrategy[float]:
    return st.integers(-bound, bound).map(float)


def halves(bound: int = 8) -> st.SearchStrategy[float]:
    return st.integers(-2 * bound, 2 * bound).map(lambda k: k / 2)


def quarters(bound: int = 16) -> st.SearchStrategy[float]:
    return st.integers(-4 * bound, 4 * bound).map(lambda k: k / 4)


def specials() -> st.SearchStrategy[float]:
    return st.sampled_from(SPECIALS)


def subnormals(dtype: torch.dtype) -> st.SearchStrategy[float]:
    """±k times the smallest subnormal, k up to the widest subnormal mantissa (shrinks toward the smallest)."""
    info = torch.finfo(dtype)
    tiny, largest = info.smallest_normal * info.eps, round(1 / info.eps) - 1
    return st.tuples(st.booleans(), st.integers(1, largest)).map(lambda p: (-1.0 if p[0] else 1.0) * p[1] * tiny)


def near_smallest_normal(dtype: torch.dtype) -> st.SearchStrategy[float]:
    """±(1 + j eps) 2^e times the smallest normal: products and differences of these underflow."""
    info = torch.finfo(dtype)
    return st.tuples(st.booleans(), st.integers(0, 15), st.integers(0, 4)).map(
        lambda p: (-1.0 if p[0] else 1.0) * (1 + p[1] * info.eps) * math.ldexp(info.smallest_normal, p[2]))


def powers_of_two(dtype: torch.dtype) -> st.SearchStrategy[float]:
    """±2^e with |e| up to the mantissa width plus a few: scale factors that move values into the subnormals."""
    span = round(-math.log2(torch.finfo(dtype).eps)) + 3
    return st.tuples(st.booleans(), st.integers(-span, span)).map(lambda p: (-1.0 if p[0] else 1.0) * 2.0 ** p[1])


def rounding_edges(dtype: torch.dtype) -> st.SearchStrategy[float]:
    """Values naive rounding gets wrong: 0.5 - ulp (floor(x + 0.5) gives 1), the largest halves, the first integers."""
    eps = torch.finfo(dtype).eps
    top = 2.0 ** round(-math.log2(eps))  # from here on every value is an integer
    edges = (0.5 - eps / 4, top / 2 - 0.5, top / 2 + 0.5, top - 1, top, top + 2, 1.5 - eps)
    return st.sampled_from(edges).flatmap(lambda v: st.sampled_from((v, -v)))


def _signed(p: tuple) -> float:
    return -p[1] if p[0] else p[1]


def max_exponent(dtype: torch.dtype) -> int:
    """e with 2^e <= max < 2^(e + 1)."""
    return math.frexp(torch.finfo(dtype).max)[1] - 1


def tiny_exponent(dtype: torch.dtype) -> int:
    """E with 2^-E the smallest subnormal."""
    info = torch.finfo(dtype)
    return -math.frexp(info.smallest_normal * info.eps)[1] + 1


def large_units(dtype: torch.dtype) -> st.SearchStrategy[float]:
    """k * 2^(emax - 3), k in 1..15 (shrinks toward 1): 15 units are below max, 16 past it, so sums and small
    multiples of them are exact (at most 6 significant bits) until they pass max, and then overflow."""
    unit = math.ldexp(1.0, max_exponent(dtype) - 3)
    return st.integers(1, 15).map(lambda k: k * unit)


def large(dtype: torch.dtype) -> st.SearchStrategy[float]:
    """±(large units or max)."""
    return st.tuples(st.booleans(), large_units(dtype) | st.just(torch.finfo(dtype).max)).map(_signed)


def exp_argument_values(dtype: torch.dtype) -> list[float]:
    """0 (the shrink target), then integers around log(max) and log(smallest subnormal / 2), each at least 1 from
    the threshold where exp's result overflows (or rounds to 0), so an exp off by an ulp gives the same answer."""
    info = torch.finfo(dtype)
    over, under = math.log(info.max), math.log(info.smallest_normal * info.eps) - math.log(2)
    near = [v for t in (over, under) for v in range(math.floor(t) - 2, math.ceil(t) + 3) if abs(v - t) >= 1]
    return [0.0] + [float(v) for v in near]


def tiny_powers(dtype: torch.dtype, exponent: int, spread: int) -> st.SearchStrategy[float]:
    """±2^-(exponent + i), i in 0..spread (shrinks toward +2^-exponent)."""
    return st.tuples(st.booleans(), st.integers(0, spread)).map(
        lambda p: (-1.0 if p[0] else 1.0) * math.ldexp(1.0, -exponent - p[1]))


def same_sign_pairs(x_elements: st.SearchStrategy[float], y_elements: st.SearchStrategy[float], dtype: torch.dtype
                    ) -> st.SearchStrategy[tuple[torch.Tensor, torch.Tensor]]:
    """`pairs` of non-negative elements with one drawn sign for all of x: every sum and product of a case has one
    sign, so no order of accumulation can cancel a partial overflow."""
    return st.tuples(st.booleans(), pairs(x_elements, dtype, y_elements)).map(
        lambda p: (-p[1][0], p[1][1]) if p[0] else p[1])


# -- tensors: a list of elements shaped (rows, columns) ---------------------------------------------

def shaped(flat: list, dtype: torch.dtype, two_rows: bool, power_of_two_columns: bool = False) -> torch.Tensor:
    """`flat` as a tensor of `dtype`: two rows when asked and the length allows, else one; with
    `power_of_two_columns`, cut to the longest power-of-two row (a mean then divides exactly)."""
    rows = 2 if two_rows and len(flat) % 2 == 0 else 1
    columns = len(flat) // rows
    if power_of_two_columns:
        columns = 2 ** int(math.log2(columns))
    return exact_tensor(flat[: rows * columns], dtype).reshape(rows, columns)


def grids(elements: st.SearchStrategy, dtype: torch.dtype, *, power_of_two_columns: bool = False
          ) -> st.SearchStrategy[torch.Tensor]:
    """A (rows, columns) tensor of `dtype` from 1 to MAX_ELEMENTS drawn elements. Shrinks by deleting
    elements (down to one) and simplifying those left, and toward one row."""
    return st.tuples(st.lists(elements, min_size=1, max_size=MAX_ELEMENTS), st.booleans()).map(
        lambda drawn: shaped(drawn[0], dtype, drawn[1], power_of_two_columns))


def exact_tensor(values: list[float], dtype: torch.dtype) -> torch.Tensor:
    """`values` (each exactly representable in `dtype`, or a cast under test) as a tensor of `dtype`."""
    return torch.tensor(values, dtype=torch.float64).to(dtype)


def pairs(elements: st.SearchStrategy[float], dtype: torch.dtype, other: st.SearchStrategy[float] | None = None
          ) -> st.SearchStrategy[tuple[torch.Tensor, torch.Tensor]]:
    """Two tensors of one shape, x from `elements` and y from `other` (or `elements`), drawn as a list
    of (x, y) element pairs so shrinking deletes a position from both at once."""
    positions = st.tuples(elements, elements if other is None else other)
    return st.tuples(st.lists(positions, min_size=1, max_size=MAX_ELEMENTS), st.booleans()).map(
        lambda drawn: (shaped([x for x, _ in drawn[0]], dtype, drawn[1]),
                       shaped([y for _, y in drawn[0]], dtype, drawn[1])))


def _case(scenario: str, dtype: torch.dtype, sample: Any, drawn: str) -> Case:
    return Case(scenario, "scenario", dtype, sample, 0, transforms=(drawn,))


def scenario_cases(scenario: str, dtype: torch.dtype) -> st.SearchStrategy[Case]:
    """The cases of one scenario for one floating dtype."""
    ordinary = small_integers() | halves()
    with_specials = small_integers() | specials() | halves()
    if scenario in ("nan_minmax", "inf_arithmetic", "signed_zero", "division_modes"):
        # signed_zero: no NaN, so every sign it observes is defined
        elements = small_integers(2) | st.sampled_from((-0.0, 0.0, math.inf, -math.inf)) \
            if scenario == "signed_zero" else with_specials
        return pairs(elements, dtype).map(
            lambda xy: _case(scenario, dtype, sample_input(xy[0], args=(xy[1],)), "x and y: exact elements"))
    if scenario == "nan_sort":
        return st.tuples(grids(with_specials, dtype), SORT_K.strategy()).map(
            lambda xk: _case(scenario, dtype, sample_input(xk[0], args=(min(xk[1], xk[0].shape[-1]),)),
                             "x: exact elements; k"))
    if scenario == "special_reductions":
        reduced = small_integers(2) | specials() | st.sampled_from((0.5, -0.5, 1.5, -1.5))
        return grids(reduced, dtype, power_of_two_columns=True).map(
            lambda x: _case(scenario, dtype, sample_input(x), "x: small integers, halves and specials"))
    if scenario == "subnormal_arithmetic":
        tiny = subnormals(dtype) | near_smallest_normal(dtype)
        return pairs(tiny, dtype, tiny | powers_of_two(dtype) | ordinary).map(
            lambda xy: _case(scenario, dtype, sample_input(xy[0], args=(xy[1],)), "x: tiny values; y: tiny or scales"))
    if scenario == "subnormal_casts":
        return subnormal_cast_cases(dtype)
    if scenario == "rounding":
        return grids(halves(16) | rounding_edges(dtype) | specials() | quarters(), dtype).map(
            lambda x: _case(scenario, dtype, sample_input(x), "x: halves, quarters, specials and rounding edges"))
    if scenario == "round_decimals":
        return st.tuples(grids(quarters() | specials(), dtype), DECIMALS.strategy()).map(
            lambda xd: _case(scenario, dtype, sample_input(xd[0], kwargs={"decimals": xd[1]}), "x: quarters; decimals"))
    if scenario in ("overflow", "overflow_exp", "overflow_casts", "overflow_accumulation", "underflow",
                    "underflow_accumulation"):
        return range_limit_cases(scenario, dtype)
    raise ValueError(f"unknown ieee754 scenario {scenario!r}")


_CAST_SOURCE = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float64,
                torch.float64: torch.float32}


def subnormal_cast_cases(dtype: torch.dtype) -> st.SearchStrategy[Case]:
    """A wider source (narrower for float64) holding values around the target's subnormal range, with
    two extra mantissa bits so the cast rounds (ties included), and subnormals of the item's dtype."""
    source = _CAST_SOURCE[dtype]
    narrow = dtype if dtype != torch.float64 else torch.float32  # the dtype whose subnormal range is crossed
    info = torch.finfo(narrow)
    tiny, bits = info.smallest_normal * info.eps, round(-math.log2(info.eps))
    around = st.tuples(st.booleans(), st.integers(1, 2 ** (bits + 3)), st.integers(-3, 1)).map(
        lambda p: (-1.0 if p[0] else 1.0) * math.ldexp(p[1] * tiny, p[2]))
    own = subnormals(dtype) | near_smallest_normal(dtype)
    return st.tuples(grids(around | specials(), source), grids(own, dtype)).map(
        lambda t: _case("subnormal_casts", dtype, sample_input(t[0], args=(dtype, t[1])),
                        f"source {source}: around the {narrow} subnormals; values: {dtype} subnormals"))


def range_limit_cases(scenario: str, dtype: torch.dtype) -> st.SearchStrategy[Case]:
    """Finite inputs whose exact results pass the dtype's max or fall below its smallest subnormal, built so every
    result is exact, +-inf or a correctly rounded subnormal or zero in any accumulation order and precision."""
    if scenario == "overflow":
        return pairs(large(dtype), dtype, large(dtype) | small_integers() | halves()).map(
            lambda xy: _case(scenario, dtype, sample_input(xy[0], args=(xy[1],)), "x: large; y: large or small"))
    if scenario == "overflow_exp":
        return grids(st.sampled_from(exp_argument_values(dtype)), dtype).map(
            lambda x: _case(scenario, dtype, sample_input(x), "x: integers around log(max) and log(tiny)"))
    if scenario == "overflow_casts":
        return overflow_cast_cases(dtype)
    if scenario == "overflow_accumulation":
        return same_sign_pairs(large_units(dtype), st.sampled_from((1.0, 0.5, 0.25, 2.0)), dtype).map(
            lambda xy: _case(scenario, dtype, sample_input(xy[0], args=(xy[1],)), "x: same-sign large; y: scales"))
    tiny = tiny_exponent(dtype)
    if scenario == "underflow":
        # products 2^-(tiny - 6) .. 2^-(tiny + 7), times 1 or 3: subnormals, ties at half the smallest, zeros
        x = st.tuples(st.sampled_from((1.0, 3.0)), tiny_powers(dtype, tiny - tiny // 2 - 3, 6)).map(
            lambda p: p[0] * p[1])
        return pairs(x, dtype, tiny_powers(dtype, tiny // 2 - 3, 7)).map(
            lambda xy: _case(scenario, dtype, sample_input(xy[0], args=(xy[1],)), "x, y: small powers of two"))
    # products of two are at least the smallest subnormal and sums of 8 at most 128 of them: exact in any order
    return pairs(tiny_powers(dtype, tiny // 2 - 2, 2), dtype, tiny_powers(dtype, tiny - tiny // 2 - 2, 2)).map(
        lambda xy: _case(scenario, dtype, sample_input(xy[0], args=(xy[1].abs(),)), "x, y: small powers of two"))


def overflow_cast_cases(dtype: torch.dtype) -> st.SearchStrategy[Case]:
    """A wider source (float64 for float32 and float64) holding ±(max + j ulp / 4) of the target (float32 for
    float64), j in -4..8: below max, between max and the tie max + ulp/2 (rounds to max), the tie itself (rounds
    to even: inf) and past it (inf)."""
    source = torch.float32 if dtype in _HALF_DTYPES else torch.float64
    target = dtype if dtype != torch.float64 else torch.float32
    info = torch.finfo(target)
    quarter_ulp = math.ldexp(info.eps, max_exponent(target) - 2)
    around = st.tuples(st.booleans(), st.integers(-4, 8)).map(
        lambda p: _signed((p[0], info.max + p[1] * quarter_ulp)))
    return grids(around, source).map(
        lambda s: _case("overflow_casts", dtype, sample_input(s, args=(target,)),
                        f"source {source}: around {target} max"))
