"""Streams: work queued on device streams lands in order, and what orders streams (waits, synchronize) orders them.

Each scenario runs a correct program (one that orders every cross-stream read, so it holds on any
correct device, whatever the race timing) through the device's runtime module, used generically:
`module.Stream(device)`, `module.current_stream()`, `module.stream(s)`, `s.wait_stream(other)`,
`s.synchronize()`, `s.query()`, `module.synchronize()`:
- `stream_order`: a drawn chain of ops on a side stream, then `module.synchronize()`;
- `stream_synchronize`: the same, then `s.synchronize()`; `s.query()` is then True;
- `wait_stream`: a producer chain on a side stream, a consumer chain on another stream (the current
  one or a side stream) after `consumer.wait_stream(producer)`; 1..3 side streams;
- `synchronize_all`: an independent chain on each of 1..3 side streams, one `module.synchronize()`;
- `record_stream`: a tensor made on one stream, used on another, `record_stream`ed and deleted while
  the first stream allocates again: the consumer's values stay right;
- `non_blocking_copies`: on a side stream, CPU -> device and device -> CPU copies with
  `non_blocking=True`; after `module.synchronize()` the CPU copy holds the chain's values.
Ops come from a small fixed list (sin, tanh, silu, an affine map, an in-place add, a matmul with a
scaled random square matrix), so values stay bounded. Shapes, chains, seeds and the streams that
produce and consume are drawn.

The oracle is the same chain computed on CPU in the check, compared within rtol=1e-3, atol=1e-4
(device kernels may round differently; a value that never landed reads as garbage or, on the faulty
device, as NaN). Every read happens after the program ordered it, so a pass on a real device is not
luck of timing; a failure means an ordering primitive did not order.

CPU (validation) has `Stream`, `current_stream`, `stream`, `wait_stream` and `synchronize`, and runs
everything at once: `stream_order`, `wait_stream`, `synchronize_all` and `non_blocking_copies` pass;
`torch.cpu.Stream` has no `synchronize`/`query` and is no `torch.Stream` (which `record_stream`
takes), so `stream_synchronize` and `record_stream` are runtime_unavailable there.

Limits: one device; float32; stream priorities, `torch.cuda.graphs`, external streams and the
caching allocator's reuse across streams are not observed directly (`record_stream` only checks
that values survive: a device that reuses a recorded block too early fails it); a device whose streams happen to be synchronous passes every scenario (the
suite proves ordering primitives order, not that streams overlap).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Flag, Ints, Lists, OneOf
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.runtime_checks import (invariants, observe, on_validation_target, require, runtime_module,
                                                unavailable)
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.properties.stream_programs import agrees, chain, chain_bound, device_module, inputs, op_chains, to_side

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("work on side streams lands in order; `wait_stream`, stream and device `synchronize` and `record_stream` "
          "order it (values equal CPU's chain); `query()` True after synchronize; `non_blocking` copies land after "
          "synchronize")

DTYPES = ("float32",)
SCENARIOS = ("stream_order", "stream_synchronize", "wait_stream", "synchronize_all", "record_stream",
             "non_blocking_copies")


# -- the programs: torch only -----------------------------------------------------------------------------------------

def stream_order(device, rows, cols, seed, ops, use_stream_sync):
    module = device_module(device)
    x, w = inputs(rows, cols, seed)
    side = module.Stream(device)
    dx, dw = to_side(module, device, side, x, w)
    with module.stream(side):
        out = chain(dx, dw, ops)
    if use_stream_sync:
        side.synchronize()
        yield observe("stream.query() is True after stream.synchronize()", side.query() is True, side.query())
    else:
        module.synchronize(device)
    yield agrees(f"the chain {ops} on a side stream after synchronize", out, chain(x, w, ops))


def wait_stream(device, rows, cols, seed, produce, consume, streams, producer, consumer):
    """`streams` side streams; stream `producer` runs `produce`, stream `consumer` (-1: the current stream) waits for
    it and runs `consume` on the result; the current stream waits for the consumer before reading."""
    module = device_module(device)
    x, w = inputs(rows, cols, seed)
    side = [module.Stream(device) for _ in range(streams)]
    current = module.current_stream(device)
    make, use = side[producer], current if consumer < 0 else side[consumer]
    dx, dw = to_side(module, device, make, x, w)
    with module.stream(make):
        made = chain(dx, dw, produce)
    use.wait_stream(make)
    with module.stream(use):
        used = chain(made, dw, consume)
    current.wait_stream(use)
    yield agrees(f"{consume} after wait_stream on {produce}", used, chain(chain(x, w, produce), w, consume))


def synchronize_all(device, rows, cols, seeds, chains):
    """One side stream per chain, each on its own input; one device-wide synchronize lands them all."""
    module = device_module(device)
    side = [module.Stream(device) for _ in chains]
    cases, results = [inputs(rows, cols, seed) for seed in seeds], []
    for stream, (x, w), ops in zip(side, cases, chains):
        dx, dw = to_side(module, device, stream, x, w)
        with module.stream(stream):
            results.append(chain(dx, dw, ops))
    module.synchronize(device)
    for index, (out, (x, w), ops) in enumerate(zip(results, cases, chains)):
        yield agrees(f"stream {index} of {len(chains)}: {ops} after module.synchronize()", out, chain(x, w, ops))


def record_stream(device, rows, cols, seed, produce, consume, churn):
    """Make a tensor on stream A, use it on stream B, record_stream(B), delete it, allocate `churn` tensors of its
    size on A (which may reuse its memory unless the record holds it), then synchronize."""
    module = device_module(device)
    x, w = inputs(rows, cols, seed)
    first, second = module.Stream(device), module.Stream(device)
    dx, dw = to_side(module, device, first, x, w)
    with module.stream(first):
        made = chain(dx, dw, produce)
    second.wait_stream(first)
    with module.stream(second):
        used = chain(made, dw, consume)
    made.record_stream(second)
    del made
    with module.stream(first):
        garbage = [torch.full((rows, cols), -7.0, device=device) for _ in range(churn)]
    module.synchronize(device)
    del garbage
    yield agrees(f"{consume} on stream B of a tensor made on A, recorded and freed", used,
                 chain(chain(x, w, produce), w, consume))


def non_blocking_copies(device, rows, cols, seed, ops, via_copy):
    """On a side stream: CPU -> device with non_blocking (`to` or `copy_`), a chain, device -> CPU with
    non_blocking; module.synchronize() before reading the CPU copy."""
    module = device_module(device)
    x, w = inputs(rows, cols, seed)
    side = module.Stream(device)
    side.wait_stream(module.current_stream(device))
    with module.stream(side):
        if via_copy:
            dx = torch.empty(rows, cols, device=device)
            dx.copy_(x, non_blocking=True)
        else:
            dx = x.to(device, non_blocking=True)
        dw = w.to(device, non_blocking=True)
        host = chain(dx, dw, ops).to("cpu", non_blocking=True)
    module.synchronize(device)
    yield agrees(f"a non_blocking round trip through {ops}", host, chain(x, w, ops))


PROGRAMS = {"stream_order": stream_order, "stream_synchronize": stream_order, "wait_stream": wait_stream,
            "synchronize_all": synchronize_all, "record_stream": record_stream,
            "non_blocking_copies": non_blocking_copies}


# -- facilities -------------------------------------------------------------------------------------------------------

MODULE_NEEDS = ("Stream", "current_stream", "stream", "synchronize")
STREAM_METHODS = {"stream_synchronize": ("wait_stream", "synchronize", "query")}


def require_streams(cts, scenario):
    module = runtime_module(cts)
    require(cts, module, *MODULE_NEEDS, capability="streams")
    label = f"torch.{cts.target.device_type}.Stream"
    require(cts, module.Stream, "wait_stream", *STREAM_METHODS.get(scenario, ()), label=label)
    if scenario == "record_stream" and on_validation_target(cts) and not issubclass(module.Stream, torch.Stream):
        raise unavailable(f"{label} is no torch.Stream, which Tensor.record_stream takes: CPU has no stream to record")


# -- cases ------------------------------------------------------------------------------------------------------------

ROWS, COLS, SEED = Ints(1, 8), Ints(1, 8), Ints(0, 2**16 - 1)
STREAMS = Ints(1, 3)  # side streams of wait_stream and synchronize_all
CHURN = Ints(1, 3)  # allocations on stream A after record_stream's free
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds
    "stream_order": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "ops": chain_bound(),
                                "use_stream_sync": OneOf((False,))}),
    "stream_synchronize": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "ops": chain_bound(),
                                      "use_stream_sync": OneOf((True,))}),
    "wait_stream": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "produce": chain_bound(),
                               "consume": chain_bound(), "streams": STREAMS, "producer": Ints(0, STREAMS.high - 1),
                               "consumer": Ints(-1, STREAMS.high - 1)},
                              rules=(("producer < streams", lambda p: p["producer"] < p["streams"]),
                                     ("consumer < streams and consumer != producer",
                                      lambda p: p["consumer"] < p["streams"] and p["consumer"] != p["producer"]))),
    "synchronize_all": CaseParams({"rows": ROWS, "cols": COLS, "seeds": Lists(Ints(0, SEED.high + STREAMS.high),
                                                                              1, STREAMS.high),
                                   "chains": Lists(chain_bound(), 1, STREAMS.high)},
                                  rules=(("as many seeds as chains", lambda p: len(p["seeds"]) == len(p["chains"])),)),
    "record_stream": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "produce": chain_bound(),
                                 "consume": chain_bound(), "churn": CHURN}),
    "non_blocking_copies": CaseParams({"rows": ROWS, "cols": COLS, "seed": SEED, "ops": chain_bound(),
                                       "via_copy": Flag()}),
}


def stream_cases(scenario):
    @st.composite
    def draw_case(draw):
        rows = draw(ROWS.strategy(), label="rows")
        cols = draw(COLS.strategy(), label="cols")
        seed = draw(SEED.strategy(), label="seed")
        if scenario in ("stream_order", "stream_synchronize"):
            ops = draw(op_chains(), label="ops")
            values, what = {"seed": seed, "ops": ops, "use_stream_sync": scenario == "stream_synchronize"}, f"{ops}"
        elif scenario == "wait_stream":
            streams = draw(STREAMS.strategy(), label="side streams")
            producer = draw(st.integers(0, streams - 1), label="producer")
            consumer = draw(st.sampled_from([-1, *[i for i in range(streams) if i != producer]]), label="consumer")
            produce, consume = draw(op_chains(), label="produce"), draw(op_chains(), label="consume")
            values = {"seed": seed, "produce": produce, "consume": consume, "streams": streams, "producer": producer,
                      "consumer": consumer}
            what = (f"{streams} side streams: {produce} on side {producer}, then {consume} on "
                    f"{'the current stream' if consumer < 0 else f'side {consumer}'}")
        elif scenario == "synchronize_all":
            count = draw(STREAMS.strategy(), label="streams")
            chains = draw(st.lists(op_chains(), min_size=count, max_size=count), label="chains")
            seeds = [seed + i for i in range(count)]
            values, what = {"seeds": seeds, "chains": chains}, f"{count} side streams: {chains}"
        elif scenario == "record_stream":
            produce, consume = draw(op_chains(), label="produce"), draw(op_chains(), label="consume")
            churn = draw(CHURN.strategy(), label="allocations after the free")
            values = {"seed": seed, "produce": produce, "consume": consume, "churn": churn}
            what = f"{produce} on A, {consume} on B, churn {churn}"
        else:
            ops = draw(op_chains(), label="ops")
            via_copy = draw(st.booleans(), label="copy_ (else to)")
            values, what = {"seed": seed, "ops": ops, "via_copy": via_copy}, f"{ops}, {'copy_' if via_copy else 'to'}"
        return scenario_case(scenario, torch.float32, PARAMS[scenario],
                             {"input": torch.zeros(1), "rows": rows, "cols": cols, **values},
                             f"{scenario} {rows}x{cols}: {what}")

    return draw_case()


# Ordering on the device's streams: each row's program observes it (its values against CPU's chain).
test_streams = scenario_suite(
    "streams", capability="streams", level=6, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=Custom(invariants(PROGRAMS[name], require_streams)),
                        cases=lambda cts, name=name: stream_cases(name)) for name in SCENARIOS])
