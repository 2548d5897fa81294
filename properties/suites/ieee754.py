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

This module holds the suite's table: its programs, the bounds of what a case stores and the bit-for-bit check.
The elements and each scenario's case draw are `properties/ieee754_cases.py`.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchcts.cases.bounds import CaseParams, Dtypes, Tensors
from torchcts.engine.programs import run_program
from torchcts.properties.ieee754_cases import DECIMALS, MAX_ELEMENTS, SORT_K, scenario_cases
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("NaN propagation, signed zero, infinities, subnormals (no flush to zero), rounding modes, and the range "
          "limits (finite inputs that overflow give ±inf, not max; that underflow give the subnormal or signed "
          "zero, elementwise, exp, casts, sums and matrix products), bit for bit")

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


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


# -- bounds of the stored values (`cases.bounds`): tensors of at most MAX_ELEMENTS elements in one or two rows ------

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
                        cases=lambda cts: scenario_cases(cts.item.op, cts.dtype))
               for name, program in PROGRAMS.items()])


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
    if not isinstance(value, float) or value != 0:
        return f"{value!r}"
    return "-0.0" if math.copysign(1, value) < 0 else "0.0"


def _call_text(scenario: str, sample: Any) -> str:
    def show(value):
        return f"tensor({value.tolist()}, dtype={value.dtype})" if isinstance(value, torch.Tensor) else repr(value)

    parts = [show(sample.input), *map(show, sample.args), *(f"{k}={show(v)}" for k, v in sample.kwargs.items())]
    return f"{scenario}({', '.join(parts)})"
