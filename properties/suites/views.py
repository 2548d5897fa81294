"""Views and strides: the device's views alias, report and restride exactly as CPU's.

Every scenario is a torch-only program (`torchcts.engine.programs`) run on CPU and on the device;
the device must return CPU's result bit for bit (`exact_check`): views move no bits, so any
difference is a bug, tolerance or not.

- chains of view ops (`view_steps`: reshape/view/flatten/unflatten/squeeze/unsqueeze; transpose/
  permute/movedim/t/swapaxes; narrow/select/split/chunk/unbind; expand/broadcast_to; unfold/
  diagonal/as_strided), each on an input in a drawn layout (offset, stepped, permuted): the view's
  sizes, strides, offset, `_is_view()` and `_base`, its values, then a write through it, seen in
  the base, in a sibling view and in the whole reachable storage (writes must land where the view
  says, nowhere else);
- `contiguous()` / `clone(memory_format=...)` / `empty_like` strides and identity;
- `resize_` (sizes, strides, the kept elements) and `set_` (metadata, aliasing);
- overlapping-memory rules: in-place writes into expanded or partly overlapping tensors raise as
  CPU's do (the program returns the error type it caught), allowed ones give CPU's values;
- storage sharing (`untyped_storage().data_ptr()` of a view equals its base's, a clone's does not),
  on devices whose storages have data pointers.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints, Lists, OneOf, Tensors
from torchcts.engine.programs import run_program
from torchcts.engine.targets import CaseUnavailable
from torchcts.properties.exact_check import exact_program_check
from torchcts.properties.scenario_table import Custom, Exact, Scenario, scenario_suite
from torchcts.properties.view_steps import (FAMILIES, apply_steps, chain_bound, chain_fits, draw_view_chain,
                                            most_elements)
from torchcts.strategies import Case, describe_layout, is_overlapping, shapes, tensors
from torchcts.strategies.layouts import draw_relayout
from torchcts.strategies.sample_walk import sample_input
from torchcts.strategies.values import draw_values

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("aliasing, view metadata, writes through views, `contiguous`/`clone` strides, `resize_`/`set_`, overlap "
          "rules")


# -- programs (torch only: exported verbatim into reproduction scripts) ---------------------------

def view_chain_write(input, steps, write, reader):
    """View `input` through `steps`; report the view; write through it; read the base, a sibling view, the storage."""
    view = input
    for name, args, pick in steps:
        view = getattr(view, name)(*args)
        if pick is not None:
            view = view[pick]
    root = input._base if input._is_view() else input
    seen = (tuple(view.shape), view.stride(), view.storage_offset(), view._is_view(), view._base is root)
    before = view.clone(memory_format=torch.contiguous_format)
    if write == "fill":  # an overlapping view: every element gets the same value
        view.fill_(1)
    else:
        marks = torch.arange(view.numel(), device=view.device).remainder(5).add(1).reshape(view.shape)
        view.copy_(marks == 1 if view.dtype == torch.bool else marks)
    sibling = input
    for name, args, pick in reader:
        sibling = getattr(sibling, name)(*args)
        if pick is not None:
            sibling = sibling[pick]
    span = input.storage_offset() + sum((n - 1) * s for n, s in zip(input.shape, input.stride())) + 1
    storage = torch.as_strided(input, (span if input.numel() else 0,), (1,), 0)
    return seen, before, view, input, sibling, storage


def contiguous_clone(input, memory_format):
    """`contiguous()`, `clone(memory_format=)`, `contiguous(memory_format=)`, `to(memory_format=)`, `empty_like`:
    values, strides, identity."""
    plain = input.contiguous()
    cloned = input.clone(memory_format=memory_format)
    formatted = plain if memory_format == torch.preserve_format else input.contiguous(memory_format=memory_format)
    moved = input.to(memory_format=memory_format, copy=True)
    empty = torch.empty_like(input, memory_format=memory_format)
    # a size-1 dimension's stride is free, and so is every stride of a tensor without elements
    empty_strides = tuple(s for s, n in zip(empty.stride(), empty.shape) if n > 1) if empty.numel() else ()
    return (plain, plain is input, cloned, cloned._is_view(), formatted, formatted is input, moved,
            tuple(empty.shape), empty_strides)


def resize_set(input, shape, memory_format):
    """`resize_` of a contiguous clone (sizes, strides, the elements kept) and `set_` onto the input (aliasing)."""
    resized = input.clone(memory_format=torch.contiguous_format)
    old = resized.numel()
    resized.resize_(shape, memory_format=memory_format)
    kept = torch.as_strided(resized, (min(old, resized.numel()),), (1,), resized.storage_offset())
    alias = torch.empty(0, dtype=input.dtype, device=input.device)
    alias.set_(input)
    seen = (tuple(alias.shape), alias.stride(), alias.storage_offset(), alias._is_view())
    marks = torch.arange(alias.numel(), device=alias.device).remainder(3).reshape(alias.shape)
    alias.copy_(marks == 1 if alias.dtype == torch.bool else marks)
    return tuple(resized.shape), resized.stride(), kept, seen, input


def overlap_rules(input, kind):
    """An in-place write into overlapping memory: the error type CPU raises (or ""), and the tensor after it."""
    work = input.clone()
    error = ""
    try:
        if kind == "expand_add_":
            work[..., :1].expand_as(work).add_(1)
        elif kind == "expand_copy_":
            work[..., :1].expand_as(work).copy_(input)
        elif kind == "expand_fill_":
            work[..., :1].expand_as(work).fill_(1)
        elif kind == "shifted_copy_":
            work[1:].copy_(work[:-1])
        elif kind == "shifted_add_out":
            torch.add(work[:-1], 1, out=work[1:])
        elif kind == "transposed_copy_":
            work.copy_(work.transpose(0, 1))
        elif kind == "self_copy_":
            work.copy_(work)
    except NotImplementedError:  # no kernel for the dtype: CPU's is cpu_contract, the device's an error
        raise
    except RuntimeError as exc:  # CPU's rejection; other exception types are the device's own errors
        error = type(exc).__name__
    return error, work


def storage_shared(input, steps):
    """Whether a view's storage is its base's (data pointers equal) and a clone's is not."""
    view = input
    for name, args, pick in steps:
        view = getattr(view, name)(*args)
        if pick is not None:
            view = view[pick]
    try:
        base = input.untyped_storage().data_ptr()
        if base == 0 and input.untyped_storage().nbytes() > 0:  # bytes but no address: meta, a fake device
            return "no data pointer"
        shared = view.untyped_storage().data_ptr() == base
        cloned = input.clone().untyped_storage().data_ptr() == base
    except RuntimeError:  # a Python wrapper-subclass device: its storages have no data pointer
        return "no data pointer"
    return shared, cloned


