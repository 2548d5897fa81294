"""Dtype semantics: type promotion, in-place casting rules, reductions with `dtype=`, comparisons and casts.

The item's dtype is the first operand's; the partner dtype is drawn from the dtypes the manifest
claims for the scenario (every pair gets drawn), and scalars come in every kind (Python bool, int,
float, complex: wrapped numbers; 0-dim tensors, on the device or on CPU). Each scenario is a
torch-only program (`torchcts.engine.programs`, in `dtype_programs`) that runs every op of the
scenario on one case and returns {op: result}, on CPU and on the device: each result's dtype,
shape and values must be CPU's, and where CPU raises (an in-place result that cannot be cast back,
a bool subtraction) the program returns the error's type name, which the device must give too.
Casts CPU leaves platform-defined (NaN, infinity or an out-of-range float to an integer) are
reported, not compared: the program masks those elements and returns how many it masked.
docs/suites/dtype_semantics.md says what each scenario proves and the suite's limits.

Under torch.compile a program cannot record an op's refusal: dynamo raises it while tracing (wrapped:
`TorchRuntimeError`), or the compiled graph raises it when it runs, in either case outside the
program's `try`. The compiled program then raises its first refusal. Where it is CPU's own refusal
(CPU's program under dynamo alone raises a cause of the same type and first line, and CPU's eager
program records that type: `torchcts.engine.programs`), or a NotImplementedError naming the kernel
of an op CPU has no kernel for either (whose entry is not compared), the case cannot be compared
under torch.compile (`runtime_unavailable`: the other ops' results are lost); any other refusal,
or a compile failure, stays the device's error.
"""

from __future__ import annotations

import re

import torch
from hypothesis import strategies as st

from torchcts import dtypes as dtype_names
from torchcts.cases.bounds import CaseParams, Dtypes, Either, Flag, OneOf, Optional, Tensors
from torchcts.engine.context import CpuRejects
from torchcts.engine.error_cause import ErrorCause
from torchcts.engine.programs import device_result, first_line, recorded_refusal, run_program, same_refusal
from torchcts.cases.scenario_case import scenario_case
from torchcts.manifest.model import DtypeStatus
from torchcts.properties.dtype_programs import PROGRAMS  # the scenarios' torch-only programs
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case, broadcastable_shapes, shapes

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = "type promotion for dtype pairs and scalar kinds, in-place cast errors, `dtype=` reductions, casts"

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16",
          "float32", "float64", "complex32", "complex64", "complex128")
PARTNERS = tuple(dtype_names.lookup(name) for name in DTYPES)


# -- elements: small pools that shrink toward their first (plainest) value --------------------------------------

def _pools(dtype: torch.dtype) -> tuple[list, list]:
    """(small, edges) for `dtype`: small values every op keeps defined, and the edges where promotion decides
    the answer: the range's ends, integers a narrower float rounds (2**24 + 1), infinities and NaN."""
    if dtype == torch.bool:
        return [False, True], []
    if dtype.is_complex:
        return [0j, 1 + 0j, -1j, 0.5 + 2j, -2.5 - 0.5j, 1 / 3 + 1j, 3 + 0j], [complex(2.0**24 + 1, 1), 1e10 + 0j]
    if dtype.is_floating_point:
        return ([0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1 / 3, -0.0, 2.0],
                [16777216.0, 16777217.0, 2.0**31, -1e4, 1e10, float("inf"), float("nan")])
    info = torch.iinfo(dtype)
    small = [v for v in (0, 1, -1, 2, -2, 3, -3, 5) if info.min <= v <= info.max]
    edges = [info.max, info.min, info.max - 1, 100, 127, 2**24 + 1, 2**31 + 1, 2**53 + 1, -(2**40)]
    return small, [v for v in dict.fromkeys(edges) if info.min <= v <= info.max]


def element_values(dtype: torch.dtype, wide: bool) -> st.SearchStrategy:
    """One element: a small value, or (with `wide`) as often an edge value; shrinks to the first small one."""
    small, edges = _pools(dtype)
    if wide and edges:
        return st.one_of(st.sampled_from(small), st.sampled_from(edges))
    return st.sampled_from(small)


def elements(dtype: torch.dtype, shape: tuple[int, ...], wide: bool = False) -> st.SearchStrategy[torch.Tensor]:
    """A CPU tensor of `shape` and `dtype` whose elements come from the dtype's pools."""
    count = 1
    for side in shape:
        count *= side
    return st.lists(element_values(dtype, wide), min_size=count, max_size=count).map(
        lambda xs: torch.tensor(xs, dtype=dtype).reshape(shape))


