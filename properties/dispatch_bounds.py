"""Bounds of the dispatch suite's stored cases: one call of one aten overload, whatever its schema.

A dispatch case stores `(packet, overload, args, kwargs, device_slots, mutated[, sparse])` next to a
0-dim anchor tensor (`coverage.dispatch_calls.call_overload`). Its values come from three sources
(schema-drawn, curated builders, rebound OpInfo samples), so the bounds are per value kind, taken
from what those sources draw: integers within +-INT_MOST (quantization ranges reach 255), finite
floats within +-FLOAT_MOST (or infinities and NaN), tensors of at most TENSOR_MOST elements, lists
nested at most three deep. The overload is the scenario's own and keywords and slots name its schema's
arguments. Rules bound what a value asks the kernel to make: a size-like integer list (`size`,
`output_size`, ...) at most TENSOR_MOST elements, scale factors at most SCALE_MOST together, an
`arange`-like step not below the smallest step drawn (a tiny step over a wide range is a huge result),
and, where the call runs on the meta device (shapes only), a result of at most RESULT_MOST elements (a
large padding, offset or repeat count). Many calls cannot run there (sparse, quantized and nested
arguments, ops without meta kernels, arguments meta refuses: 615 of 941 scenarios drew such a case in a
10-example measurement); for those the per-kind bounds and size rules alone hold.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import torch
from torch.utils._pytree import tree_leaves

from torchcts import dtypes as dtype_names
from torchcts.cases.bounds import (Bound, CaseParams, Dtypes, Either, Floats, Ints, Lists, Mapping, OneOf, Optional,
                                   Tensors, Tuples)
from torchcts.core.overload_names import split_name
from torchcts.strategies.overloads import resolve
from torchcts.strategies.schema_args import STRING_CHOICES

INT_MOST = 2**8  # integers: dims, counts, indices, quantization ranges (0..255), ignore_index (-100)
FLOAT_MOST = 16.0  # finite floats: scales, eps, alphas, clamp bounds (the drawn pools and OpInfo's samples)
TENSOR_MOST, TENSOR_DIMS = 2**16, 6  # a stored tensor (OpInfo samples reach ~47000 elements, 5 dims)
LIST_MOST = 24  # a stored list (OpInfo's ctc_loss lengths hold 16)
SCALE_MOST = 16.0  # scale factors of an upsampling call, multiplied (the drawn ones: 0.5, 1, 2 per dim, <= 4 dims)
STEP_LEAST = 1e-3  # the smallest nonzero step a call draws (`_FLOATS`' 1e-3)
SIZE_NAMES = frozenset({"size", "sizes", "shape", "output_size", "input_size", "input_sizes", "new_size",
                        "bias_sizes", "normalized_shape", "bins"})
SPARSE_KINDS = ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "nested", "quantized",
                "quantized_list")
QUANTIZED_DTYPES = ("quint8", "qint8", "qint32")
_TEXT_MOST = 40  # characters of a stored string argument
RESULT_MOST = 2**17  # elements of a call's result on the meta device: twice the most measured (47216, ctc_loss)


@attrs.frozen
class _Text(Bound):
    """A string of at most `max_length` characters (an op's mode name: "mean", "reflect", "gelsy")."""

    max_length: int

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, str):
            return f"expected a string of at most {self.max_length} characters, got {type(value).__name__}"
        if len(value) > self.max_length:
            return f"a string of {len(value)} characters; allowed at most {self.max_length}"
        return None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.sampled_from(sorted({s for choices in STRING_CHOICES.values() for s in choices}))

    def describe(self) -> str:
        return f"string of at most {self.max_length} characters"

    def out_of_bounds(self) -> list[Any]:
        return ["x" * (self.max_length + 1), 1]


# Bounds described in words that are the same for every overload: docs/corpus.md's table then has one row for what
# the 941 scenarios store alike, not one per overload. Subclasses, so each is still the kind it bounds like.
@attrs.frozen
class _WordedOneOf(OneOf):
    text: str = ""

    def describe(self) -> str:
        return self.text


@attrs.frozen
class _WordedLists(Lists):
    text: str = ""

    def describe(self) -> str:
        return self.text


@attrs.frozen
class _WordedEither(Either):
    text: str = ""

    def describe(self) -> str:
        return self.text


@attrs.frozen
class _WordedMapping(Mapping):
    text: str = ""

    def describe(self) -> str:
        return self.text


_SPECIAL = OneOf((None, False, True, math.inf, -math.inf, math.nan, torch.strided, torch.sparse_coo, torch.sparse_csr,
                  torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc, torch.contiguous_format, torch.preserve_format,
                  torch.channels_last, torch.channels_last_3d))
_DTYPES = Dtypes((*(dtype_names.canonical_name(d) for d in dtype_names.CLAIMABLE_DTYPES), *QUANTIZED_DTYPES))
SCALAR = Either((Ints(-INT_MOST, INT_MOST), Floats(-FLOAT_MOST, FLOAT_MOST), _SPECIAL, _Text(_TEXT_MOST), _DTYPES,
                 Tensors(TENSOR_MOST, TENSOR_DIMS)))


def _nested(depth: int) -> Bound:
    """A scalar or tensor, or lists of them nested up to `depth` deep."""
    value: Bound = SCALAR
    for _ in range(depth):
        value = Either((SCALAR, Lists(value, 0, LIST_MOST)))
    return value


