"""Arguments for an aten overload taken from calls OpInfo samples really made ("donor" calls).

A schema says an argument is a `Tensor`; the kernel also wants it 4-D, or shaped like another
argument's gradient, or holding valid indices. Where no draw from the schema alone satisfies CPU's
kernel (`torchcts.coverage.generated`'s probe), a sibling overload often was called by an OpInfo's
samples with exactly such arguments: `avg_pool3d_backward.grad_input` has no OpInfo, but
`nn.functional.avg_pool3d`'s gradient called `avg_pool3d_backward.default`. The packaged trace
(`torchcts.strategies.opinfo_trace`) names such calls: OpInfo, dtype, sample index, phase. Here a
donor call is replayed on CPU under a dispatch mode that captures the sibling's arguments, and the
arguments are rebound by name to the target's schema: an out= tensor the sibling did not take is an
empty tensor of the matching result's dtype (for the kernel to resize), an argument with a default
is left out, an optional one is None. Cases then differ in memory layout (`relayouts` of every
tensor the call does not write), shrinking to the donor's own layout (kept as it is for the packets of
`LAYOUT_CRASHES`, whose CPU kernel crashes on other layouts).

Siblings are the overloads of the target's packet and of its in-place or functional twin (`add_`
and `add`); only where none of their calls rebinds, "kin": overloads of other, similarly named
packets whose schema offers every argument the target requires (`select.int` for `select_copy.int`).
Donor calls are rebuilt once per process and overload.
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Any, Callable

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from torch.utils._pytree import tree_leaves, tree_map

from torchcts.plan.catalog import find_op
from torchcts.strategies.layouts import relayouts
from torchcts.strategies.opinfo_pool import sample_pool
from torchcts.strategies.opinfo_trace import packaged, run_phase
from torchcts.strategies.overloads import resolve
from torchcts.strategies.schema_args import CallBuilder, Drawn, argument_kind, writes_to

MAX_DONOR_CALLS = 6  # calls kept per target overload
# Packets whose CPU kernel corrupts memory on re-laid-out arguments: their cases keep the donor's layouts.
# torch 2.13: `adaptive_max_pool3d_backward.grad_input` with offset, stepped tensors aborts ("double free").
LAYOUT_CRASHES = frozenset({"adaptive_max_pool3d_backward"})
MAX_KIN_PACKETS = 3  # other packets whose calls a target may borrow (each costs the probe a capture)
MIN_KIN_SIMILARITY = 0.6  # how alike two packets' names must be for one's calls to be tried on the other
# Packets whose CPU kernel trusts its arguments' sizes, found by a clean faulty run of the drawn calls (out-of-bounds
# reads that answer one call two ways, aborts, segfaults): their cases come only from traced calls of their own
# family, whose shapes an OpInfo sample chose (`torchcts.coverage.generated.traced_only`); no kin calls.
TRACED_ONLY_PACKETS = ("_log_softmax_backward_data", "_logcumsumexp", "_pdist_forward", "_stack",
                      # a kin call (`replication_pad2d_backward`'s, padding wider than the input) aborted CPU
                      "reflection_pad1d_backward", "reflection_pad2d_backward", "reflection_pad3d_backward")


def family(packet: str) -> tuple[str, ...]:
    """The packets whose overloads are siblings of `packet`'s: itself and its in-place or functional twin."""
    twin = packet[:-1] if packet.endswith("_") and not packet.endswith("__") else packet + "_"
    return (packet, twin)


def siblings(name: str, donors: dict[str, Any]) -> list[str]:
    """The traced overloads (keys of `donors`) of `name`'s family, the same packet first."""
    _, packet, _ = name.split(".", 2)
    ranked = {p: rank for rank, p in enumerate(family(packet))}
    found = [other for other in donors if other != name and other.split(".", 2)[1] in ranked]
    return sorted(found, key=lambda other: (ranked[other.split(".", 2)[1]], other))


def _stem(packet: str) -> str:
    """What names an operation's kind: "_upsample_lanczos2d_aa" of "_upsample_lanczos2d_aa_", "select" of
    "select_copy"."""
    return packet.strip("_").removesuffix("_copy")