def python_scalars(wide: bool = False) -> st.SearchStrategy:
    """Wrapped numbers of every kind: bool, int, float, complex (with `wide`, as often beyond 32 bits,
    rounded by float32, or infinite and NaN)."""
    ints, floats = st.sampled_from(_SCALAR_INTS), st.sampled_from(_SCALAR_FLOATS)
    if wide:
        ints = st.one_of(ints, st.sampled_from(_WIDE_INTS))
        floats = st.one_of(floats, st.sampled_from(_WIDE_FLOATS))
    return st.one_of(st.sampled_from(_SCALAR_BOOLS), ints, floats, st.sampled_from(_SCALAR_COMPLEX))


_SCALAR_BOOLS, _SCALAR_COMPLEX = [False, True], [1j, 0.5 - 2j, 2 + 0j]
_SCALAR_INTS, _SCALAR_FLOATS = [0, 1, -1, 2, 3], [0.0, 1.0, 2.5, -0.5, 1 / 3]
_WIDE_INTS, _WIDE_FLOATS = [1000, 2**31, -(2**33), 2**62], [16777216.0, 16777217.0, 1e10, float("inf"), float("nan")]
# the scalars `python_scalars` draws, as a bound
SCALARS = OneOf((*_SCALAR_BOOLS, *_SCALAR_INTS, *_SCALAR_FLOATS, *_SCALAR_COMPLEX))
WIDE_SCALARS = OneOf((*SCALARS.values, *_WIDE_INTS, *_WIDE_FLOATS))


def partner_dtypes(cts) -> st.SearchStrategy[torch.dtype]:
    """The dtypes the manifest claims for this scenario (the item's own first, so shrinking ends there)."""
    claimed = [d for d in PARTNERS if d is not None and d != cts.dtype
               and cts.manifest.dtype_status(d, cts.item.op) is DtypeStatus.CLAIMED]
    return st.sampled_from([cts.dtype, *claimed])


SMALL_DIMS, SMALL_SIDE = 2, 3


def small_shapes(min_dims: int = 0) -> st.SearchStrategy[tuple[int, ...]]:
    return shapes(min_dims=min_dims, max_dims=SMALL_DIMS, max_side=SMALL_SIDE, allow_empty=False)


REDUCTION_DIMS = (None, 0, -1)
_OPERAND = Tensors(SMALL_SIDE ** SMALL_DIMS, SMALL_DIMS)  # an input, or an other that broadcasts to it


def _other_broadcasts_to_input(params: dict) -> bool:
    """A tensor `other` is drawn by `broadcastable_shapes(input's shape)`: the op's result has the input's shape, never
    the larger one of two operands that broadcast each other."""
    other, input = params["other"], params["input"]
    return not isinstance(other, torch.Tensor) or torch.broadcast_shapes(input.shape, other.shape) == input.shape


_BROADCASTS_TO_INPUT = ("a tensor other broadcasts to the input's shape", _other_broadcasts_to_input)
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the strategies below draw within them
    "binary_promotion": CaseParams({"other": _OPERAND, "other_on_cpu": Flag()}, input=_OPERAND,
                                   rules=(_BROADCASTS_TO_INPUT,)),
    "scalar_promotion": CaseParams({"scalar": WIDE_SCALARS, "reverse": Flag()}, input=_OPERAND),
    "inplace_promotion": CaseParams({"other": Either((_OPERAND, SCALARS))}, input=_OPERAND,
                                    rules=(_BROADCASTS_TO_INPUT,)),
    "reduction_dtype": CaseParams({"dtype": Optional(Dtypes(DTYPES)), "dim": OneOf(REDUCTION_DIMS)}, input=_OPERAND),
    "comparison_promotion": CaseParams({"other": Either((_OPERAND, WIDE_SCALARS)), "reverse": Flag()},
                                       input=_OPERAND, rules=(_BROADCASTS_TO_INPUT,)),
    "cast": CaseParams({"dtype": Dtypes(DTYPES)}, input=_OPERAND),
}


def _name(dtype: torch.dtype) -> str:
    return dtype_names.canonical_name(dtype)


def _case(cts, values: dict, *what: str) -> Case:
    """The scenario's case of named `values` (its `PARAMS`), said as the input's dtype and shape, then `what`."""
    input = values["input"]
    return scenario_case(cts.item.op, cts.dtype, PARAMS[cts.item.op], values,
                         (f"input {_name(input.dtype)}{list(input.shape)}", *what))


# -- cases, one strategy per scenario --------------------------------------------------------------------------------

def binary_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape), label="input")
        partner = draw(partner_dtypes(cts), label="partner dtype")
        other_shape = draw(broadcastable_shapes(shape), label="other shape")
        other = draw(elements(partner, other_shape), label="other")
        on_cpu = other.dim() == 0 and draw(st.booleans(), label="0-dim other on CPU")
        return _case(cts, {"input": input, "other": other, "other_on_cpu": on_cpu},
                     f"op(input, {_name(partner)}{list(other_shape)}{' on CPU' if on_cpu else ''})")
    return draw()


