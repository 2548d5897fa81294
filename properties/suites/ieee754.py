"""IEEE-754 semantics: NaN propagation, signed zero, infinities, subnormals and rounding, exactly as on CPU.

Each scenario is a torch-only program (`torchcts.engine.programs`) run on CPU and on the device.
The inputs are short lists of elements exactly representable in the dtype (small integers,
halves, ±0, ±inf, NaN, subnormals, powers of two), chosen so every observed result is defined
bit for bit: the ops are correctly rounded (add, sub, mul, div, casts, round, floor, ...), sums
of small integers are exact in any order, and where a result is not exact (atan2's multiples of
pi) the program observes an exact function of it. The comparison is therefore exact: NaN where
CPU gives NaN, the sign of every zero and infinity (`signbit`), and equal values; there is no
tolerance to hide a flushed subnormal or a lost -0.0. Under `meta` only dtypes and shapes are
compared. Element lists shrink toward fewer, simpler elements (small integers first), so a
failure shrinks to the one or two special values that matter.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from hypothesis import strategies as st

from torchcts.engine.programs import run_program
from torchcts.cases.bounds import CaseParams, Dtypes, Ints, Tensors
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("NaN propagation, signed zero, infinities, subnormals (no flush to zero), rounding modes, and the range "
          "limits (finite inputs that overflow give ±inf, not max; that underflow give the subnormal or signed "
          "zero, elementwise, exp, casts, sums and matrix products), bit for bit")

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
_HALF_DTYPES = (torch.float16, torch.bfloat16)
MAX_ELEMENTS = 8


# -- the programs (module-level, torch and math only: export writes their source into a script) --

def nan_minmax(x, y):
    """min/max family with NaN operands; `+ 0.0` makes the sign of a tied ±0 pair irrelevant."""
    return (torch.maximum(x, y) + 0.0, torch.minimum(x, y) + 0.0, torch.fmax(x, y) + 0.0, torch.fmin(x, y) + 0.0,
            torch.max(x) + 0.0, torch.min(x) + 0.0, torch.amax(x, -1) + 0.0, torch.amin(x, -1) + 0.0,
            torch.max(x, -1).values + 0.0, torch.min(x, -1).values + 0.0, torch.isnan(torch.max(x, -1).values))


def nan_sort(x, k):
    """Stable sorts put NaN last (first descending); topk treats NaN as the largest value."""
    ascending = torch.sort(x, dim=-1, stable=True)
    descending = torch.sort(x, dim=-1, descending=True, stable=True)
    return (ascending.values, ascending.indices, descending.values, descending.indices,
            torch.argsort(x, dim=-1, stable=True), torch.topk(x, k, dim=-1).values + 0.0)


def special_reductions(x):
    """Reductions of small integers, halves, ±0, ±inf and NaN: exact in any summation order."""
    return (torch.sum(x), torch.sum(x, -1), torch.prod(x, -1), torch.mean(x, -1), torch.cumsum(x, -1),
            torch.cumprod(x, -1), torch.nansum(x, -1))


def signed_zero(x, y):
    """The sign of zero through reciprocals, copysign, atan2, negation and sums of -0.0."""
    negative_zeros = torch.zeros_like(x).neg()
    quarter_turns = torch.round(torch.atan2(x, y) * (4.0 / math.pi))  # atan2 of 0/inf operands: multiples of pi/4
    return (torch.reciprocal(x), 1.0 / x, torch.ones_like(x) / x, torch.copysign(torch.ones_like(x), x),
            torch.copysign(y, x), torch.atan2(x, y).signbit(), quarter_turns, x + y, x - y, x * y, -x, torch.abs(x),
            negative_zeros + negative_zeros, torch.sum(negative_zeros), torch.max(negative_zeros),
            torch.min(negative_zeros), torch.amax(negative_zeros, -1), torch.cumsum(negative_zeros, -1),
            torch.where(x == 0, x, y))


def inf_arithmetic(x, y):
    """±inf and NaN through the four operations, tensor-tensor and tensor-scalar (inf - inf, inf * 0, x / 0)."""
    return (x + y, x - y, x * y, x / y, x - x, x * 0.0, x / 0.0, x * math.inf, x - math.inf, x / math.inf,
            torch.reciprocal(x))


def subnormal_arithmetic(x, y):
    """Subnormal operands and results (products, quotients, sums, differences): gradual underflow, no flush."""
    return (x + y, x - y, x * y, x / y, x * 0.5, x / 4.0, -x, torch.abs(x), x == 0, torch.signbit(x),
            x.to(torch.float64) if x.dtype != torch.float64 else x.to(torch.float32))


def subnormal_casts(source, target_dtype, values):
    """A cast into the target's subnormal range (rounding half to even), and the dtype's subnormals widened."""
    return source.to(target_dtype), values.to(source.dtype), values.to(target_dtype)


def rounding(x):
    """round (half to even), floor, ceil, trunc, with their signed zeros."""
    return torch.round(x), torch.floor(x), torch.ceil(x), torch.trunc(x)


def round_decimals(x, decimals):
    """round(decimals=) of quarters: x * 10**decimals is exact in float32, so half-to-even decides the result."""
    return torch.round(x, decimals=decimals)


def division_modes(x, y):
    """Division rounding modes and remainders with negatives, zeros and specials."""
    return (torch.div(x, y, rounding_mode="floor"), torch.div(x, y, rounding_mode="trunc"), torch.floor_divide(x, y),
            torch.remainder(x, y), torch.fmod(x, y))


def overflow(x, y):
    """Finite operands whose exact result exceeds the dtype's max: +-inf, not the largest finite value."""
    return x + y, x - y, x * y, x * 2.0, x / 0.5, -x * 4.0


