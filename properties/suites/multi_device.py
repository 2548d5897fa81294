"""Multiple devices: tensors on two devices of the backend (`<type>:0`, `<type>:1`) copy, compute and fail as on CUDA.

Scenarios (values from a drawn seed, copies of up to 135K elements):
- `cross_copy`: `x.to("<type>:1")`, `copy_` from device 0 into a tensor on device 1 and back with
  `.to("<type>:0")` keep every element's bits, and each result is on the device asked for.
- `second_device_ops`: a fixed chain of ops (elementwise, a cumulative sum, a reduction over rows, a
  matmul, softmax) run on device 1 equals the same chain on CPU (allclose, float32: rtol 1e-4,
  atol 1e-5, which covers reordered sums), and every result stays on device 1.
- `guard_placement`: inside `module.device(1)` (and after `set_device(1)`) factories given the
  device type without an index land on device 1, `new_*`/`*_like` of a device-0 tensor stay on device
  0; after the guard the current device is the one before.
- `per_device_memory`: a tensor of n float32 elements made on device 1 raises `memory_allocated(1)` by at least
  its bytes and does not raise `memory_allocated(0)`; after `del` device 1 falls back (needs the runtime's
  `memory_allocated`, which the device_api capability claims: without that claim, runtime_unavailable);
- `mixed_device_error`: `x0 + x1`, `torch.mm`, `torch.cat` and `index_select` mixing the two devices
  raise RuntimeError (error parity with CUDA: not NotImplementedError or another type), so does
  `x0 * c` with `c` a CPU tensor of n elements, while a 0-dim CPU tensor is a scalar CUDA accepts
  (`x0 + s` gives CPU's values); the device's tensors are unchanged after.
The oracle is CPU (values) and CUDA's documented behaviour (placement, errors).

An item whose device has fewer than two devices (`torch.<type>.device_count() < 2`) or whose
manifest says `device_count < 2` is runtime_unavailable with that reason: the CPU validation target
has one device, so every multi_device item is runtime_unavailable there. A replayed case that the
replay claims (found on this device type, replayed without --manifest, or with one declaring
multi_device) fails instead where the device reports fewer than two: the devices it was found with are gone.

Limits: devices 0 and 1 only; no peer-access settings; copies are blocking (non_blocking copies
belong to the pinned_memory and streams suites).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints
from torchcts.cases.scenario_case import INPUT, scenario_case
from torchcts.properties.runtime_checks import (claimed, invariants, observe, on_validation_target, require,
                                                runtime_module, unavailable)
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("copies across `<type>:0` and `<type>:1` keep bits, ops on device 1 equal CPU's, factories follow the "
          "guard, memory statistics stay per device, mixed-device ops raise RuntimeError; one device: "
          "runtime_unavailable")

DTYPES = ("float32",)
SCENARIOS = ("cross_copy", "second_device_ops", "guard_placement", "per_device_memory", "mixed_device_error")


# -- the programs: torch only -----------------------------------------------------------------------------------------

def _pair(device):
    kind = torch.device(device).type
    return torch.device(kind, 0), torch.device(kind, 1)


def _values(n, seed):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed))


def _same(got, want):
    return got.shape == want.shape and bool(torch.equal(got.cpu(), want))


def cross_copy(device, n, seed):
    """x (n values) on device 0 copied to device 1 by .to and copy_, and back: the same values, on the device asked."""
    first, second = _pair(device)
    values = _values(n, seed)
    x = values.to(first)
    moved = x.to(second)
    into = torch.empty(n, device=second)
    into.copy_(x)
    back = moved.to(first)
    for what, tensor, where in (("x.to(<1>)", moved, second), ("empty(<1>).copy_(x)", into, second),
                                ("x.to(<1>).to(<0>)", back, first)):
        yield observe(f"{what} is on {where}", tensor.device == where, tensor.device)
        yield observe(f"{what} holds x's {n} values", _same(tensor, values),
                      f"{int((tensor.cpu() != values).sum())} elements differ" if tensor.shape == values.shape else
                      tensor.shape)


def _chain(x, rows):
    y = (x * 1.5 - 0.25).sin() + x.abs()
    m = y.reshape(rows, -1)
    return [y, y.cumsum(0), m.sum(1), m @ m.t(), torch.softmax(m, 1)]


def second_device_ops(device, n, rows, seed):
    """The chain of ops on device 1 equals CPU's; its results stay on device 1."""
    _, second = _pair(device)
    values = _values(n * rows, seed)
    names = ("(x*1.5-0.25).sin()+x.abs()", "cumsum(0)", "sum(1)", "m @ m.t()", "softmax(m, 1)")
    for name, got, want in zip(names, _chain(values.to(second), rows), _chain(values, rows)):
        close = got.shape == want.shape and bool(torch.allclose(got.cpu(), want, rtol=1e-4, atol=1e-5))
        error = (got.cpu() - want).abs().max().item() if got.shape == want.shape else got.shape
        yield observe(f"{name} on {second} equals CPU's", close, f"max abs error {error}")
        yield observe(f"{name} stays on {second}", got.device == second, got.device)