PROGRAMS = {
    "reshape_views": view_chain_write,
    "transpose_views": view_chain_write,
    "slice_views": view_chain_write,
    "expand_views": view_chain_write,
    "strided_views": view_chain_write,
    "contiguous_clone": contiguous_clone,
    "resize_set": resize_set,
    "overlap_rules": overlap_rules,
    "storage_shared": storage_shared,
}
_CHAIN_FAMILIES = {"reshape_views": ("reshape",), "transpose_views": ("transpose",), "slice_views": ("slice",),
                   "expand_views": ("expand",), "strided_views": ("strided",)}
VIEW_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16",
               "bfloat16", "float32", "float64", "complex64", "complex128")
OVERLAP_KINDS = ("expand_add_", "expand_copy_", "expand_fill_", "shifted_copy_", "shifted_add_out",
                 "transposed_copy_", "self_copy_")


# -- cases ------------------------------------------------------------------------------------------

def _case(cts, input, args, *what) -> Case:
    return Case(cts.item.op, "scenario", cts.dtype, sample_input(input, args=args), 0,
                transforms=(describe_layout(input), *what))


WRITTEN_DIMS, WRITTEN_SIDE = 4, 4  # inputs the chain and resize_set programs write through
CHAIN_STEPS, READER_STEPS = Ints(1, 3), Ints(0, 2)  # steps of the written view, of the sibling that reads
WRITES = ("distinct", "fill")
RANK, CONTIGUOUS_SIDE = Ints(0, 5), 3  # contiguous_clone's inputs
RESIZE_SIDE, RESIZE_DIMS = Ints(0, 4), 4  # resize_set's new shape
OVERLAP_SIDE, OVERLAP_TRAILING = Ints(1, 4), 1  # overlap_rules' (side, side, *trailing) inputs
STORAGE_DIMS, STORAGE_SIDE, STORAGE_STEPS = 3, 4, Ints(1, 2)
MEMORY_FORMATS = (torch.preserve_format, torch.contiguous_format, torch.channels_last, torch.channels_last_3d)