def overflow_exp(x):
    """exp past log(max) is +inf, below log(smallest subnormal / 2) is 0.0, in between finite and nonzero (observed
    through isinf and == 0, with x at least 1 away from both thresholds, where exp's last bit cannot decide)."""
    e = torch.exp(x)
    return torch.isinf(e), e == 0, torch.signbit(e)


def overflow_casts(source, target_dtype):
    """A cast from a wider dtype of values around the target's max: past max + ulp/2 (ties too) +-inf, else rounded."""
    return source.to(target_dtype)


def overflow_accumulation(x, y):
    """Sums, cumulative sums and matrix products of same-sign large values: exact until they pass max, then inf."""
    return torch.sum(x), torch.sum(x, -1), torch.cumsum(x, -1), x @ y.mT, torch.mv(x, y[0]), torch.dot(x[0], y[0])


def underflow(x, y):
    """Products of small finite values below the normal range: the correctly rounded subnormal, or a zero with the
    product's sign, never a flush; dividing by the reciprocal (2^k, or inf past max) gives the same or +-0."""
    return x * y, x / torch.reciprocal(y), (x * y) == 0


def underflow_accumulation(x, y):
    """Products and matrix products of small powers of two: subnormal results kept, and signed zeros below them."""
    return torch.prod(x, -1), torch.cumprod(x, -1), x @ y.mT, torch.mv(x, y[0])


PROGRAMS = {program.__name__: program for program in (
    nan_minmax, nan_sort, special_reductions, signed_zero, inf_arithmetic, subnormal_arithmetic, subnormal_casts,
    rounding, round_decimals, division_modes, overflow, overflow_exp, overflow_casts, overflow_accumulation,
    underflow, underflow_accumulation)}


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
    return st.tuples(st.lists(st.tuples(elements, elements if other is None else other), min_size=1, max_size=MAX_ELEMENTS),
                     st.booleans()).map(
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


# -- bounds of the stored values (`cases.bounds`): tensors of at most MAX_ELEMENTS elements in one or two rows ------

SORT_K, DECIMALS = Ints(1, MAX_ELEMENTS), Ints(-2, 3)
_GRID = Tensors(MAX_ELEMENTS, 2)


def _k_within(params: dict) -> bool:
    return params["k"] <= params["input"].shape[-1]


PARAMS = {
    **{name: CaseParams({"y": _GRID}, input=_GRID) for name in (
        "nan_minmax", "signed_zero", "inf_arithmetic", "subnormal_arithmetic", "division_modes", "overflow",
        "overflow_accumulation", "underflow", "underflow_accumulation")},
    **{name: CaseParams({}, input=_GRID) for name in ("special_reductions", "rounding", "overflow_exp")},
    "nan_sort": CaseParams({"k": SORT_K}, input=_GRID, rules=(("k at most the input's last side", _k_within),)),
    "round_decimals": CaseParams({}, input=_GRID, kwargs={"decimals": DECIMALS}),
    "subnormal_casts": CaseParams({"target_dtype": Dtypes(FLOAT_DTYPES), "values": _GRID}, input=_GRID),
    "overflow_casts": CaseParams({"target_dtype": Dtypes(("float16", "bfloat16", "float32"))}, input=_GRID),
}
assert set(PARAMS) == set(PROGRAMS), "every scenario declares the bounds of what it stores"


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
    around = st.tuples(st.booleans(), st.integers(-4, 8)).map(lambda p: _signed((p[0], info.max + p[1] * quarter_ulp)))
    return grids(around, source).map(
        lambda s: _case("overflow_casts", dtype, sample_input(s, args=(target,)), f"source {source}: around {target} max"))


# -- the property ---------------------------------------------------------------------------------

# the aten overloads ieee754 dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten._to_copy.default", "aten.abs.default", "aten.add.Tensor", "aten.amax.default", "aten.amin.default",
    "aten.atan2.default", "aten.ceil.default", "aten.copysign.Tensor", "aten.cumprod.default",
    "aten.cumsum.default", "aten.div.Tensor", "aten.div.Tensor_mode", "aten.dot.default", "aten.eq.Scalar",
    "aten.exp.default", "aten.floor.default", "aten.floor_divide.default", "aten.fmax.default", "aten.fmin.default",
    "aten.fmod.Tensor", "aten.isinf.default", "aten.isnan.default", "aten.max.default", "aten.max.dim",
    "aten.maximum.default", "aten.mean.dim", "aten.min.default", "aten.min.dim", "aten.minimum.default",
    "aten.mm.default", "aten.mul.Tensor", "aten.mv.default", "aten.nansum.default", "aten.neg.default",
    "aten.ones_like.default", "aten.prod.dim_int", "aten.reciprocal.default", "aten.remainder.Tensor",
    "aten.round.decimals", "aten.round.default", "aten.select.int", "aten.signbit.default", "aten.sort.stable",
    "aten.sub.Tensor", "aten.sum.default", "aten.sum.dim_IntList", "aten.topk.default", "aten.transpose.int",
    "aten.trunc.default", "aten.where.self", "aten.zeros_like.default",
)