def scalar_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape), label="input")
        scalar = draw(python_scalars(wide=True), label="scalar")
        reverse = draw(st.booleans(), label="scalar first")
        shown = f"{scalar!r} ({type(scalar).__name__})"
        return _case(cts, {"input": input, "scalar": scalar, "reverse": reverse},
                     f"op({shown}, input)" if reverse else f"op(input, {shown})")
    return draw()


def _tensor_or_scalar(cts, shape: tuple[int, ...], wide: bool) -> st.SearchStrategy[tuple[object, str]]:
    """(other, how to show it): a Python scalar, or a tensor of a claimed dtype broadcastable to `shape`."""
    @st.composite
    def draw(draw):
        if draw(st.booleans(), label="python scalar"):
            scalar = draw(python_scalars(wide=wide), label="scalar")
            return scalar, f"{scalar!r} ({type(scalar).__name__})"
        partner = draw(partner_dtypes(cts), label="partner dtype")
        other = draw(elements(partner, draw(broadcastable_shapes(shape), label="other shape"), wide=wide),
                     label="other")
        return other, f"{_name(partner)}{list(other.shape)}"
    return draw()


def inplace_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape), label="input")
        other, shown = draw(_tensor_or_scalar(cts, shape, wide=False), label="other")
        return _case(cts, {"input": input, "other": other}, f"input.op({shown})")
    return draw()


def reduction_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(min_dims=1), label="input shape")
        integral = not (cts.dtype.is_floating_point or cts.dtype.is_complex)
        input = draw(elements(cts.dtype, shape, wide=integral), label="input")  # integer sums that overflow
        dtype = draw(st.one_of(st.none(), partner_dtypes(cts)), label="dtype=")
        dim = draw(st.sampled_from(REDUCTION_DIMS), label="dim")
        return _case(cts, {"input": input, "dtype": dtype, "dim": dim}, f"op(input{'' if dim is None else f', dim={dim}'}, dtype={dtype})")
    return draw()


def comparison_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape, wide=True), label="input")
        other, shown = draw(_tensor_or_scalar(cts, shape, wide=True), label="other")
        reverse = draw(st.booleans(), label="other first")
        return _case(cts, {"input": input, "other": other, "reverse": reverse},
                     f"op({shown}, input)" if reverse else f"op(input, {shown})")
    return draw()


def cast_cases(cts) -> st.SearchStrategy[Case]:
    @st.composite
    def draw(draw):
        shape = draw(small_shapes(), label="input shape")
        input = draw(elements(cts.dtype, shape, wide=True), label="input")
        dtype = draw(partner_dtypes(cts), label="to dtype")
        return _case(cts, {"input": input, "dtype": dtype}, f"to(input, {dtype})")
    return draw()


STRATEGIES = {"binary_promotion": binary_cases, "scalar_promotion": scalar_cases,
              "inplace_promotion": inplace_cases, "reduction_dtype": reduction_cases,
              "comparison_promotion": comparison_cases, "cast": cast_cases}


# -- the check ------------------------------------------------------------------------------------------------------

def _raised(result) -> str | None:
    """The error type a program returned for a raise ("raises RuntimeError" -> "RuntimeError"), or None."""
    first = result[0] if isinstance(result, tuple) and result else result
    if isinstance(first, str) and first.startswith(("raises ", "unsupported ")):
        return first.split(" ", 1)[1]
    return None


def _says(result) -> str:
    return f"raises {_raised(result)}" if _raised(result) else "returns a result"


def _cpu_lacks(result) -> bool:
    """Whether CPU's entry says CPU itself cannot run the op here (no kernel for the dtype, a CPU-only limit)."""
    first = result[0] if isinstance(result, tuple) and result else result
    return isinstance(first, str) and (first.startswith("unsupported ") or first == "raises NotImplementedError")


# the dispatcher's "no kernel for this dtype" message: '"lt_cpu" not implemented for 'ComplexHalf'' names the kernel
_NO_DTYPE_KERNEL = re.compile(r'"(\w+)" not implemented for \'')


def _names_kernel_of(message: str, op: str) -> bool:
    """Whether a missing-dtype-kernel message names the kernel of `op` (an entry's name: "lt", "div_floor",
    "bitwise_or_"): the kernel is the op's name, or it with one device suffix ("lt_cpu", "add_stub")."""
    found = _NO_DTYPE_KERNEL.match(message)
    if found is None:
        return False
    kernel, stem = found.group(1), op.rstrip("_")
    return kernel == stem or (kernel.startswith(stem + "_") and "_" not in kernel[len(stem) + 1:])


