"""Events: an event marks a point in a stream's work; it completes, orders other streams and times work correctly.

Each scenario is a correct program using the device's runtime module generically (`module.Event`,
else `torch.Event(device=...)`; `record()` / `record(stream)`, `query()`, `synchronize()`,
`wait(stream)`, `stream.wait_event(e)`, `elapsed_time`):
- `query_after_synchronize`: an event recorded after a drawn chain (on the current or a side stream)
  and made to land (`event.synchronize()` or `module.synchronize()`) answers `query()` True, and the
  chain's values are CPU's; a never-recorded event answers True too (CUDA's contract).
- `query_polling`: the same event polled with `query()` a bounded number of times: whenever it
  answers True the chain's values must already be readable (True promises the work is done); after
  polling, `event.synchronize()` and the values again. A correct device may answer False or True
  while polling; only the promise True makes is checked (never "still False": a fast device may be done).
- `wait_event`: a producer chain on a side stream, an event recorded after it, a consumer on another
  stream (current or side) after `consumer.wait_event(e)` or `e.wait(consumer)`: CPU's values.
- `elapsed_time`: events with `enable_timing=True` around work and a host sleep of `sleep_ms`
  (start recorded, work, mid recorded, device synchronized, host sleeps, end recorded, end
  synchronized; start, mid and end each on the current or a side stream). Since start and mid
  completed before the sleep began and end cannot complete before it was recorded,
  elapsed(start, end) >= sleep_ms; since all three were recorded and completed between the host's two
  clock reads, elapsed(start, end) <= the host wall time + slack; elapsed(start, mid) <=
  elapsed(start, end); the two parts add up. All finite, none negative. A backend reporting seconds
  reads ~1000x below sleep_ms, one reporting microseconds ~1000x above the wall time: both caught with
  a sleep of >= 5 ms whatever the noise (the wall time only grows with noise).
- `timing_disabled`: `elapsed_time` between recorded, completed events of which at least one was
  made without `enable_timing` raises RuntimeError (not NotImplementedError: a missing kernel).

Oracle: values against the same chain on CPU (rtol=1e-3, atol=1e-4); timing against the host clock
(`time.perf_counter`), slack 2 ms + 2% for clock granularity.

CPU (validation): `torch.cpu.Event` takes no `enable_timing` and has no `elapsed_time`, so
`elapsed_time` and `timing_disabled` are runtime_unavailable; the others pass (CPU events complete
at record). Limits: one device; `blocking` and `interprocess` events, IPC handles and
`torch.cuda.Event.from_ipc_handle` are not exercised; device time stamps are only bounded, not
compared with a device clock.
"""

from __future__ import annotations

import math
import time

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Flag, Ints, Lists
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.runtime_checks import (invariants, observe, on_validation_target, require, runtime_module,
                                                unavailable)
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.properties.stream_programs import agrees, chain, chain_bound, device_module, inputs, op_chains, to_side

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("events complete (`query()` True after synchronize, True only once the work is readable), order streams "
          "(`wait_event`, `Event.wait`), time in milliseconds bounded by a host sleep and the wall time; "
          "`elapsed_time` without `enable_timing` raises RuntimeError")

DTYPES = ("float32",)
SCENARIOS = ("query_after_synchronize", "query_polling", "wait_event", "elapsed_time", "timing_disabled")
TIMED = ("elapsed_time", "timing_disabled")
POLLS = 50
SLACK_MS, SLACK_SHARE = 2.0, 0.02


# -- the programs: torch only -----------------------------------------------------------------------------------------

def new_event(device, timing=False):
    """An event of `device`'s runtime module (`torch.Event(device=...)` where the module has none)."""
    module = device_module(device)
    if not hasattr(module, "Event"):
        return torch.Event(device=device, enable_timing=timing)
    return module.Event(enable_timing=True) if timing else module.Event()


def stream_of(module, device, on_side):
    return module.Stream(device) if on_side else module.current_stream(device)


def query_after_synchronize(device, rows, cols, seed, ops, on_side, event_sync):
    module = device_module(device)
    yield observe("a never-recorded event's query() is True", new_event(device).query() is True)
    x, w = inputs(rows, cols, seed)
    stream = stream_of(module, device, on_side)
    dx, dw = to_side(module, device, stream, x, w)
    event = new_event(device)
    with module.stream(stream):
        out = chain(dx, dw, ops)
        event.record()
    event.synchronize() if event_sync else module.synchronize(device)
    yield observe("query() is True once the event was synchronized", event.query() is True)
    module.current_stream(device).wait_event(event)
    yield agrees(f"{ops} before the event, read after it landed", out, chain(x, w, ops))


