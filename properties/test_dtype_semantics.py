"""Dtype semantics: type promotion, in-place casting rules, reductions with `dtype=`, comparisons and casts.

The item's dtype is the first operand's; the partner dtype is drawn from the dtypes the manifest
claims for the scenario (every pair gets drawn), and scalars come in every kind (Python bool, int,
float, complex: wrapped numbers; 0-dim tensors, on the device or on CPU). Each scenario is a
torch-only program (`torchcts.engine.programs`) run on CPU and on the device: the result's dtype,
shape and values must be CPU's, and where CPU raises (an in-place result that cannot be cast back,
a bool subtraction) the program returns the error's type name, which the device must give too.
Casts CPU leaves platform-defined (NaN, infinity or an out-of-range float to an integer) are
reported, not compared: the program masks those elements and returns how many it masked.
docs/suites/dtype_semantics.md says what each scenario proves and the suite's limits.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from torch.testing._internal.opinfo.core import SampleInput

from torchcts import dtypes as dtype_names
from torchcts.engine.programs import run_program
from torchcts.manifest.model import DtypeStatus
from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.strategies import Case, broadcastable_shapes, shapes

from torchcts.properties.dtype_programs import (  # noqa: F401 - the programs, one per scenario
    PROGRAMS, binary_promotion, cast, comparison_promotion, inplace_promotion, reduction_dtype, scalar_promotion)

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16",
          "float32", "float64", "complex32", "complex64", "complex128")
PARTNERS = tuple(dtype_names.lookup(name) for name in DTYPES)

BINARY_OPS = ("add", "sub", "mul", "div", "div_floor", "div_trunc", "remainder", "pow", "maximum", "minimum",
              "bitwise_and", "bitwise_xor", "logical_and", "logical_or", "eq", "lt", "where")
SCALAR_OPS = ("add", "sub", "mul", "div", "div_floor", "remainder", "pow", "bitwise_and", "eq", "lt", "clamp_min",
              "where")
INPLACE_OPS = ("add_", "sub_", "mul_", "div_", "div_floor_", "pow_", "bitwise_or_", "clamp_min_")
REDUCTIONS = ("sum", "prod", "cumsum", "mean", "nansum")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


# -- elements: small pools that shrink toward their first (plainest) value --------------------------------------

def _pool(dtype: torch.dtype, wide: bool) -> list:
    """Values for `dtype`: small ones every op keeps defined; with `wide`, also the range's edges and
    integers a narrower float rounds (2**24 + 1), where promotion decides the answer."""
    if dtype == torch.bool:
        return [False, True]
    if dtype.is_complex:
        return [0j, 1 + 0j, -1j, 0.5 + 2j, -2.5 - 0.5j, 1 / 3 + 1j, 3 + 0j]
    if dtype.is_floating_point:
        small = [0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1 / 3, -0.0, 2.0]
        return small + ([16777216.0, 2.0**31, -1e4, float("inf"), float("nan")] if wide else [])
    info = torch.iinfo(dtype)
    small = [v for v in (0, 1, -1, 2, -2, 3, -3, 5) if info.min <= v <= info.max]
    edges = [info.max, info.min, info.max - 1, 100, 127]
    edges += [2**24 + 1] if info.bits >= 32 else []
    edges += [2**53 + 1, -(2**40)] if info.bits == 64 and info.min < 0 else []
    return small + ([v for v in edges if info.min <= v <= info.max] if wide else [])


def elements(dtype: torch.dtype, shape: tuple[int, ...], wide: bool = False) -> st.SearchStrategy[torch.Tensor]:
    """A CPU tensor of `shape` and `dtype` whose elements come from the dtype's pool."""
    count = 1
    for side in shape:
        count *= side
    pool = _pool(dtype, wide)
    return st.lists(st.sampled_from(pool), min_size=count, max_size=count).map(
        lambda xs: torch.tensor(xs, dtype=dtype).reshape(shape))


def python_scalars(wide: bool = False) -> st.SearchStrategy:
    """Wrapped numbers of every kind: bool, int, float, complex (int and float beyond 32 bits with `wide`)."""
    ints = [0, 1, -1, 2, 3] + ([1000, 2**31, -(2**33), 2**62] if wide else [])
    floats = [0.0, 1.0, 2.5, -0.5, 1 / 3] + ([16777216.0, 1e10, float("inf"), float("nan")] if wide else [])
    return st.one_of(st.sampled_from([False, True]), st.sampled_from(ints), st.sampled_from(floats),
                     st.sampled_from([1j, 0.5 - 2j, 2 + 0j]))


def partner_dtypes(cts) -> st.SearchStrategy[torch.dtype]:
    """The dtypes the manifest claims for this scenario (the item's own first, so shrinking ends there)."""
    claimed = [d for d in PARTNERS if d is not None and d != cts.dtype
               and cts.manifest.dtype_status(d, cts.item.op) is DtypeStatus.CLAIMED]
    return st.sampled_from([cts.dtype, *claimed])


def small_shapes(min_dims: int = 0) -> st.SearchStrategy[tuple[int, ...]]:
    return shapes(min_dims=min_dims, max_dims=2, max_side=3, allow_empty=False)


def _name(dtype: torch.dtype) -> str:
    return dtype_names.canonical_name(dtype)