def _required(schema: Any) -> set[tuple[str, str]]:
    """(name, type) of the arguments a call must pass: no default, not Optional, not an out= tensor."""
    found = set()
    for arg in schema.arguments:
        kind, optional = argument_kind(arg)
        if not (optional or arg.has_default_value() or (writes_to(arg) and arg.kwarg_only)):
            found.add((arg.name, kind))
    return found


def _other_rank(packet: str, other: str) -> bool:
    """Whether both names carry a rank ("2d", "3d") and the ranks differ: a 1-d padding's call aborts CPU's
    `reflection_pad2d_backward`, whose kernel trusts the padding's length."""
    mine, theirs = re.findall(r"\d+", _stem(packet)), re.findall(r"\d+", _stem(other))
    return bool(mine and theirs and mine != theirs)


@functools.lru_cache(maxsize=4096)
def _offered(name: str) -> frozenset[tuple[str, str]]:
    """(name, type) of every argument of overload `name` (empty when this torch lacks it)."""
    op = resolve(name)
    return frozenset() if op is None else frozenset((arg.name, argument_kind(arg)[0]) for arg in op._schema.arguments)


def kin(name: str, donors: dict[str, Any]) -> list[str]:
    """Traced overloads of other packets whose schema offers every argument `name` requires, by name and type, and
    whose packet is named like `name`'s (`difflib` ratio of the stems at least `MIN_KIN_SIMILARITY`, no other rank
    in the name: `_other_rank`): those of the `MAX_KIN_PACKETS` most similar packets, most similar first. `upsample_bilinear2d.default`'s calls rebind to
    `_upsample_lanczos2d_aa.default`, `select.int`'s to `select_copy.int`. None for the packets whose CPU kernel
    trusts sizes (`TRACED_ONLY_PACKETS`): only their own family's calls have the sizes they need."""
    _, packet, _ = name.split(".", 2)
    target = resolve(name)
    if target is None or packet in TRACED_ONLY_PACKETS:
        return []
    required = _required(target._schema)
    own = set(family(packet))
    scored: dict[str, float] = {}
    for other in donors:
        other_packet = other.split(".", 2)[1]
        if other_packet in own or not required <= _offered(other) or _other_rank(packet, other_packet):
            continue
        ratio = difflib.SequenceMatcher(None, _stem(packet), _stem(other_packet)).ratio()
        if ratio >= MIN_KIN_SIMILARITY:
            scored[other_packet] = ratio
    chosen = sorted(scored, key=lambda p: (-scored[p], p))[:MAX_KIN_PACKETS]
    rank = {p: i for i, p in enumerate(chosen)}
    return sorted((o for o in donors if o.split(".", 2)[1] in rank), key=lambda o: (rank[o.split(".", 2)[1]], o))


def _detached_copy(value: Any) -> Any:
    return tree_map(lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v, value)


