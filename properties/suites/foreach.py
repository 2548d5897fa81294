"""Foreach: the device's `torch._foreach_*` ops give CPU's results, list by list, tensor by tensor.

Each scenario is a program (`torchcts.engine.programs`; `torchcts.properties.foreach_programs`) that
calls one foreach overload family and returns what it gives: the result list (out-of-place) or the
mutated input list (in-place). CPU's foreach kernels are the slow path, a loop of the per-tensor op over
the list, so CPU's result is the per-tensor oracle; a multi-tensor (chunked, fused) device kernel must
agree with it for lists of mixed sizes (0-dim, empty, up to 4-d), non-contiguous members, lengths across
the chunk boundaries of CUDA-like `multi_tensor_apply` (tensors per launch 24..110, 65536 elements per
chunk), scalar lists, 0-dim tensor scalars and mixed dtypes. Values, dtypes and the memory order of
every tensor (dimensions longer than 1) are compared; see docs/suites/foreach.md.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Dtypes, Either, Flag, Ints, Lists, OneOf, Optional, Tensors, Tuples
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.foreach_programs import FLOATING_PROGRAMS, PROGRAMS  # the scenarios' torch-only programs
from torchcts.properties.scenario_table import Scenario, Tolerance, scenario_suite
from torchcts.strategies import Case, claimed_dtypes, tensors
from torchcts.strategies.values import Fill, fill_tensor

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("`torch._foreach_*` equals the per-tensor op across list lengths, sizes, dtypes, scalar lists, in-place "
          "forms")

DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64")
FLOATING_DTYPES = ("float32", "float64", "float16", "bfloat16")

# -- the ops each overload family draws, in shrink order -----------------------------------------------

_INTEGER_SAFE = ("add", "sub", "mul", "maximum", "minimum", "clamp_min", "clamp_max")  # keep an integer dtype
_BINARY_OPS = {
    "binary_list": ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"),
    "binary_scalar": ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"),
    "binary_scalar_list": ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"),
    "binary_tensor": ("add", "mul", "div"),
    "mixed_dtypes": ("add", "mul", "sub", "div"),
}
_UNARY_OPS = ("abs", "neg", "exp", "sqrt", "sign", "ceil", "floor", "round", "trunc", "log", "sin", "cos", "tanh",
              "sigmoid", "reciprocal", "expm1", "log1p", "erf", "rsqrt", "frac", "atan")
_UNARY_INTEGER_INPLACE = ("abs", "neg", "sign", "ceil", "floor", "round", "trunc")
# CUDA's multi_tensor_apply launches at most 110/64/48/36/30 tensors (1..5 lists) and 65536 elements a chunk.
_LONG_LENGTHS = (24, 25, 30, 31, 36, 37, 48, 49, 64, 65, 110, 111, 23, 29, 35, 47, 63, 109)
_LONG_OPS = ("add_list", "mul_scalar_list", "exp", "norm", "add_list_inplace", "addcmul_scalar_list")
_CHUNK_ELEMENTS = 65536

# -- strategies ------------------------------------------------------------------------------------------


def _integer(dtype: torch.dtype) -> bool:
    return not (dtype.is_floating_point or dtype.is_complex)


MEMBER_DIMS, MEMBER_SIDE, LIST_LENGTH = 3, 4, 5  # tensor lists' members and length
INTEGER_SCALARS, POW_INTEGERS = (1, 2, -1, 0, 3, -4), Ints(0, 3)
FLOAT_SCALARS, POW_FLOATS = (2.0, 0.5, -1.0, 1.0, 0.0, -2.5, 3.0, 1e-3), (2.0, 0.5, 1.0, 0.0, 3.0, -1.0)
ALPHAS, FLOAT_ALPHAS = (2, -1, 3), (2.0, -1.0, 0.5)
LERP_WEIGHTS = (0.5, 0.0, 1.0, 0.25, -0.5, 1.5)
NORM_ORDERS = (2, 1, float("inf"), 3.0, 0)
SEED = Ints(0, 2**16)
LONG_SIZE = Ints(0, 6)  # long lists' members: 0..6 elements, one maybe past one or two chunks


def tensor_lists(dtype: torch.dtype, *, writable: bool,
                 max_len: int = LIST_LENGTH) -> st.SearchStrategy[list[torch.Tensor]]:
    """Lists of 1..`max_len` CPU tensors of `dtype`, each of its own shape (0-dim, empty, up to 3-d) and
    layout; `writable` leaves out overlapping layouts (an in-place op's targets). Shrinks toward one
    contiguous 0-dim tensor of a small integer."""
    member = tensors(dtype, max_dims=MEMBER_DIMS, max_side=MEMBER_SIDE, allow_overlap=not writable)
    return st.lists(member, min_size=1, max_size=max_len)


def matching(tensors_: list[torch.Tensor], dtype: torch.dtype | None = None, *,
             dtypes: tuple[torch.dtype, ...] = ()) -> st.SearchStrategy[list[torch.Tensor]]:
    """A list of tensors with the shapes of `tensors_`, each of `dtype` (default: its partner's) or of
    one of `dtypes` (mixed), each in its own layout."""
    def member(t: torch.Tensor) -> st.SearchStrategy[torch.Tensor]:
        if dtypes:
            return st.sampled_from(dtypes).flatmap(lambda d: tensors(d, shape=tuple(t.shape)))
        return tensors(dtype or t.dtype, shape=tuple(t.shape))

    return st.tuples(*(member(t) for t in tensors_)).map(list)


def scalars(dtype: torch.dtype, op: str) -> st.SearchStrategy[int | float]:
    """A Python scalar operand: ints for integer dtypes (a float would change the result dtype, which
    in-place forms reject), small floats and ties otherwise; non-negative for pow."""
    if _integer(dtype):
        return POW_INTEGERS.strategy() if op == "pow" else st.sampled_from(INTEGER_SCALARS)
    return st.sampled_from(FLOAT_SCALARS if op != "pow" else POW_FLOATS)


def _case(scenario: str, dtype: torch.dtype, call: str, values: dict, drawn: str = "") -> Case:
    """The case of `scenario` from its named values, described by its call and the input list's shapes."""
    members = values["input"] if isinstance(values["input"], list) else []
    shapes = ", ".join("x".join(map(str, t.shape)) or "0-dim" for t in members[:8])
    shapes += " ..." if len(members) > 8 else ""
    described = (call, f"{len(members)} tensors [{shapes}]") + ((drawn,) if drawn else ())
    params = PARAMS.get(scenario) or FLOATING_PARAMS[scenario]
    return scenario_case(scenario, dtype, params, values, described)


@st.composite
def binary_cases(draw, scenario: str, dtype: torch.dtype, manifest: object) -> Case:
    integer = _integer(dtype)
    ops = [op for op in _BINARY_OPS[scenario] if not (integer and op == "pow" and scenario == "binary_list")]
    op = draw(st.sampled_from(ops), label="op")
    inplace_ok = not (integer and op not in _INTEGER_SAFE)
    inplace = draw(st.booleans(), label="in-place") and inplace_ok
    input = draw(tensor_lists(dtype, writable=inplace), label="input")
    alpha = None
    if op in ("add", "sub") and scenario in ("binary_list", "mixed_dtypes") and draw(st.booleans(), label="alpha?"):
        alpha = draw(st.sampled_from(ALPHAS if integer else FLOAT_ALPHAS), label="alpha")
    if scenario in ("binary_list", "mixed_dtypes"):
        partners = ()
        if scenario == "mixed_dtypes":
            partners = _partners(dtype, manifest, same_kind=inplace or integer)
        other = draw(matching(input, dtype, dtypes=partners), label="other")
    elif scenario == "binary_scalar":
        other = draw(scalars(dtype, op), label="scalar")
    elif scenario == "binary_scalar_list":
        other = draw(st.lists(scalars(dtype, op), min_size=len(input), max_size=len(input)), label="scalars")
    else:
        other = draw(tensors(dtype, shape=(), relayout=False), label="0-dim tensor")
    name = f"torch._foreach_{op}{'_' if inplace else ''}"
    call = f"{name}(input, {type(other).__name__} other{'' if alpha is None else f', alpha={alpha}'})"
    return _case(scenario, dtype, call, {"input": input, "other": other, "op": op, "alpha": alpha, "inplace": inplace})


def _partners(dtype: torch.dtype, manifest: object, *, same_kind: bool) -> tuple[torch.dtype, ...]:
    """The dtypes mixed into a list with `dtype`: those the manifest claims among the foreach dtypes,
    of the same kind (floating or integer) where the in-place result must keep `dtype`."""
    wanted = [getattr(torch, name) for name in DTYPES]
    claimed = [d for d in claimed_dtypes(manifest) if d in wanted] or [dtype]
    if same_kind:
        claimed = [d for d in claimed if _integer(d) == _integer(dtype)]
    return tuple(dict.fromkeys([dtype, *claimed]))


@st.composite
def pointwise_cases(draw, dtype: torch.dtype) -> Case:
    op = "addcmul" if _integer(dtype) else draw(st.sampled_from(("addcmul", "addcdiv")), label="op")
    inplace = draw(st.booleans(), label="in-place")
    input = draw(tensor_lists(dtype, writable=inplace), label="input")
    tensor1 = draw(matching(input), label="tensor1")
    tensor2 = draw(matching(input), label="tensor2")
    kind = draw(st.sampled_from(("none", "scalar", "scalar_list", "tensor")), label="value kind")
    value = None
    if kind == "scalar":
        value = draw(scalars(dtype, op), label="value")
    elif kind in ("scalar_list", "tensor"):
        value = draw(st.lists(scalars(dtype, op), min_size=len(input), max_size=len(input)), label="values")
        value = ("tensor", [float(v) for v in value]) if kind == "tensor" and not _integer(dtype) else value
    call = f"torch._foreach_{op}{'_' if inplace else ''}(input, tensor1, tensor2, {kind} value)"
    return _case("pointwise", dtype, call, {"input": input, "tensor1": tensor1, "tensor2": tensor2, "op": op,
                                            "value": value, "inplace": inplace})


@st.composite
def unary_cases(draw, dtype: torch.dtype) -> Case:
    op = draw(st.sampled_from(_UNARY_OPS[:-2] if _integer(dtype) else _UNARY_OPS), label="op")  # no int frac/atan
    inplace = draw(st.booleans(), label="in-place") and (not _integer(dtype) or op in _UNARY_INTEGER_INPLACE)
    input = draw(tensor_lists(dtype, writable=inplace), label="input")
    return _case("unary", dtype, f"torch._foreach_{op}{'_' if inplace else ''}(input)",
                 {"input": input, "op": op, "inplace": inplace})


@st.composite
def lerp_cases(draw, dtype: torch.dtype) -> Case:
    inplace = draw(st.booleans(), label="in-place")
    input = draw(tensor_lists(dtype, writable=inplace), label="input")
    end = draw(matching(input), label="end")
    kind = draw(st.sampled_from(("scalar", "tensor_list", "scalar_list")), label="weight kind")
    weights = st.sampled_from(LERP_WEIGHTS)
    if kind == "scalar":
        weight = draw(weights, label="weight")
    elif kind == "scalar_list":
        weight = draw(st.lists(weights, min_size=len(input), max_size=len(input)), label="weights")
    else:
        weight = draw(matching(input), label="weight tensors")
    call = f"torch._foreach_lerp{'_' if inplace else ''}(input, end, {kind} weight)"
    return _case("lerp", dtype, call, {"input": input, "end": end, "weight": weight, "inplace": inplace})


@st.composite
def norm_cases(draw, dtype: torch.dtype) -> Case:
    input = draw(tensor_lists(dtype, writable=False), label="input")
    ord = draw(st.sampled_from(NORM_ORDERS), label="ord")
    wider = torch.float64 if dtype == torch.float64 else torch.float32
    result_dtype = draw(st.sampled_from((None, wider)), label="dtype")
    return _case("norm", dtype, f"torch._foreach_norm(input, {ord}, dtype={result_dtype})",
                 {"input": input, "ord": ord, "dtype": result_dtype})


@st.composite
def zero_cases(draw, dtype: torch.dtype) -> Case:
    input = draw(tensor_lists(dtype, writable=True), label="input")
    return _case("zero", dtype, "torch._foreach_zero_(input)", {"input": input})


@st.composite
def copy_cases(draw, dtype: torch.dtype, manifest: object) -> Case:
    input = draw(tensor_lists(dtype, writable=True), label="input")
    src = draw(matching(input, dtypes=_partners(dtype, manifest, same_kind=False)), label="src")
    non_blocking = draw(st.booleans(), label="non_blocking")
    return _case("copy", dtype, f"torch._foreach_copy_(input, src, non_blocking={non_blocking})",
                 {"input": input, "src": src, "non_blocking": non_blocking})


def _plain_list(sizes: list[int], dtype: torch.dtype, seed: int) -> list[torch.Tensor]:
    """Contiguous 1-d tensors of the given sizes, values from one seed (cheap for long lists)."""
    return [fill_tensor((size,), dtype, Fill.NORMAL, seed + i) for i, size in enumerate(sizes)]


@st.composite
def long_list_cases(draw, dtype: torch.dtype) -> Case:
    """A list of 23..111 tensors (lengths at the launch boundaries), optionally one past a 65536-element chunk.
    Sizes (1..6, some empty), values and scalars come from one seed, so a case is a few choices."""
    length = draw(st.sampled_from(_LONG_LENGTHS), label="list length")
    ops = _LONG_OPS if not _integer(dtype) else ("add_list", "mul_scalar_list", "add_list_inplace")
    op = draw(st.sampled_from(ops), label="op")
    seed = draw(SEED.strategy(), label="seed")
    generator = torch.Generator().manual_seed(seed)
    choices = LONG_SIZE.high + 1
    sizes = ((torch.randint(0, choices, (length,), generator=generator) + 1) % choices).tolist()
    factors = [(2, 3, -1, 1)[i] for i in torch.randint(0, 4, (length,), generator=generator).tolist()]
    big = draw(st.sampled_from((None, -1, 0, length // 2)), label="tensor past one chunk")
    if big is not None:
        sizes[big] = draw(st.sampled_from((_CHUNK_ELEMENTS + 1, 2 * _CHUNK_ELEMENTS + 3)), label="its size")
    input = _plain_list(sizes, dtype, seed)
    other = _plain_list(sizes, dtype, seed + length)
    return _case("long_lists", dtype, f"torch._foreach ({op}) over {length} tensors",
                 {"input": input, "other": other, "scalars": factors, "op": op})


# -- bounds of the stored values (`cases.bounds`): what the strategies above draw ------------------------------------

_LIST = Lists(Tensors(MEMBER_SIDE ** MEMBER_DIMS, MEMBER_DIMS), 1, LIST_LENGTH)
_SCALAR = Either((POW_INTEGERS, OneOf((*INTEGER_SCALARS, *FLOAT_SCALARS, *POW_FLOATS))))
_LONG_MEMBER = Tensors(2 * _CHUNK_ELEMENTS + 3, 1)
_LONG_LIST = Lists(_LONG_MEMBER, min(_LONG_LENGTHS), max(_LONG_LENGTHS))


def _as_long(*names: str):
    """A rule: those of the values named that are lists hold as many entries as the input."""
    return (f"{', '.join(names)}: as many as the input's tensors",
            lambda p: all(len(p[name]) == len(p["input"]) for name in names if isinstance(p[name], (list, tuple))))


def _same_shapes(*names: str):
    """A rule: those of the values named that are tensor lists hold the shapes of the input's tensors, index by index
    (`matching` draws them so; members of other shapes would broadcast into tensors far past the member bound)."""
    def holds(params: dict) -> bool:
        shapes = [tuple(t.shape) for t in params["input"]]
        tensor_lists = [params[name] for name in names if isinstance(params[name], (list, tuple))
                        and all(isinstance(t, torch.Tensor) for t in params[name])]
        return all([tuple(t.shape) for t in members] == shapes for members in tensor_lists)
    return f"{', '.join(names)}: tensors of the input's tensors' shapes", holds


def _one_past_a_chunk(params: dict) -> bool:
    """Long lists hold at most one tensor of more than LONG_SIZE.high elements (the one past a chunk)."""
    return all(sum(t.numel() > LONG_SIZE.high for t in params[name]) <= 1 for name in ("input", "other"))


def _binary_params(scenario: str) -> CaseParams:
    other = {"binary_list": _LIST, "mixed_dtypes": _LIST, "binary_scalar": _SCALAR,
             "binary_scalar_list": Lists(_SCALAR, 1, LIST_LENGTH), "binary_tensor": Tensors(1, 0)}[scenario]
    return CaseParams({"other": other, "op": OneOf(_BINARY_OPS[scenario]),
                       "alpha": Optional(OneOf((*ALPHAS, *FLOAT_ALPHAS))), "inplace": Flag()},
                      input=_LIST, rules=(_as_long("other"), _same_shapes("other")))


_VALUES = Either((_SCALAR, Lists(_SCALAR, 1, LIST_LENGTH),
                  Tuples((OneOf(("tensor",)), Lists(OneOf(tuple(float(v) for v in (*FLOAT_SCALARS, *POW_FLOATS))),
                                                    1, LIST_LENGTH)))))
PARAMS = {  # what each scenario's cases store
    **{scenario: _binary_params(scenario) for scenario in _BINARY_OPS},
    "pointwise": CaseParams({"tensor1": _LIST, "tensor2": _LIST, "op": OneOf(("addcmul", "addcdiv")),
                             "value": Optional(_VALUES), "inplace": Flag()}, input=_LIST,
                            rules=(_as_long("tensor1", "tensor2"), _same_shapes("tensor1", "tensor2"))),
    "unary": CaseParams({"op": OneOf(_UNARY_OPS), "inplace": Flag()}, input=_LIST),
    "zero": CaseParams({}, input=_LIST),
    "copy": CaseParams({"src": _LIST, "non_blocking": Flag()}, input=_LIST,
                       rules=(_as_long("src"), _same_shapes("src"))),
    "long_lists": CaseParams({"other": _LONG_LIST, "scalars": Lists(OneOf((2, 3, -1, 1)), min(_LONG_LENGTHS),
                                                                      max(_LONG_LENGTHS)), "op": OneOf(_LONG_OPS)},
                             input=_LONG_LIST,
                             rules=(_as_long("other", "scalars"), _same_shapes("other"),
                                    (f"at most one tensor past {LONG_SIZE.high} elements a list", _one_past_a_chunk))),
}
FLOATING_PARAMS = {
    "lerp": CaseParams({"end": _LIST, "weight": Either((OneOf(LERP_WEIGHTS), Lists(OneOf(LERP_WEIGHTS), 1, LIST_LENGTH),
                                                        _LIST)), "inplace": Flag()},
                       input=_LIST, rules=(_as_long("end", "weight"), _same_shapes("end", "weight"))),
    "norm": CaseParams({"ord": OneOf(NORM_ORDERS), "dtype": Optional(Dtypes(("float32", "float64")))}, input=_LIST),
}


def cases_for(scenario: str, dtype: torch.dtype, manifest: object) -> st.SearchStrategy[Case]:
    if scenario in _BINARY_OPS:
        return binary_cases(scenario, dtype, manifest)
    builders = {"pointwise": pointwise_cases, "unary": unary_cases, "lerp": lerp_cases, "norm": norm_cases,
                "zero": zero_cases, "long_lists": long_list_cases}
    if scenario == "copy":
        return copy_cases(dtype, manifest)
    return builders[scenario](dtype)


# The device's foreach result equals CPU's (values, dtype, memory order of dimensions longer than 1); below 32 bits,
# transcendental results may differ by the last bit of a differently ordered evaluation, so the tolerance doubles.
COMPARISON = Tolerance(strides="significant", dtype_widen={"float16": 2.0, "bfloat16": 2.0})


def _rows(programs: dict, params: dict) -> list[Scenario]:
    """One row per overload family: its program, its bounds, the comparison above, its cases (`cases_for`)."""
    return [Scenario(name, params[name], program, COMPARISON,
                     cases=lambda cts: cases_for(cts.item.op, cts.dtype, cts.manifest))
            for name, program in programs.items()]


# the aten overloads foreach dispatches on a device (traced on the faulty device, two traces of 4 and 12 examples
# an item, merged: its draws pick ops at random; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten._foreach_abs.default", "aten._foreach_abs_.default", "aten._foreach_add.List", "aten._foreach_add.Scalar",
    "aten._foreach_add.ScalarList", "aten._foreach_add_.List", "aten._foreach_add_.Scalar",
    "aten._foreach_add_.ScalarList", "aten._foreach_addcdiv.Scalar", "aten._foreach_addcdiv.ScalarList",
    "aten._foreach_addcdiv.Tensor", "aten._foreach_addcdiv_.Scalar", "aten._foreach_addcdiv_.ScalarList",
    "aten._foreach_addcdiv_.Tensor", "aten._foreach_addcmul.Scalar", "aten._foreach_addcmul.ScalarList",
    "aten._foreach_addcmul.Tensor", "aten._foreach_addcmul_.Scalar", "aten._foreach_addcmul_.ScalarList",
    "aten._foreach_atan.default", "aten._foreach_atan_.default", "aten._foreach_ceil.default",
    "aten._foreach_ceil_.default", "aten._foreach_clamp_max.List", "aten._foreach_clamp_max.Scalar",
    "aten._foreach_clamp_max.ScalarList", "aten._foreach_clamp_max_.List", "aten._foreach_clamp_max_.Scalar",
    "aten._foreach_clamp_max_.ScalarList", "aten._foreach_clamp_min.List", "aten._foreach_clamp_min.Scalar",
    "aten._foreach_clamp_min.ScalarList", "aten._foreach_clamp_min_.List", "aten._foreach_clamp_min_.Scalar",
    "aten._foreach_clamp_min_.ScalarList", "aten._foreach_copy_.default", "aten._foreach_cos.default",
    "aten._foreach_div.List", "aten._foreach_div.Scalar", "aten._foreach_div.ScalarList",
    "aten._foreach_div.Tensor", "aten._foreach_div_.List", "aten._foreach_div_.Scalar",
    "aten._foreach_div_.ScalarList", "aten._foreach_div_.Tensor", "aten._foreach_erf.default",
    "aten._foreach_erf_.default", "aten._foreach_exp.default", "aten._foreach_expm1.default",
    "aten._foreach_expm1_.default", "aten._foreach_floor_.default", "aten._foreach_frac.default",
    "aten._foreach_log.default", "aten._foreach_log1p.default", "aten._foreach_log1p_.default",
    "aten._foreach_log_.default", "aten._foreach_maximum.List", "aten._foreach_maximum.Scalar",
    "aten._foreach_maximum.ScalarList", "aten._foreach_maximum_.List", "aten._foreach_maximum_.Scalar",
    "aten._foreach_maximum_.ScalarList", "aten._foreach_minimum.List", "aten._foreach_minimum.Scalar",
    "aten._foreach_minimum.ScalarList", "aten._foreach_minimum_.List", "aten._foreach_minimum_.Scalar",
    "aten._foreach_minimum_.ScalarList", "aten._foreach_mul.List", "aten._foreach_mul.Scalar",
    "aten._foreach_mul.ScalarList", "aten._foreach_mul.Tensor", "aten._foreach_mul_.List",
    "aten._foreach_mul_.Scalar", "aten._foreach_mul_.ScalarList", "aten._foreach_mul_.Tensor",
    "aten._foreach_neg.default", "aten._foreach_neg_.default", "aten._foreach_norm.Scalar",
    "aten._foreach_pow.List", "aten._foreach_pow.Scalar", "aten._foreach_pow.ScalarList", "aten._foreach_pow_.List",
    "aten._foreach_pow_.Scalar", "aten._foreach_pow_.ScalarList", "aten._foreach_reciprocal.default",
    "aten._foreach_round.default", "aten._foreach_round_.default", "aten._foreach_rsqrt.default",
    "aten._foreach_rsqrt_.default", "aten._foreach_sigmoid.default", "aten._foreach_sigmoid_.default",
    "aten._foreach_sign.default", "aten._foreach_sign_.default", "aten._foreach_sin.default",
    "aten._foreach_sqrt.default", "aten._foreach_sqrt_.default", "aten._foreach_sub.List",
    "aten._foreach_sub.Scalar", "aten._foreach_sub.ScalarList", "aten._foreach_sub_.List",
    "aten._foreach_sub_.Scalar", "aten._foreach_sub_.ScalarList", "aten._foreach_tanh.default",
    "aten._foreach_tanh_.default", "aten._foreach_trunc.default", "aten._foreach_trunc_.default",
    "aten._foreach_zero_.default", "aten._local_scalar_dense.default",
)


test_foreach = scenario_suite("foreach", capability="foreach", level=3, dtypes=DTYPES,
                              scenarios=_rows(PROGRAMS, PARAMS), also_proves=("ieee754",), overloads=_OVERLOADS)


# the aten overloads foreach_floating dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_FLOATING_OVERLOADS = (
    "aten._foreach_lerp.List", "aten._foreach_lerp.Scalar", "aten._foreach_lerp.ScalarList",
    "aten._foreach_lerp_.List", "aten._foreach_lerp_.Scalar", "aten._foreach_lerp_.ScalarList",
    "aten._foreach_norm.Scalar",
)


test_foreach_floating = scenario_suite("foreach_floating", capability="foreach", level=3, dtypes=FLOATING_DTYPES,
                                       scenarios=_rows(FLOATING_PROGRAMS, FLOATING_PARAMS), also_proves=("ieee754",),
                                       overloads=_FLOATING_OVERLOADS)