def _chain_params(families: tuple[str, ...], input_dims: int, input_side: int, steps: Ints,
                  reader: Ints | None) -> CaseParams:
    """A chain scenario's stored values: its chains' bounds, and the rule that they are views of its input of at
    most as many elements as its strategy can make (counted before each step runs)."""
    most = most_elements(input_side ** input_dims, families, steps.high)
    fields = {"steps": chain_bound(families, steps.low, steps.high, most)}
    chains = ("steps",)
    if reader is not None:
        fields.update(write=OneOf(WRITES), reader=chain_bound(families, reader.low, reader.high, most))
        chains = ("steps", "reader")
    fits = (f"every chain is views of the input of at most {most} elements",
            lambda p: all(chain_fits(p["input"], p[name], most) for name in chains))
    return CaseParams(fields, input=Tensors(input_side ** input_dims, input_dims), rules=(fits,))


PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through the same ranges
    **{scenario: _chain_params(families, WRITTEN_DIMS, WRITTEN_SIDE, CHAIN_STEPS, READER_STEPS)
       for scenario, families in _CHAIN_FAMILIES.items()},
    "contiguous_clone": CaseParams({"memory_format": OneOf(MEMORY_FORMATS)},
                                   input=Tensors(CONTIGUOUS_SIDE ** RANK.high, RANK.high)),
    "resize_set": CaseParams({"shape": Lists(RESIZE_SIDE, 0, RESIZE_DIMS),
                              "memory_format": OneOf((torch.contiguous_format, torch.channels_last))},
                             input=Tensors(WRITTEN_SIDE ** WRITTEN_DIMS, WRITTEN_DIMS)),
    "overlap_rules": CaseParams({"kind": OneOf(OVERLAP_KINDS)},
                                input=Tensors(OVERLAP_SIDE.high ** (2 + OVERLAP_TRAILING), 2 + OVERLAP_TRAILING)),
    "storage_shared": _chain_params(tuple(FAMILIES), STORAGE_DIMS, STORAGE_SIDE, STORAGE_STEPS, None),
}


def _written(dtype) -> st.SearchStrategy[torch.Tensor]:
    """Inputs the program writes through: any layout but overlapping ones, small."""
    return tensors(dtype, max_dims=WRITTEN_DIMS, max_side=WRITTEN_SIDE, allow_overlap=False)


def chain_cases(cts, families):
    inputs = _written(cts.dtype)

    @st.composite
    def draw(draw_):
        t = draw_(inputs, label="input")
        steps = draw_view_chain(draw_, t, families, min_steps=CHAIN_STEPS.low, max_steps=CHAIN_STEPS.high)
        overlapping = is_overlapping(apply_steps(t, steps))  # distinct values would depend on the write order
        write = "fill" if overlapping else draw_(st.sampled_from(WRITES), label="write")
        reader = draw_view_chain(draw_, t, families, min_steps=READER_STEPS.low, max_steps=READER_STEPS.high)
        return _case(cts, t, (steps, write, reader), f"steps {steps}", f"write {write}", f"sibling {reader}")

    return draw()


def contiguous_cases(cts):
    by_rank = {rank: tensors(cts.dtype, shapes(min_dims=rank, max_dims=rank, max_side=CONTIGUOUS_SIDE))
               for rank in range(RANK.low, RANK.high + 1)}

    @st.composite
    def draw(draw_):
        rank = draw_(st.sampled_from((4, 5, 0, 1, 2, 3)), label="rank")  # memory formats first
        t = draw_(by_rank[rank], label="input")
        formats = [torch.preserve_format, torch.contiguous_format]
        channels_last = {4: torch.channels_last, 5: torch.channels_last_3d}.get(rank)
        if channels_last is not None:
            formats.append(channels_last)
            if draw_(st.booleans(), label="channels-last input"):  # rarely drawn by a re-layout alone
                t = t.contiguous(memory_format=channels_last)
        memory_format = draw_(st.sampled_from(formats), label="memory format")
        return _case(cts, t, (memory_format,), str(memory_format))

    return draw()