def capture(op_id: str, dtype_name: str, index: int, phase: str, overload: str) -> tuple[tuple, dict] | None:
    """The (args, kwargs) of the first call of `overload` made by that OpInfo sample's phase on CPU (tensors
    copied), or None when the sample no longer makes it."""
    from torch.utils._python_dispatch import TorchDispatchMode

    captured: list[tuple[tuple, dict]] = []

    class Capture(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - torch's signature
            if not captured and str(func) == overload:
                captured.append((_detached_copy(tuple(args)), _detached_copy(dict(kwargs or {}))))
            return func(*args, **(kwargs or {}))

    try:
        op = find_op(op_id)
    except KeyError:  # an OpInfo this torch's database lacks
        return None
    dtype = getattr(torch, dtype_name, None)
    if not isinstance(dtype, torch.dtype):
        return None
    try:
        pool = sample_pool(op, dtype)
        if index >= len(pool):
            return None
        run_phase(op, pool[index], phase, Capture())
    except Exception:  # noqa: BLE001 - a call that raised after the capture still gave its arguments
        pass
    return captured[0] if captured else None


def _bind(schema: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    bound = {arg.name: value for arg, value in zip(schema.arguments, args)}
    bound.update(kwargs)
    return bound


def _results(function: Any, args: tuple, kwargs: dict) -> list[torch.Tensor] | None:
    """The tensors a functional call returns (on copies of its arguments), in order; None when it raises."""
    try:
        result = function(*_detached_copy(args), **_detached_copy(kwargs))
    except Exception:  # noqa: BLE001 - no result to take out= dtypes from
        return None
    leaves = result if isinstance(result, (tuple, list)) else [result]
    return [t for t in leaves if isinstance(t, torch.Tensor)]


def _empty_like_result(result: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=result.dtype)


def rebind(target: Any, donor: Any, args: tuple, kwargs: dict,
           out_for: Callable[[torch.Tensor], torch.Tensor] = _empty_like_result) -> Drawn | None:
    """The donor overload's call (`args`, `kwargs`) as a call of `target` (both `OpOverload`s), or None
    when a required argument of the target has no value: see the module docstring for the rules. `out_for`
    makes an out= tensor from the donor's matching result (default: an empty tensor of its dtype)."""
    bound = _bind(donor._schema, args, kwargs)
    outs = [arg for arg in target._schema.arguments if writes_to(arg) and arg.kwarg_only and arg.name not in bound]
    results = None
    if outs:  # out= tensors to make: their dtypes are those of the donor's results
        written = [a for a in donor._schema.arguments if writes_to(a)]
        if not written:  # a functional donor: run it
            results = _results(donor, (), bound)
        else:  # an out= donor: the tensors it wrote (an in-place donor writes no out=, so none)
            results = [t for a in written if a.kwarg_only for t in tree_leaves(bound.get(a.name))
                       if isinstance(t, torch.Tensor)]
        if not results or len(results) < len(outs):
            return None
    call = CallBuilder()
    for arg in target._schema.arguments:
        kind, optional = argument_kind(arg)
        if kind == "Device":
            value: Any = None
        elif arg.name in bound:
            value = _detached_copy(bound[arg.name])
        elif writes_to(arg) and arg.kwarg_only and results is not None:
            if kind == "List[Tensor]":  # one out= list (`unsafe_split.Tensor_out`): one tensor per result
                value = [out_for(t) for t in results]
            else:
                value = out_for(results[outs.index(arg)])
        elif arg.has_default_value():
            call.leave_out()
            continue
        elif optional:
            value = None
        else:
            return None
        call.add(arg, value)
    return call.drawn()


@functools.lru_cache(maxsize=64)
def donor_calls(name: str) -> tuple[Drawn, ...]:
    """Up to `MAX_DONOR_CALLS` calls of overload `name` ("aten.x.y") rebound from its siblings' donor calls
    (the packaged trace), or from its kin's when no sibling's call rebinds; () when it has none."""
    target = resolve(name)
    if target is None:
        return ()
    donors = packaged()["donors"]
    calls: list[Drawn] = []
    for group in (siblings(name, donors), kin(name, donors)):
        for sibling in group:
            overload = resolve(sibling)
            if overload is None:
                continue
            for op_id, dtype_name, index, phase in donors[sibling]:
                captured = capture(op_id, dtype_name, index, phase, sibling)
                drawn = rebind(target, overload, *captured) if captured is not None else None
                if drawn is not None:
                    calls.append(drawn)
                if len(calls) >= MAX_DONOR_CALLS:
                    return tuple(calls)
        if calls:  # the family's calls: kin are only for an overload whose family gives none
            return tuple(calls)
    return tuple(calls)


def traced_arguments(name: str) -> st.SearchStrategy[Drawn]:
    """One of `name`'s donor calls, each tensor the call does not write in a drawn memory layout (shrinking to
    the donor's own); InvalidArgument when there is no donor call."""
    calls = donor_calls(name)
    if not calls:
        raise InvalidArgument(f"{name}: no OpInfo sample's call of a sibling overload can be rebound to it")

    fixed_layouts = name.split(".", 2)[1] in LAYOUT_CRASHES

    @st.composite
    def relaid(draw) -> Drawn:
        call = draw(st.sampled_from(calls), label="donor call")
        written = set(call.mutated)
        if fixed_layouts:
            return Drawn(_detached_copy(call.args), _detached_copy(call.kwargs), call.device_slots, call.mutated)

        def layout(value: Any, where: int | str) -> Any:
            if where in written:
                return _detached_copy(value)
            if isinstance(value, torch.Tensor) and value.layout == torch.strided and value.numel() > 1:
                return draw(relayouts(value, allow_overlap=False), label=f"layout of {where}")
            return _detached_copy(value)

        args = tuple(layout(value, i) for i, value in enumerate(call.args))
        kwargs = {key: layout(value, key) for key, value in call.kwargs.items()}
        return Drawn(args, kwargs, call.device_slots, call.mutated)

    return relaid()