# an argument: a value, a list of them (int[], Tensor[]), or deeper (quantizer parameters)
ARGUMENT = _WordedEither(_nested(3).options,
                         f"a call value: integer -{INT_MOST}..{INT_MOST}, finite number -{FLOAT_MOST:g}.."
                         f"{FLOAT_MOST:g}, inf, NaN, None, bool, layout, memory format, dtype, string of at most "
                         f"{_TEXT_MOST} characters, tensor of at most {TENSOR_MOST} elements and {TENSOR_DIMS} "
                         f"dimensions, or lists of these (at most {LIST_MOST}) 3 deep")


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    return None


def _named_values(params: dict, schema: Any) -> list[tuple[str, Any]]:
    """(schema argument name, stored value) for every positional and keyword argument of the call."""
    names = [arg.name for arg in schema.arguments]
    positional = [(names[i] if i < len(names) else "", v) for i, v in enumerate(params["args"])]
    return positional + list(dict(params["kwargs"]).items())


def _sizes_fit(schema: Any):
    """A rule: size-like integer lists ask for at most TENSOR_MOST elements, scale factors for at most SCALE_MOST
    times the input, a step is not below STEP_LEAST (a stored call makes no more than its strategy could)."""
    def fits(params: dict) -> bool:
        for name, value in _named_values(params, schema):
            sizes = _ints(value)
            if name in SIZE_NAMES and sizes is not None and math.prod(max(abs(s), 1) for s in sizes) > TENSOR_MOST:
                return False
            if name in ("scale_factors", "scales") and isinstance(value, (list, tuple)):
                product = math.prod(abs(float(s)) for s in value if isinstance(s, (int, float)) and s is not None)
                if product > SCALE_MOST:
                    return False
            if name == "step" and isinstance(value, (int, float)) and value != 0 and abs(value) < STEP_LEAST:
                return False
        return True

    return (f"size-like lists ask for at most {TENSOR_MOST} elements, scale factors at most {SCALE_MOST:g} times, "
            f"a step at least {STEP_LEAST:g}", fits)


def _on_meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to("meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_on_meta(v) for v in value)
    return value


def result_elements(params: dict, packet: str, overload: str) -> int | None:
    """The elements the call's result holds, from running it on the meta device (shapes only, nothing allocated);
    None where that cannot tell: a call with sparse, nested or quantized arguments, or an op meta cannot run."""
    if params.get("sparse"):
        return None
    args = [_on_meta(v) for v in params["args"]]
    kwargs = {key: _on_meta(v) for key, v in dict(params["kwargs"]).items()}
    for slot in params["device_slots"]:
        if isinstance(slot, int) and 0 <= slot < len(args):
            args[slot] = torch.device("meta")
        elif isinstance(slot, str):
            kwargs[slot] = torch.device("meta")
    try:
        result = getattr(getattr(torch.ops.aten, packet), overload)(*args, **kwargs)
    except Exception:  # noqa: BLE001 - no meta kernel, or arguments meta refuses: the static bounds decide
        return None
    return sum(leaf.numel() for leaf in tree_leaves(result) if isinstance(leaf, torch.Tensor))


def _result_fits(packet: str, overload: str):
    """A rule: the call's result (shapes from the meta device) holds at most RESULT_MOST elements."""
    def fits(params: dict) -> bool:
        elements = result_elements(params, packet, overload)
        return elements is None or elements <= RESULT_MOST

    return (f"the call's result holds at most {RESULT_MOST} elements (its shapes on the meta device)", fits)


def _slots_within(schema: Any):
    """A rule: device slots, mutated arguments and sparse arguments name a stored argument (by position or name)."""
    def within(params: dict) -> bool:
        count, names = len(params["args"]), {arg.name for arg in schema.arguments}
        places = list(params["device_slots"]) + list(params["mutated"])
        places += [entry[0] for entry in params.get("sparse", ())]
        return all((isinstance(p, int) and not isinstance(p, bool) and 0 <= p < count) or p in names for p in places)

    return ("device slots, mutated and sparse arguments name the call's arguments", within)


def dispatch_params(overload_name: str) -> CaseParams:
    """What one dispatch scenario's cases store: the call of `overload_name` (its packet and overload, arguments of
    its schema), the slots its caller fills, and the arguments it makes sparse, nested or quantized."""
    schema = resolve(overload_name)._schema
    packet, overload = split_name(overload_name)
    names = tuple(arg.name for arg in schema.arguments)
    count = len(names)
    place = Either((Ints(0, max(count - 1, 0)), OneOf(names or ("",))))
    places = _WordedLists(place, 0, count, "list of positions or names of the overload's arguments")
    sparse = _WordedLists(Tuples((place, OneOf(SPARSE_KINDS), Optional(ARGUMENT))), 0, count,
                          f"list of [an argument's position or name, one of {', '.join(SPARSE_KINDS)}, None or a "
                          "call value (blocksize, quantizer parameters)]")
    return CaseParams({"packet": _WordedOneOf((packet,), "the scenario's overload packet"),
                       "overload": _WordedOneOf((overload,), "the scenario's overload"),
                       "args": _WordedLists(ARGUMENT, 0, count,
                                            f"list of at most one value an argument, each {ARGUMENT.describe()}"),
                       "kwargs": _WordedMapping({name: ARGUMENT for name in names}, (),
                                                "call values by the overload's argument names"),
                       "device_slots": places, "mutated": places, "sparse": sparse},
                      input=Tensors(1, 0), min_args=6,
                      rules=(_slots_within(schema), _sizes_fit(schema), _result_fits(packet, overload)))