def resize_cases(cts):
    inputs = _written(cts.dtype)

    @st.composite
    def draw(draw_):
        t = draw_(inputs, label="input")
        shape = tuple(draw_(Lists(RESIZE_SIDE, 0, RESIZE_DIMS).strategy(), label="new shape"))
        formats = [torch.contiguous_format] + ([torch.channels_last] if len(shape) == 4 else [])
        memory_format = draw_(st.sampled_from(formats), label="memory format")
        return _case(cts, t, (shape, memory_format), f"resize_ to {shape} ({memory_format})")

    return draw()


def overlap_cases(cts):
    @st.composite
    def draw(draw_):
        kind = draw_(st.sampled_from(OVERLAP_KINDS), label="kind")
        side = draw_(OVERLAP_SIDE.strategy(), label="side")
        rest = tuple(draw_(Lists(OVERLAP_SIDE, 0, OVERLAP_TRAILING).strategy(), label="trailing sizes"))
        t = draw_relayout(draw_, draw_values(draw_, (side, side, *rest), cts.dtype), allow_overlap=False)
        return _case(cts, t, (kind,), kind)

    return draw()


def storage_cases(cts):
    inputs = tensors(cts.dtype, max_dims=STORAGE_DIMS, max_side=STORAGE_SIDE, allow_empty=False, allow_overlap=False)

    @st.composite
    def draw(draw_):
        t = draw_(inputs, label="input")
        steps = draw_view_chain(draw_, t, tuple(FAMILIES), min_steps=STORAGE_STEPS.low, max_steps=STORAGE_STEPS.high)
        return _case(cts, t, (steps,), f"steps {steps}")

    return draw()


def _storage_check(cts, row=None):
    """Exact comparison, except that a device without data pointers cannot show storage sharing (unavailable)."""
    exact = exact_program_check(cts, storage_shared)
    run = run_program(storage_shared)

    def check(case):
        if cts.on_device_call(run, case.sample, what=" (storage_shared)") == "no data pointer":
            raise CaseUnavailable("the device's storages have no data pointer (meta, a Python wrapper-subclass "
                                  "backend): storage sharing cannot be observed")
        exact(case)

    return check


_CASES = {"contiguous_clone": contiguous_cases, "resize_set": resize_cases, "overlap_rules": overlap_cases,
          "storage_shared": storage_cases}


# the aten overloads views dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten._unsafe_view.default", "aten.add.Tensor", "aten.add.out", "aten.add_.Tensor", "aten.alias.default",
    "aten.arange.start_out", "aten.as_strided.default", "aten.clone.default", "aten.copy_.default",
    "aten.detach.default", "aten.diagonal.default", "aten.empty.memory_format", "aten.empty_like.default",
    "aten.eq.Scalar", "aten.expand.default", "aten.fill_.Scalar", "aten.permute.default", "aten.remainder.Scalar",
    "aten.resize_.default", "aten.select.int", "aten.set_.source_Tensor", "aten.slice.Tensor", "aten.split.Tensor",
    "aten.squeeze.dim", "aten.t.default", "aten.transpose.int", "aten.unbind.int", "aten.unfold.default",
    "aten.unsqueeze.default", "aten.view.default",
)


def _cases_of(scenario: str):
    """A scenario's strategy: a chain family's view chains, or the scenario's own draws."""
    if scenario in _CHAIN_FAMILIES:
        return lambda cts: chain_cases(cts, _CHAIN_FAMILIES[scenario])
    return _CASES[scenario]


def _comparison(scenario: str):
    """Bit for bit; storage sharing also needs data pointers the device may not have (`_storage_check`)."""
    return Custom(_storage_check, bits=True) if scenario == "storage_shared" else Exact()


test_views = scenario_suite(
    "views", capability="inference", level=3, dtypes=VIEW_DTYPES, overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], program, _comparison(name), cases=_cases_of(name))
               for name, program in PROGRAMS.items()])
