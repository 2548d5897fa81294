"""Nested tensors on the device: jagged and strided layouts built from components, vs CPU per component.

Every scenario is a torch-only program (`torchcts.engine.programs`): the case holds the components
(a list of dense tensors of shape (ragged length, *inner), `strategies.nested.ragged_components`),
the program builds the nested tensor on the device and returns what it observes as lists of
components (`unbind()`), padded dense tensors and plain values (offsets, contiguity); the device
must give CPU's result. Zero-length components are drawn. What CPU itself refuses (complex jagged
padding, softmax of integers, SDPA of non-floating dtypes) is `cpu_contract` for that case.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints, Lists, OneOf, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Scenario, Tolerance, scenario_suite
from torchcts.strategies import Case, values
from torchcts.strategies.nested import components_like, ragged_components

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = "jagged and strided nested tensors vs a per-component oracle"

DTYPES = ("float32", "float64", "complex64", "int64", "bool", "float16", "bfloat16")


# -- the programs ----------------------------------------------------------------------------------

def jagged_construct(input, gaps):
    """Components -> jagged three ways: copied, a view of their concatenation (offsets), a buffer with junk
    rows between them (offsets and lengths); each unbound again, with offsets, values and contiguity."""
    nt = torch.nested.nested_tensor(input, layout=torch.jagged)
    lengths = [c.shape[0] for c in input]
    device = input[0].device
    flat = torch.cat(input)
    view = torch.nested.nested_tensor_from_jagged(flat, torch.tensor([0] + lengths, device=device).cumsum(0))
    pieces = []
    for component, gap in zip(input, gaps):
        pieces += [component, component.new_ones((gap, *component.shape[1:]))]  # junk rows, never read
    starts = torch.tensor([0] + [n + gap for n, gap in zip(lengths, gaps)], device=device).cumsum(0)
    holey = torch.nested.nested_tensor_from_jagged(torch.cat(pieces), starts,
                                                   lengths=torch.tensor(lengths, device=device))
    return (list(nt.unbind()), nt.offsets(), nt.values(), nt.dim(), nt.size(0), list(view.unbind()),
            view.is_contiguous(), list(holey.unbind()), holey.is_contiguous())


def jagged_elementwise(input, other):
    """Elementwise ops on jagged tensors sharing offsets: +, *, * scalar, + dense row; relu, sin where real floating."""
    nt = torch.nested.nested_tensor(input, layout=torch.jagged)
    nt2 = torch.nested.nested_tensor_from_jagged(torch.cat(other), nt.offsets())
    results = [nt + nt2, nt * nt2, nt * 2, nt + input[0].new_ones(input[0].shape[1:])]
    if input[0].is_floating_point():
        results += [nt.relu(), nt.sin()]
    return [list(r.unbind()) for r in results]


def jagged_reduce_inner(input):
    """Reductions over the last (regular) dim of each component: sum, and mean where floating."""
    nt = torch.nested.nested_tensor(input, layout=torch.jagged)
    results = [list(nt.sum(dim=-1).unbind())]
    if input[0].is_floating_point() or input[0].is_complex():
        results.append(list(nt.mean(dim=-1, keepdim=True).unbind()))
    return results


def jagged_reduce_ragged(input):
    """Reductions over the ragged dim (one dense row per component): sum, amax, and mean where floating."""
    nt = torch.nested.nested_tensor(input, layout=torch.jagged)
    results = [nt.sum(dim=1), nt.amax(dim=1)]
    if input[0].is_floating_point():
        results.append(nt.mean(dim=1))
    return results


def jagged_padded(input, padding):
    """to_padded_tensor (and a longer output_size), and where floating the softmax over the ragged dim."""
    nt = torch.nested.nested_tensor(input, layout=torch.jagged)
    padded = torch.nested.to_padded_tensor(nt, padding)
    longer = torch.nested.to_padded_tensor(nt, padding, output_size=(padded.shape[0], padded.shape[1] + 1,
                                                                    *padded.shape[2:]))
    results = [padded, longer]
    if input[0].is_floating_point():
        results.append(list(nt.softmax(dim=1).unbind()))
    return results


def jagged_sdpa(input, key, value):
    """scaled_dot_product_attention on jagged (batch, heads, ragged, dim) query/key/value, per component."""
    query = torch.nested.nested_tensor(input, layout=torch.jagged)
    if [c.shape[0] for c in key] == [c.shape[0] for c in input]:  # self-attention: one ragged structure
        k = torch.nested.nested_tensor_from_jagged(torch.cat(key), query.offsets())
        v = torch.nested.nested_tensor_from_jagged(torch.cat(value), query.offsets())
    else:
        k = torch.nested.nested_tensor(key, layout=torch.jagged)
        v = torch.nested.nested_tensor(value, layout=torch.jagged)
    q, k, v = query.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    return list(out.transpose(1, 2).unbind())


def strided_nested(input, other):
    """The strided layout (components ragged in any dim): unbind, +, *, sum over the last dim, padding."""
    nt = torch.nested.nested_tensor(input, layout=torch.strided)
    nt2 = torch.nested.nested_tensor(other, layout=torch.strided)
    results = [list(nt.unbind()), list((nt + nt2).unbind()), list((nt * nt2).unbind()),
               torch.nested.to_padded_tensor(nt, 0)]
    if input[0].dtype != torch.bool:  # CPU has no bool nested sum
        results.append(list(nt.sum(dim=-1, keepdim=True).unbind()))
    return results


PROGRAMS = {program.__name__: program for program in
            (jagged_construct, jagged_elementwise, jagged_reduce_inner, jagged_reduce_ragged, jagged_padded,
             jagged_sdpa, strided_nested)}
# Scenarios whose results sum or normalize several values: another order rounds otherwise.
_WIDEN = {"jagged_reduce_inner": 4.0, "jagged_reduce_ragged": 4.0, "jagged_padded": 2.0, "jagged_sdpa": 8.0}


# -- the cases -------------------------------------------------------------------------------------

def _case(cts, values, what) -> Case:
    """The case of the item's scenario from its named values (`input`: the components)."""
    return scenario_case(cts.item.op, cts.dtype, PARAMS[cts.item.op], values, what)