def query_polling(device, rows, cols, seed, ops, in_context):
    module = device_module(device)
    x, w = inputs(rows, cols, seed)
    side = module.Stream(device)
    dx, dw = to_side(module, device, side, x, w)
    event = new_event(device)
    with module.stream(side):
        out = chain(dx, dw, ops)
        if in_context:
            event.record()
    if not in_context:
        event.record(side)
    expected = chain(x, w, ops)
    for _ in range(POLLS):
        if event.query():
            yield agrees(f"{ops} read as soon as query() said the event was complete", out, expected)
            break
        time.sleep(0.0002)
    event.synchronize()
    yield observe("query() is True after event.synchronize()", event.query() is True)
    yield agrees(f"{ops} read after event.synchronize()", out, expected)


def wait_event(device, rows, cols, seed, produce, consume, consumer_on_side, via_stream):
    module = device_module(device)
    x, w = inputs(rows, cols, seed)
    make, current = module.Stream(device), module.current_stream(device)
    use = module.Stream(device) if consumer_on_side else current
    dx, dw = to_side(module, device, make, x, w)
    made_event = new_event(device)
    with module.stream(make):
        made = chain(dx, dw, produce)
        made_event.record(make)
    use.wait_event(made_event) if via_stream else made_event.wait(use)
    with module.stream(use):
        used = chain(made, dw, consume)
    used_event = new_event(device)
    used_event.record(use)
    current.wait_event(used_event)
    yield agrees(f"{consume} after waiting on the event after {produce}", used, chain(chain(x, w, produce), w, consume))


def elapsed_time(device, rows, cols, seed, ops, sleep_ms, sides):
    """Events start, mid, end (each on a side stream where `sides` says) around `ops` and a host sleep."""
    module = device_module(device)
    x, w = inputs(rows, cols, seed)
    start_stream, mid_stream, end_stream = (stream_of(module, device, side) for side in sides)
    dx, dw = x.to(device), w.to(device)
    start, mid, end = (new_event(device, timing=True) for _ in range(3))
    for stream in {start_stream, mid_stream, end_stream} - {module.current_stream(device)}:
        stream.wait_stream(module.current_stream(device))
    began = time.perf_counter()
    start.record(start_stream)
    with module.stream(start_stream):
        out = chain(dx, dw, ops)
    mid_stream.wait_stream(start_stream)
    mid.record(mid_stream)
    module.synchronize(device)
    time.sleep(sleep_ms / 1000)
    end.record(end_stream)
    end.synchronize()
    wall_ms = (time.perf_counter() - began) * 1000
    whole, first, second = start.elapsed_time(end), start.elapsed_time(mid), mid.elapsed_time(end)
    slack = SLACK_MS + SLACK_SHARE * wall_ms
    seen = (f"start->mid {first} ms, mid->end {second} ms, start->end {whole} ms, slept {sleep_ms} ms, "
            f"wall {wall_ms:.3f} ms")
    yield observe("every elapsed time is a finite float, none negative",
                  all(isinstance(t, float) and math.isfinite(t) and t >= 0 for t in (whole, first, second)), seen)
    yield observe("start->end covers the host sleep between them (milliseconds, not seconds)",
                  whole >= sleep_ms * 0.98, seen)
    yield observe("start->end fits in the host's wall time around all three (milliseconds, not microseconds)",
                  whole <= wall_ms + slack, seen)
    yield observe("start->mid <= start->end", first <= whole + slack, seen)
    yield observe("start->mid + mid->end == start->end", abs(first + second - whole) <= slack, seen)
    yield agrees(f"{ops} timed between start and mid", out, chain(x, w, ops))


def timing_disabled(device, timed):
    """Two recorded, synchronized events; `timed` says which were made with enable_timing=True (not both)."""
    events = [new_event(device, timing) for timing in timed]
    for event in events:
        event.record()
    device_module(device).synchronize(device)
    try:
        value = events[0].elapsed_time(events[1])
    except NotImplementedError as exc:
        yield observe("elapsed_time raises RuntimeError, not NotImplementedError (a missing kernel)", False, repr(exc))
    except RuntimeError:
        pass
    else:
        yield observe(f"elapsed_time raises RuntimeError when enable_timing is {timed}", False, f"returned {value}")


PROGRAMS = {"query_after_synchronize": query_after_synchronize, "query_polling": query_polling,
            "wait_event": wait_event, "elapsed_time": elapsed_time, "timing_disabled": timing_disabled}


# -- facilities -------------------------------------------------------------------------------------------------------