def _refused_as_cpu(expected: dict, cause: ErrorCause, reference: ErrorCause | None) -> str | None:
    """Which of CPU's entries the compiled program's refusal (`cause`, behind torch.compile's wrappers) stands for,
    or None (the device's error stands):
    - the same refusal: CPU's program under dynamo alone (`reference`) raises it too, same type and first line,
      and CPU's eager program records a refusal of that type;
    - an op CPU has no kernel for (not compared): only a NotImplementedError whose first line is the dispatcher's
      missing-dtype-kernel message naming that op's kernel. Any other refusal is not excused by it."""
    if same_refusal(cause, reference):
        for op, want in expected.items():
            if _raised(want) is not None and recorded_refusal(want, cause.error) is not None:
                return f"{op}: {_says(want)}"
    if isinstance(cause.error, NotImplementedError):
        message = first_line(cause.error)
        for op, want in expected.items():
            if _cpu_lacks(want) and _names_kernel_of(message, op):
                return f"{op}, which CPU has no kernel for ({message[:120]})"
    return None


def promotion_check(cts, program):
    """Each op's entry of the program's {op: result} on the device against CPU's: the same rejection, or the
    same dtype, shape and values. Ops CPU has no kernel for in these dtypes are left out."""
    run = run_program(program)

    def check(case) -> None:
        inputs, call = case.transforms[0], case.transforms[-1]
        expected = cts.on_cpu_call(run, case.sample)
        actual = device_result(cts, run, case.sample, expected, f" ({call} on {inputs})", _refused_as_cpu)
        answered = 0
        for op, want in expected.items():
            if _cpu_lacks(want):  # CPU implements no such op for these dtypes: no oracle
                continue
            answered += 1
            got = actual.get(op) if isinstance(actual, dict) else actual
            shown = call.replace("op", op, 1) + f" on {inputs}"
            if _raised(want) != _raised(got):
                raise AssertionError(f"{shown}: {cts.target.describe()} {_says(got)} where CPU {_says(want)}")
            if _raised(want) is None:  # both raised the same type: the words of the messages are each kernel's own
                cts.assert_matches(got, want, what=shown, strides=False)
        if not answered:
            raise CpuRejects(f"CPU implements none of {program.__name__}'s ops for {inputs}, {call}")

    return check


# the aten overloads dtype_semantics dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten.abs.default", "aten.add.Tensor", "aten.add_.Tensor", "aten.bitwise_and.Scalar", "aten.bitwise_and.Tensor",
    "aten.bitwise_not.default", "aten.bitwise_or_.Scalar", "aten.bitwise_or_.Tensor", "aten.bitwise_xor.Tensor",
    "aten.clamp.default", "aten.clamp_min_.Tensor", "aten.clamp_min_.default", "aten.clone.default",
    "aten.cumsum.default", "aten.div.Tensor", "aten.div.Tensor_mode", "aten.div_.Tensor", "aten.div_.Tensor_mode",
    "aten.empty.memory_format", "aten.eq.Scalar", "aten.eq.Tensor", "aten.fill_.Scalar",
    "aten.floor_divide.default", "aten.ge.Scalar", "aten.ge.Tensor", "aten.gt.Scalar", "aten.gt.Tensor",
    "aten.le.Scalar", "aten.le.Tensor", "aten.logical_and.default", "aten.logical_or.default", "aten.lt.Scalar",
    "aten.lt.Tensor", "aten.maximum.default", "aten.mean.default", "aten.mean.dim", "aten.minimum.default",
    "aten.mul.Tensor", "aten.mul_.Tensor", "aten.nansum.default", "aten.ne.Scalar", "aten.ne.Tensor",
    "aten.ones_like.default", "aten.pow.Scalar", "aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor",
    "aten.pow_.Scalar", "aten.pow_.Tensor", "aten.prod.default", "aten.prod.dim_int", "aten.reciprocal.default",
    "aten.remainder.Scalar", "aten.remainder.Scalar_Tensor", "aten.remainder.Tensor", "aten.rsub.Scalar",
    "aten.select.int", "aten.sub.Tensor", "aten.sub_.Tensor", "aten.sum.default", "aten.sum.dim_IntList",
    "aten.trunc.default", "aten.view_as_real.default", "aten.where.self", "aten.zero_.default",
    "aten.zeros_like.default",
)


# each scenario's row: its program on CPU and on the device, op by op (`promotion_check`: a refusal compared by type,
# ops CPU lacks left out, compiled refusals excused only as CPU's own)
test_dtype_semantics = scenario_suite(
    "dtype_semantics", capability="inference", level=3, dtypes=DTYPES, overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], PROGRAMS[name], Custom(lambda cts, row: promotion_check(cts, row.program)),
                        cases=STRATEGIES[name])
               for name in STRATEGIES])