def _shapes(components):
    return "components " + ", ".join(str(tuple(c.shape)) for c in components)


COMPONENTS, RAGGED, INNER_DIMS, INNER_SIDE = 4, 5, 2, 3  # components a case holds, their ragged and inner sizes
GAP = Ints(0, 2)  # junk rows after each component (jagged_construct)
PADDINGS = (0, -1, 7)
KEY_LENGTH = Ints(1, 4)  # jagged_sdpa's cross-attention keys
SDPA_RAGGED = 4


def _components(cts, **limits):
    limits = {"max_components": COMPONENTS, "max_ragged": RAGGED, "max_inner_dims": INNER_DIMS,
              "max_side": INNER_SIDE, **limits}
    return ragged_components(cts.dtype, special=not cts.dtype.is_complex, **limits)


@st.composite
def _construct_cases(draw, cts):
    components = draw(_components(cts, min_inner_dims=0), label="components")
    gaps = draw(st.lists(GAP.strategy(), min_size=len(components), max_size=len(components)), label="gaps")
    return _case(cts, {"input": components, "gaps": gaps}, f"{_shapes(components)}, gaps {gaps}")


@st.composite
def _elementwise_cases(draw, cts):
    components = draw(_components(cts), label="components")
    other = draw(components_like(components, special=not cts.dtype.is_complex), label="other operand")
    return _case(cts, {"input": components, "other": other}, _shapes(components))


def _reduce_cases(cts):
    return _components(cts, min_inner_dims=1).map(lambda c: _case(cts, {"input": c}, _shapes(c)))


@st.composite
def _padded_cases(draw, cts):
    components = draw(_components(cts), label="components")
    padding = draw(st.sampled_from(PADDINGS), label="padding")
    padding = bool(padding) if cts.dtype == torch.bool else padding
    return _case(cts, {"input": components, "padding": padding}, f"{_shapes(components)}, padding {padding}")


@st.composite
def _sdpa_cases(draw, cts):
    query = draw(_components(cts, min_inner_dims=2, max_inner_dims=2, min_side=1, max_ragged=SDPA_RAGGED),
                 label="query")
    lengths = [c.shape[0] for c in query]
    if draw(st.booleans(), label="keys of other lengths (cross-attention)"):
        lengths = [draw(KEY_LENGTH.strategy(), label="key length") for _ in query]
    heads, dim = query[0].shape[1:]
    key, value = ([draw(values((n, heads, dim), cts.dtype, special=False), label=name) for n in lengths]
                  for name in ("key", "value"))
    return _case(cts, {"input": query, "key": key, "value": value}, f"query {_shapes(query)}, key lengths {lengths}")