def require_events(cts, scenario):
    module = runtime_module(cts)
    require(cts, module, "Stream", "current_stream", "stream", "synchronize", capability="events")
    require(cts, module.Stream, "wait_stream", "wait_event", label=f"torch.{cts.target.device_type}.Stream")
    event_class = getattr(module, "Event", torch.Event)
    label = f"torch.{cts.target.device_type}.Event" if hasattr(module, "Event") else "torch.Event"
    require(cts, event_class, "record", "query", "synchronize", "wait",
            *(("elapsed_time",) if scenario in TIMED else ()), label=label)
    if scenario in TIMED and on_validation_target(cts):
        try:
            new_event(cts.target.device, timing=True)
        except TypeError as exc:
            raise unavailable(f"{label} takes no enable_timing ({exc}): CPU events do not time") from exc


# -- cases ------------------------------------------------------------------------------------------------------------

ROWS, COLS, SEED = Ints(1, 8), Ints(1, 8), Ints(0, 2**16 - 1)
SLEEP_MS = Ints(5, 20)  # elapsed_time's host sleep between mid and end
SIDES = Lists(Flag(), 3, 3)  # elapsed_time: start, mid, end each on a side stream or the current one
TIMINGS = [[False, False], [True, False], [False, True]]  # timing_disabled: enable_timing of its two events
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds
    "query_after_synchronize": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "ops": chain_bound(),
                                           "on_side": Flag(), "event_sync": Flag()}),
    "query_polling": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "ops": chain_bound(), "in_context": Flag()}),
    "wait_event": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "produce": chain_bound(),
                              "consume": chain_bound(), "consumer_on_side": Flag(), "via_stream": Flag()}),
    "elapsed_time": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "ops": chain_bound(), "sleep_ms": SLEEP_MS,
                                "sides": SIDES}),
    "timing_disabled": CaseParams({"timed": Lists(Flag(), 2, 2)},
                                  rules=(("at most one event made with enable_timing",
                                          lambda p: list(p["timed"]) in TIMINGS),)),
}


def event_cases(scenario):
    @st.composite
    def draw_case(draw):
        rows = draw(ROWS.strategy(), label="rows")
        cols = draw(COLS.strategy(), label="cols")
        seed = draw(SEED.strategy(), label="seed")
        if scenario == "query_after_synchronize":
            ops, on_side = draw(op_chains(), label="ops"), draw(st.booleans(), label="on a side stream")
            event_sync = draw(st.booleans(), label="event.synchronize (else module.synchronize)")
            values = {"ops": ops, "on_side": on_side, "event_sync": event_sync}
            what = f"{ops}, side={on_side}, event_sync={event_sync}"
        elif scenario == "query_polling":
            ops = draw(op_chains(), label="ops")
            in_context = draw(st.booleans(), label="record() in the stream's context")
            values, what = {"ops": ops, "in_context": in_context}, f"{ops}, record() in context={in_context}"
        elif scenario == "wait_event":
            produce, consume = draw(op_chains(), label="produce"), draw(op_chains(), label="consume")
            on_side = draw(st.booleans(), label="consumer on a side stream")
            via_stream = draw(st.booleans(), label="stream.wait_event (else event.wait)")
            values = {"produce": produce, "consume": consume, "consumer_on_side": on_side, "via_stream": via_stream}
            what = f"{produce} then {consume}, consumer side={on_side}, wait_event={via_stream}"
        elif scenario == "elapsed_time":
            ops = draw(op_chains(), label="ops")
            sleep_ms = draw(SLEEP_MS.strategy(), label="sleep_ms")
            sides = draw(st.lists(st.booleans(), min_size=SIDES.min_size, max_size=SIDES.max_size),
                         label="start, mid, end on side streams")
            values = {"ops": ops, "sleep_ms": sleep_ms, "sides": sides}
            what = f"{ops}, sleep {sleep_ms} ms, sides {sides}"
        else:
            timed = draw(st.sampled_from(TIMINGS), label="enable_timing")
            values, what = {"timed": timed}, f"enable_timing {timed}"
        placed = {} if scenario == "timing_disabled" else {"rows": rows, "cols": cols, "seed": seed}
        return scenario_case(scenario, torch.float32, PARAMS[scenario], {"input": torch.zeros(1), **placed, **values},
                             f"{scenario} {rows}x{cols}: {what}")

    return draw_case()


# Facts about the device's events alone: each row's program observes them (its values against CPU's chain).
test_events = scenario_suite(
    "events", capability="events", level=6, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=Custom(invariants(PROGRAMS[name], require_events)),
                        cases=lambda cts, name=name: event_cases(name)) for name in SCENARIOS])