def _case(cts, input: torch.Tensor, args: tuple, kwargs: dict, *what: str) -> Case:
    return Case(cts.item.op, "scenario", cts.dtype, SampleInput(input, args=args, kwargs=kwargs), 0,
                transforms=(f"input {_name(input.dtype)}{list(input.shape)}", *what))


# -- cases, one strategy per scenario --------------------------------------------------------------------------------

def binary_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape), label="input")
        partner = draw(partner_dtypes(cts), label="partner dtype")
        other_shape = draw(broadcastable_shapes(shape), label="other shape")
        other = draw(elements(partner, other_shape), label="other")
        op = draw(st.sampled_from(BINARY_OPS), label="op")
        on_cpu = other.dim() == 0 and draw(st.booleans(), label="0-dim other on CPU")
        return _case(cts, input, (other, op, on_cpu), {},
                     f"{op}(input, {_name(partner)}{list(other_shape)}{' on CPU' if on_cpu else ''})")
    return draw()


def scalar_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape), label="input")
        op = draw(st.sampled_from(SCALAR_OPS), label="op")
        scalar = draw(python_scalars(wide=op != "pow"), label="scalar")
        reverse = op not in ("clamp_min", "where") and draw(st.booleans(), label="scalar first")
        return _case(cts, input, (scalar, op, reverse), {},
                     f"{op}({repr(scalar)} ({type(scalar).__name__}), input)" if reverse
                     else f"{op}(input, {repr(scalar)} ({type(scalar).__name__}))")
    return draw()


def inplace_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape), label="input")
        op = draw(st.sampled_from(INPLACE_OPS), label="op")
        if draw(st.booleans(), label="python scalar"):
            other = draw(python_scalars(), label="scalar")
            shown = f"{repr(other)} ({type(other).__name__})"
        else:
            partner = draw(partner_dtypes(cts), label="partner dtype")
            other = draw(elements(partner, draw(broadcastable_shapes(shape), label="other shape")), label="other")
            shown = f"{_name(partner)}{list(other.shape)}"
        return _case(cts, input, (other, op), {}, f"input.{op}({shown})")
    return draw()


def reduction_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(min_dims=1), label="input shape")
        op = draw(st.sampled_from(REDUCTIONS), label="op")
        wide = op in ("sum", "cumsum", "nansum") and not (cts.dtype.is_floating_point or cts.dtype.is_complex)
        input = draw(elements(cts.dtype, shape, wide=wide), label="input")
        dtype = draw(st.one_of(st.none(), partner_dtypes(cts)), label="dtype=")
        dim = draw(st.sampled_from([None, 0, -1]), label="dim") if op != "cumsum" else draw(
            st.sampled_from([0, -1]), label="dim")
        return _case(cts, input, (op, dtype, dim), {},
                     f"{op}(input{'' if dim is None else f', dim={dim}'}, dtype={dtype})")
    return draw()


def comparison_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape, wide=True), label="input")
        op = draw(st.sampled_from(COMPARISONS), label="op")
        if draw(st.booleans(), label="python scalar"):
            other = draw(python_scalars(wide=True), label="scalar")
            shown = f"{repr(other)} ({type(other).__name__})"
        else:
            partner = draw(partner_dtypes(cts), label="partner dtype")
            other = draw(elements(partner, draw(broadcastable_shapes(shape), label="other shape"), wide=True),
                         label="other")
            shown = f"{_name(partner)}{list(other.shape)}"
        reverse = draw(st.booleans(), label="other first")
        return _case(cts, input, (other, op, reverse), {},
                     f"{op}({shown}, input)" if reverse else f"{op}(input, {shown})")
    return draw()


def cast_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape, wide=True), label="input")
        dtype = draw(partner_dtypes(cts), label="to dtype")
        return _case(cts, input, (dtype,), {}, f"input.to({dtype})")
    return draw()


STRATEGIES = {"binary_promotion": binary_cases, "scalar_promotion": scalar_cases,
              "inplace_promotion": inplace_cases, "reduction_dtype": reduction_cases,
              "comparison_promotion": comparison_cases, "cast": cast_cases}


# -- the check ------------------------------------------------------------------------------------------------------

def _raised(result) -> str | None:
    """The error type name a program returned for a raise ("raises RuntimeError"), or None."""
    first = result[0] if isinstance(result, tuple) and result else result
    return first if isinstance(first, str) and first.startswith("raises ") else None


def promotion_check(cts, program):
    run = run_program(program)

    def check(case) -> None:
        call = case.transforms[-1] if case.transforms else program.__name__
        expected = cts.on_cpu_call(run, case.sample)
        actual = cts.on_device_call(run, case.sample, what=f" ({call})")
        want, got = _raised(expected), _raised(actual)
        if want != got:
            raise AssertionError(f"{call} on {case.transforms[0]}: {cts.target.describe()} "
                                 f"{got if got else 'returns a result'} where CPU "
                                 f"{want if want else 'returns a result'}")
        cts.assert_matches(actual, expected, what=f"{call} on {case.transforms[0]}", strides=False)

    return check


@register_property("dtype_semantics", capability="inference", level=3,
                   items=ScenarioItems(tuple(STRATEGIES), DTYPES, programs=PROGRAMS))
def test_dtype_semantics(cts):
    scenario = cts.item.op
    cts.run(STRATEGIES[scenario](cts), promotion_check(cts, PROGRAMS[scenario]))