@st.composite
def _strided_cases(draw, cts):
    components = draw(_components(cts, ragged_inner=True), label="components")
    other = draw(components_like(components, special=not cts.dtype.is_complex), label="other operand")
    return _case(cts, {"input": components, "other": other}, _shapes(components))


# -- bounds of the stored values (`cases.bounds`): what the strategies above draw ------------------------------------

_COMPONENTS = Lists(Tensors(RAGGED * INNER_SIDE ** INNER_DIMS, 1 + INNER_DIMS), 1, COMPONENTS)
_SDPA_COMPONENTS = Lists(Tensors(max(SDPA_RAGGED, KEY_LENGTH.high) * INNER_SIDE ** 2, 3), 1, COMPONENTS)


def _one_each(*names: str):
    """A rule: the lists named hold one entry per component of the input."""
    return (f"{', '.join(names)}: one per component", lambda p: all(len(p[name]) == len(p["input"]) for name in names))


def _shaped_like_input(params: dict) -> bool:
    return [tuple(t.shape) for t in params["other"]] == [tuple(t.shape) for t in params["input"]]


_LIKE_INPUT = ("other: components of the input's shapes", _shaped_like_input)
PARAMS = {
    "jagged_construct": CaseParams({"gaps": Lists(GAP, 1, COMPONENTS)}, input=_COMPONENTS, rules=(_one_each("gaps"),)),
    "jagged_elementwise": CaseParams({"other": _COMPONENTS}, input=_COMPONENTS, rules=(_LIKE_INPUT,)),
    "jagged_reduce_inner": CaseParams({}, input=_COMPONENTS),
    "jagged_reduce_ragged": CaseParams({}, input=_COMPONENTS),
    "jagged_padded": CaseParams({"padding": OneOf((*PADDINGS, False, True))}, input=_COMPONENTS),
    "jagged_sdpa": CaseParams({"key": _SDPA_COMPONENTS, "value": _SDPA_COMPONENTS}, input=_SDPA_COMPONENTS,
                              rules=(_one_each("key", "value"),)),
    "strided_nested": CaseParams({"other": _COMPONENTS}, input=_COMPONENTS, rules=(_LIKE_INPUT,)),
}


_CASES = {"jagged_construct": _construct_cases, "jagged_elementwise": _elementwise_cases,
          "jagged_reduce_inner": _reduce_cases, "jagged_reduce_ragged": _reduce_cases, "jagged_padded": _padded_cases,
          "jagged_sdpa": _sdpa_cases, "strided_nested": _strided_cases}


# the aten overloads nested dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten._jagged_to_padded_dense_forward.default", "aten._local_scalar_dense.default",
    "aten._nested_tensor_from_tensor_list.default", "aten._padded_dense_to_jagged_forward.default",
    "aten.add.Tensor", "aten.amax.default", "aten.cat.default", "aten.cumsum.default", "aten.diff.default",
    "aten.div.Tensor", "aten.empty.memory_format", "aten.flatten.using_ints", "aten.lift_fresh.default",
    "aten.mean.dim", "aten.mul.Scalar", "aten.mul.Tensor", "aten.narrow.default", "aten.new_ones.default",
    "aten.relu.default", "aten.reshape.default", "aten.sin.default", "aten.slice.Tensor", "aten.softmax.int",
    "aten.split_with_sizes.default", "aten.squeeze.dim", "aten.sub.Tensor", "aten.sum.dim_IntList",
    "aten.transpose.int", "aten.unbind.int", "aten.unflatten.int", "aten.unsqueeze.default", "aten.zero_.default",
)


def _comparison(name: str) -> Tolerance:
    """CPU's components within the dtype's tolerance; a scenario that sums or normalizes (`_WIDEN`) widens below 32
    bits and for sums of many inputs; a failure names the scenario and the components."""
    widen = _WIDEN.get(name)
    return Tolerance(dtype_widen={"float16": widen, "bfloat16": widen} if widen else {}, inputs=widen is not None,
                     said="{scenario} of {first}")


test_nested = scenario_suite(
    "nested", capability="nested", level=4, dtypes=DTYPES, overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], program, _comparison(name), cases=lambda cts: _CASES[cts.item.op](cts))
               for name, program in PROGRAMS.items()])