def guard_placement(device, n):
    """Factories without an index land on the guard's (or set_device's) device; *_like/new_* follow their input."""
    first, second = _pair(device)
    kind = first.type
    module = getattr(torch, kind)
    start = module.current_device()
    anchor = torch.zeros(n, device=first)
    try:
        module.set_device(0)
        with module.device(1):
            inside = [torch.empty(n, device=kind), torch.ones(n, device=kind), torch.arange(n, device=kind)]
            followers = [torch.zeros_like(anchor), anchor.new_ones(n), anchor + 1]
        after = torch.empty(n, device=kind)
        module.set_device(1)
        set_one = torch.full((n,), 2.0, device=kind)
    finally:
        module.set_device(start)
    yield observe(f"index-less factories inside device(1) land on {second}",
                  all(t.device == second for t in inside), [str(t.device) for t in inside])
    yield observe(f"zeros_like/new_ones/+ of a {first} tensor stay on {first} inside device(1)",
                  all(t.device == first for t in followers), [str(t.device) for t in followers])
    yield observe(f"after the guard index-less factories land on {first} again", after.device == first, after.device)
    yield observe(f"after set_device(1) a factory lands on {second}", set_one.device == second, set_one.device)


def per_device_memory(device, n):
    """n float32 elements made on device 1 count on device 1 only, and are given back by del."""
    first, second = _pair(device)
    module = getattr(torch, first.type)
    before = module.memory_allocated(first), module.memory_allocated(second)
    made = torch.empty(n, device=second)
    during = module.memory_allocated(first), module.memory_allocated(second)
    del made
    after = module.memory_allocated(second)
    yield observe(f"memory_allocated({second}) grows by >= {4 * n} bytes for {n} float32 elements there",
                  during[1] - before[1] >= 4 * n, f"{before[1]} -> {during[1]}")
    yield observe(f"memory_allocated({first}) does not grow with an allocation on {second}", during[0] <= before[0],
                  f"{before[0]} -> {during[0]}")  # (it may fall: a collection frees device-0 tensors meanwhile)
    yield observe(f"memory_allocated({second}) falls back to {before[1]} after del", after <= before[1], after)


def _raised(attempt):
    """(type, message) of what `attempt()` raises, or None (no exception object is kept: no reference cycle
    through the traceback holds the device's tensors)."""
    try:
        attempt()
    except Exception as exc:  # noqa: BLE001 - the error's type is what is checked
        return type(exc), str(exc)
    return None


def _runtime_error(raised):
    """(whether `raised` is a RuntimeError but not NotImplementedError, what was raised) for `observe`."""
    holds = raised is not None and issubclass(raised[0], RuntimeError) and not issubclass(raised[0], NotImplementedError)
    return holds, "no exception" if raised is None else f"{raised[0].__name__}: {raised[1][:120]}"


def mixed_device_error(device, n, seed):
    """Ops mixing devices 0 and 1 raise RuntimeError, as CUDA's do; the operands are unchanged."""
    first, second = _pair(device)
    values = _values(n, seed)
    x0, x1 = values.to(first), values.to(second)
    attempts = {"x0 + x1": lambda: x0 + x1, "torch.mm": lambda: torch.mm(x0[:, None], x1[None, :]),
                "torch.cat": lambda: torch.cat([x0, x1]),
                "index_select": lambda: x0.index_select(0, torch.zeros(1, dtype=torch.long, device=second)),
                "x0.add_(x1)": lambda: x0.add_(x1)}
    for what, attempt in attempts.items():
        yield observe(f"{what} across {first} and {second} raises RuntimeError", *_runtime_error(_raised(attempt)))
    on_cpu, scalar = values.clone(), torch.tensor(2.5)
    yield observe(f"x0 * (a CPU tensor of {n} elements) raises RuntimeError, as CUDA's elementwise ops do",
                  *_runtime_error(_raised(lambda: x0 * on_cpu)))
    with_scalar = _raised(lambda: x0 + scalar)
    yield observe("x0 + (a 0-dim CPU tensor) is allowed (a scalar) and gives CPU's values",
                  with_scalar is None and _same(x0 + scalar, values + scalar),
                  with_scalar if with_scalar is not None else "other values")
    yield observe("the operands are unchanged", _same(x0, values) and _same(x1, values))


