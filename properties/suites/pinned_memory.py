"""Pinned host memory: `pin_memory()` gives a pinned copy with the source's values; non_blocking copies through it land.

Scenarios (each a correct program; the device's runtime module used generically):
- `pin_copy`: a drawn CPU tensor, contiguous, of up to ~160 KiB (sizes on both sides of 64 KiB are
  drawn); `t.pin_memory()` equals it, `is_pinned()` is True, the source stays unpinned, and a drawn
  view of the pinned copy (an offset slice, a transpose, a strided slice) is pinned too;
- `pin_views`: the same for non-contiguous or offset sources (a transpose, a strided slice, an
  offset window): the pinned copy holds the view's values, not its storage's;
- `to_device`: a drawn view (at a drawn offset) of a pinned tensor copied to the device with
  `non_blocking=True` (`to` or `copy_`), on the current or a side stream; equal after synchronize;
- `to_host`: a device result copied into a pinned CPU tensor (`torch.empty(...).pin_memory()`, then
  `copy_(..., non_blocking=True)`) or by `.to("cpu", non_blocking=True)`; equal after synchronize,
  the destination still pinned;
- `dataloader`: a `DataLoader(..., pin_memory=True, pin_memory_device=<device type>)` yields pinned
  batches with the dataset's values, in order, that copy to the device with non_blocking.

Oracle: the source's values, bit for bit (pinning and copies compute nothing); `is_pinned()` as
above. Limits: `torch.empty(..., pin_memory=True)` is not used (a Python backend cannot register
torch's pinned allocator hook, so the faulty device cannot serve it); pinned memory's page-locking
(its speed) is not observed, only that the runtime says pinned and values are right; float32 only.

CPU (validation): pinning needs an accelerator; torch's CPU-only build raises ("Cannot access
accelerator device when none is available"), so every scenario is runtime_unavailable there with
torch's message.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Flag, Ints, OneOf
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.runtime_checks import (invariants, observe, on_validation_target, require, runtime_module,
                                                unavailable)
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("`pin_memory()` gives a pinned copy with the source's values (non-contiguous and offset sources too; "
          "views of it pinned; the source not); `non_blocking` copies to and from pinned memory land; DataLoader "
          "`pin_memory` yields pinned batches")

DTYPES = ("float32",)
SCENARIOS = ("pin_copy", "pin_views", "to_device", "to_host", "dataloader")
VIEWS = ("whole", "offset", "transpose", "strided")


# -- the programs: torch only -----------------------------------------------------------------------------------------

def source(rows, cols, seed):
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed))


def view_of(tensor, kind, offset):
    """A view of 2-D `tensor`: whole, an offset window of its flat storage, its transpose, every other column."""
    if kind == "whole":
        return tensor
    if kind == "offset":
        flat = tensor.view(-1)
        start = min(offset, flat.numel() - 1)
        return flat[start:]
    if kind == "transpose":
        return tensor.t()
    if kind == "strided":
        return tensor[:, ::2]
    raise ValueError(f"unknown view {kind!r}")


def equal(what, got, expected):
    holds = got.shape == expected.shape and torch.equal(got.cpu(), expected)
    return observe(what, holds, f"shape {tuple(got.shape)} vs {tuple(expected.shape)}, first values "
                                f"{got.cpu().flatten()[:3].tolist()} vs {expected.flatten()[:3].tolist()}")


def pin_copy(device, rows, cols, seed, source_view, pinned_view, offset):
    """Pin a view (`source_view`) of a pageable tensor; check values, pinning, and a view (`pinned_view`) of it."""
    src = view_of(source(rows, cols, seed), source_view, offset)
    pinned = src.pin_memory()
    yield observe("pin_memory() is pinned", pinned.is_pinned() is True, pinned.is_pinned())
    yield observe("the source stays unpinned", src.is_pinned() is False, src.is_pinned())
    yield equal(f"pin_memory() of a {source_view} view holds its values", pinned, src)
    view = view_of(pinned if pinned.dim() == 2 else pinned.view(1, -1), pinned_view, offset)
    yield observe(f"a {pinned_view} view of pinned memory is pinned", view.is_pinned() is True,
                  f"is_pinned() {view.is_pinned()}, storage offset {view.storage_offset()}")


def to_device(device, rows, cols, seed, kind, offset, via_copy, on_side):
    module = getattr(torch, torch.device(device).type)
    src = view_of(source(rows, cols, seed).pin_memory(), kind, offset)
    stream = module.Stream(device) if on_side else module.current_stream(device)
    with module.stream(stream):
        if via_copy:
            out = torch.empty(src.shape, device=device)
            out.copy_(src, non_blocking=True)
        else:
            out = src.to(device, non_blocking=True)
    module.synchronize(device)
    yield equal(f"a {kind} view of pinned memory copied with non_blocking {'copy_' if via_copy else 'to'}", out, src)


def to_host(device, rows, cols, seed, via_copy, on_side):
    module = getattr(torch, torch.device(device).type)
    expected = source(rows, cols, seed)
    on_device = expected.to(device)
    stream = module.Stream(device) if on_side else module.current_stream(device)
    if on_side:
        stream.wait_stream(module.current_stream(device))
    with module.stream(stream):
        doubled = on_device * 2
        if via_copy:
            host = torch.empty(rows, cols).pin_memory()
            host.copy_(doubled, non_blocking=True)
        else:
            host = doubled.to("cpu", non_blocking=True)
    module.synchronize(device)
    yield equal(f"a non_blocking {'copy_ into pinned memory' if via_copy else 'to(cpu)'}", host, expected * 2)
    if via_copy:
        yield observe("the pinned destination stays pinned", host.is_pinned() is True, host.is_pinned())


def dataloader(device, rows, cols, seed, batch_size):
    data = source(rows, cols, seed)
    kind = torch.device(device).type  # on CPU itself: pinned for the process's accelerator
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=batch_size,
                                         pin_memory=True, pin_memory_device="" if kind == "cpu" else kind)
    module, moved, start = getattr(torch, torch.device(device).type), [], 0
    for (batch,) in loader:
        yield observe(f"batch at row {start} is pinned", batch.is_pinned() is True, batch.is_pinned())
        yield equal(f"batch at row {start} holds the dataset's rows", batch, data[start:start + batch_size])
        moved.append((start, batch.to(device, non_blocking=True)))
        start += batch_size
    module.synchronize(device)
    for start, batch in moved:
        yield equal(f"batch at row {start} on the device after a non_blocking copy", batch,
                    data[start:start + batch_size])


PROGRAMS = {"pin_copy": pin_copy, "pin_views": pin_copy, "to_device": to_device, "to_host": to_host,
            "dataloader": dataloader}


def require_pinning(cts, scenario):
    if on_validation_target(cts):
        try:
            torch.ones(1).pin_memory()
        except RuntimeError as exc:
            raise unavailable(f"pinned memory needs an accelerator; torch on this machine says: {exc}") from exc
    if scenario in ("to_device", "to_host"):
        require(cts, runtime_module(cts), "Stream", "current_stream", "stream", "synchronize",
                capability="pinned_memory")


# -- cases ------------------------------------------------------------------------------------------------------------

ROWS, COLS, SEED, OFFSET = Ints(1, 8), Ints(1, 8), Ints(0, 2**16 - 1), Ints(1, 8)
LARGE_ROWS, LARGE_COLS = Ints(1, 2), Ints(16385, 20000)  # pin_copy's tensors above 64 KiB
_PLACE = {"rows": ROWS, "cols": COLS, "seed": SEED}
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds
    "pin_copy": CaseParams({"rows": ROWS, "cols": Ints(COLS.low, LARGE_COLS.high), "seed": SEED,
                            "source_view": OneOf(VIEWS[:1]), "pinned_view": OneOf(VIEWS), "offset": OFFSET},
                           rules=(("cols <= 8, or rows <= 2 and cols in 16385..20000 (above 64 KiB)",
                                   lambda p: p["cols"] <= COLS.high or (p["rows"] <= LARGE_ROWS.high
                                                                        and p["cols"] >= LARGE_COLS.low)),)),
    "pin_views": CaseParams({**_PLACE, "source_view": OneOf(VIEWS[1:]), "pinned_view": OneOf(VIEWS),
                             "offset": OFFSET}),
    "to_device": CaseParams({**_PLACE, "kind": OneOf(VIEWS), "offset": OFFSET, "via_copy": Flag(), "on_side": Flag()}),
    "to_host": CaseParams({**_PLACE, "via_copy": Flag(), "on_side": Flag()}),
    "dataloader": CaseParams({**_PLACE, "batch_size": ROWS},
                             rules=(("batch_size <= rows", lambda p: p["batch_size"] <= p["rows"]),)),
}


def pinned_cases(scenario):
    @st.composite
    def draw_case(draw):
        large = scenario == "pin_copy" and draw(st.booleans(), label="above 64 KiB")
        rows = draw((LARGE_ROWS if large else ROWS).strategy(), label="rows")
        cols = draw((LARGE_COLS if large else COLS).strategy(), label="cols")
        seed = draw(SEED.strategy(), label="seed")
        offset = draw(OFFSET.strategy(), label="offset")
        if scenario in ("pin_copy", "pin_views"):
            kinds = VIEWS[:1] if scenario == "pin_copy" else VIEWS[1:]
            source_view = draw(st.sampled_from(kinds), label="source view")
            pinned_view = draw(st.sampled_from(VIEWS), label="view of the pinned copy")
            values = {"source_view": source_view, "pinned_view": pinned_view, "offset": offset}
            what = f"{source_view} source, {pinned_view} view"
        elif scenario == "to_device":
            kind = draw(st.sampled_from(VIEWS), label="view")
            via_copy, on_side = draw(st.booleans(), label="copy_ (else to)"), draw(st.booleans(), label="side stream")
            values = {"kind": kind, "offset": offset, "via_copy": via_copy, "on_side": on_side}
            what = f"{kind}, copy_={via_copy}, side={on_side}"
        elif scenario == "to_host":
            via_copy, on_side = draw(st.booleans(), label="copy_ (else to)"), draw(st.booleans(), label="side stream")
            values, what = {"via_copy": via_copy, "on_side": on_side}, f"copy_={via_copy}, side={on_side}"
        else:
            batch_size = draw(st.integers(ROWS.low, rows), label="batch size")
            values, what = {"batch_size": batch_size}, f"batch_size={batch_size}"
        return scenario_case(scenario, torch.float32, PARAMS[scenario],
                             {"input": torch.zeros(1), "rows": rows, "cols": cols, "seed": seed, **values},
                             f"{scenario} {rows}x{cols}: {what}")

    return draw_case()


# Facts about pinned memory and copies through it: each row's program observes them on the device alone.
test_pinned_memory = scenario_suite(
    "pinned_memory", capability="pinned_memory", level=6, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=Custom(invariants(PROGRAMS[name], require_pinning)),
                        cases=lambda cts, name=name: pinned_cases(name)) for name in SCENARIOS])