def bits_check(cts, row):
    """The device gives CPU's result bit for bit: NaN where NaN, every zero's sign, infinities, subnormals."""
    scenario = row.name
    run = run_program(row.program)

    def check(case: Case) -> None:
        expected = cts.on_cpu_call(run, case.sample)
        actual = cts.on_device_call(run, case.sample, what=f" ({scenario})")
        if not cts.target.compares_values:
            cts.assert_matches(actual, expected, what=scenario)
            return
        assert_exactly_equal(actual, expected, call=_call_text(scenario, case.sample), what=cts.target.describe())

    return check


test_ieee754 = scenario_suite(
    "ieee754", capability="ieee754", level=3, dtypes=FLOAT_DTYPES, overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], program, Custom(bits_check, bits=True),
                        cases=lambda cts: scenario_cases(cts.item.op, cts.dtype)) for name, program in PROGRAMS.items()])


def assert_exactly_equal(actual, expected, *, call: str, what: str) -> None:
    """AssertionError naming the output, the multi-index and both values unless `actual` is `expected` bit for
    bit: same structure, dtypes and shapes, NaN at the same places, equal values with equal signs."""
    got, want = _leaves(actual), _leaves(expected)
    if len(got) != len(want):
        raise AssertionError(f"{what} differs from CPU: {len(got)} outputs, CPU gives {len(want)}, in {call}")
    for number, (a, e) in enumerate(zip(got, want)):
        where = f"output {number} of {call}"
        if not isinstance(e, torch.Tensor) or not isinstance(a, torch.Tensor):
            if a != e or type(a) is not type(e):
                raise AssertionError(f"{what} differs from CPU: {where} is {a!r}, CPU gives {e!r}")
            continue
        a = a.detach().cpu()
        if (a.dtype, a.shape) != (e.dtype, e.shape):
            raise AssertionError(f"{what} differs from CPU: {where} has dtype {a.dtype} shape {tuple(a.shape)}, "
                                 f"CPU gives {e.dtype} {tuple(e.shape)}")
        differs = _bitwise_differs(a, e)
        if bool(differs.any()):
            index = tuple(int(i) for i in differs.nonzero()[0])
            raise AssertionError(f"{what} differs from CPU: {where}: out{list(index)} = {_show(a[index])}, "
                                 f"expected {_show(e[index])} ({int(differs.sum())} of {e.numel()} elements differ)")


def _leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _bitwise_differs(a: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    if not (e.is_floating_point() or e.is_complex()):
        return a != e
    if e.is_complex():
        return _bitwise_differs(torch.view_as_real(a), torch.view_as_real(e)).any(-1)
    nan = e.isnan()
    return (a.isnan() != nan) | (~nan & ((a != e) | (a.signbit() != e.signbit())))


def _show(element: torch.Tensor) -> str:
    value = element.item()
    return f"{value!r}" if not isinstance(value, float) or value != 0 else ("-0.0" if math.copysign(1, value) < 0 else "0.0")


def _call_text(scenario: str, sample: Any) -> str:
    def show(value):
        return f"tensor({value.tolist()}, dtype={value.dtype})" if isinstance(value, torch.Tensor) else repr(value)

    parts = [show(sample.input), *map(show, sample.args), *(f"{k}={show(v)}" for k, v in sample.kwargs.items())]
    return f"{scenario}({', '.join(parts)})"