PROGRAMS = {"cross_copy": cross_copy, "second_device_ops": second_device_ops, "guard_placement": guard_placement,
            "per_device_memory": per_device_memory, "mixed_device_error": mixed_device_error}


# -- cases ------------------------------------------------------------------------------------------------------------

PAGES, REMAINDER = Ints(0, 32), Ints(1, 4095)  # cross_copy's elements: 4096 * pages + remainder
ELEMENTS = Ints(REMAINDER.low, PAGES.high * 4096 + REMAINDER.high)
SMALL, ROWS, SEED = Ints(1, 64), Ints(1, 32), Ints(0, 2**16 - 1)
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds
    "cross_copy": CaseParams({"n": ELEMENTS, "seed": SEED}),
    "second_device_ops": CaseParams({"n": SMALL, "rows": ROWS, "seed": SEED}),
    "guard_placement": CaseParams({"n": SMALL}),
    "per_device_memory": CaseParams({"n": ELEMENTS}),
    "mixed_device_error": CaseParams({"n": SMALL, "seed": SEED}),
}


def _elements():
    """1..135167 elements (up to 528 KiB of float32): 4096 times a drawn 0..32 plus 1..4095, shrinking to 1."""
    return st.tuples(PAGES.strategy(), REMAINDER.strategy()).map(lambda p: p[0] * 4096 + p[1])


def multi_device_cases(scenario, dtype) -> st.SearchStrategy[Case]:
    """`scenario`'s cases, its values by their names in PARAMS (described in that order)."""
    @st.composite
    def draw_case(draw):
        seed = SEED.strategy()
        if scenario == "cross_copy":
            values = {"n": draw(_elements(), label="elements"), "seed": draw(seed, label="seed of the values")}
        elif scenario == "second_device_ops":
            values = {"n": draw(SMALL.strategy(), label="columns"), "rows": draw(ROWS.strategy(), label="rows"),
                      "seed": draw(seed, label="seed of the values")}
        elif scenario == "guard_placement":
            values = {"n": draw(SMALL.strategy(), label="elements")}
        elif scenario == "per_device_memory":
            values = {"n": draw(_elements(), label="elements")}
        else:
            values = {"n": draw(SMALL.strategy(), label="elements"), "seed": draw(seed, label="seed of the values")}
        return scenario_case(scenario, dtype, PARAMS[scenario], {INPUT: torch.zeros(1), **values},
                             f"{scenario}{list(values.values())}")

    return draw_case()


def two_devices(cts, scenario: str) -> None:
    """The runtime functions the scenario needs, and two devices (the device's and the manifest's count): one device
    is runtime_unavailable, except in a replay that claims the case found with two (its devices are gone: failed)."""
    module = runtime_module(cts)
    require(cts, module, "device_count", "set_device", "current_device",
            *(("device",) if scenario == "guard_placement" else ()))
    if scenario == "per_device_memory":
        require(cts, module, "memory_allocated", capability="device_api")
    count = module.device_count()
    if count < 2 and cts.replay is not None and not on_validation_target(cts) and claimed(cts):
        raise AssertionError(f"torch.{cts.target.device_type}.device_count() is {count}: the multi_device case was "
                             "found with two devices, which this replay claims (replay with a --manifest that does "
                             "not declare multi_device on a machine with one)")
    if count < 2:
        raise unavailable(f"torch.{cts.target.device_type}.device_count() is {count}: two devices are needed")
    if cts.manifest.device_count < 2:
        raise unavailable(f"the manifest's device_count is {cts.manifest.device_count}: two devices are needed")


# Facts about two devices of the backend (placement, bits kept, errors; second_device_ops compares with CPU inside its
# program): each row's program observes them, given the case's values by name, once `two_devices` holds.
test_multi_device = scenario_suite(
    "multi_device", capability="multi_device", level=7, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=Custom(invariants(PROGRAMS[name], two_devices)),
                        cases=lambda cts, name=name: multi_device_cases(name, cts.dtype)) for name in SCENARIOS])
