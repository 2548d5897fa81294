"""Device API: the `torch.<device>` runtime module (and `torch.accelerator`) says and does what torch.cuda's does.

Each scenario is a torch-only program over the device's runtime module, returning observations:
- `availability`: `is_available()`; `device_count()` is at least the manifest's `device_count`, the
  same before, inside and after device switches (to a drawn list of indices), and equal to
  `torch.accelerator.device_count()` where the current accelerator is this device type.
- `set_device`: after `set_device(i)` (drawn i), `current_device()` is i and a factory given the
  device type without an index lands on device i.
- `device_guard`: inside `module.device(j)` the current device is j and index-less factories land on
  j; after the block the previous device is current again.
- `synchronize`: `synchronize()` and `synchronize(i)` return None after queued work, whose values then
  read as computed (a sum of a drawn arange).
- `properties`: `get_device_name(i)` and `get_device_properties(i).name` are non-empty strings and
  `total_memory`, where present, is positive.
- `memory_stats`: a drawn allocation (1 KiB..32 MiB, log-uniform) raises `memory_allocated()` by at
  least its bytes; `max_memory_allocated() >= memory_allocated()`; `memory_reserved() >=
  memory_allocated()`; after `del` the allocated bytes fall back to their level before.
- `peak_and_cache`: after freeing a drawn allocation, `reset_peak_memory_stats()` makes the peak the
  current allocated bytes; `empty_cache()` returns and reserved memory does not grow.
The oracle is the invariant itself (runtime_checks.invariant_check): these are facts about one
device, not values to compare with CPU.

CPU validation: torch.cpu has device_count, current_device, set_device, synchronize, is_available
(those scenarios pass) and no device guard, names, properties or memory statistics (those scenarios
are runtime_unavailable with the missing attributes named).

Limits: one thread; another process using the same device between two readings of the memory
statistics would perturb them (run the suite on a device of its own); memory statistics are read for
the current device only.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints, Lists
from torchcts.cases.scenario_case import scenario_case
from torchcts.engine.targets import CaseUnavailable
from torchcts.properties.runtime_checks import invariants, observe, on_validation_target, require, runtime_module
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("the `torch.<device>` runtime: availability, device count (at least the manifest's, steady across "
          "switches, as `torch.accelerator` says), current device and guard, synchronize, names and properties, "
          "memory statistics that move with allocations, peak reset and `empty_cache`")

DTYPES = ("float32",)
SCENARIOS = ("availability", "set_device", "device_guard", "synchronize", "properties", "memory_stats",
             "peak_and_cache")
NEEDS = {"availability": ("is_available", "device_count", "set_device", "current_device"),
         "set_device": ("set_device", "current_device", "device_count"),
         "device_guard": ("device", "current_device", "set_device", "device_count"),
         "synchronize": ("synchronize", "device_count"),
         "properties": ("get_device_name", "get_device_properties", "device_count"),
         "memory_stats": ("memory_allocated", "max_memory_allocated", "memory_reserved"),
         "peak_and_cache": ("memory_allocated", "max_memory_allocated", "memory_reserved",
                            "reset_peak_memory_stats", "empty_cache")}


# -- the programs: torch only -----------------------------------------------------------------------------------------

def _module(device):
    return getattr(torch, torch.device(device).type)


def _index(value):
    """A device index from what a runtime returns (torch.cpu.current_device() gives "cpu"; CPU tensors index None)."""
    if isinstance(value, int):
        return value
    index = torch.device(value).index
    return 0 if index is None else index


def _landed(device_type, n):
    return _index(torch.empty(n, device=device_type).device)


def availability(device, claimed, switches):
    """is_available, and device_count() >= `claimed`, unchanged while the current device switches through
    `switches` (indices taken modulo the count) and agreeing with torch.accelerator."""
    module, kind = _module(device), torch.device(device).type
    count = module.device_count()
    yield observe("is_available() is True", module.is_available() is True, module.is_available())
    yield observe(f"device_count() >= the manifest's device_count {claimed}", count >= claimed >= 1, count)
    start = _index(module.current_device())
    seen = []
    try:
        for step in switches:
            module.set_device(step % count)
            seen.append(module.device_count())
    finally:
        module.set_device(start)
    yield observe(f"device_count() stays {count} after set_device to {[s % count for s in switches]}",
                  all(c == count for c in seen), seen)
    accelerator = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    if accelerator is not None and accelerator.type == kind:
        yield observe("torch.accelerator.device_count() == device_count()",
                      torch.accelerator.device_count() == count, torch.accelerator.device_count())


def set_device(device, target, elements):
    """set_device(target % count): current_device() follows and index-less factories of `elements` land there;
    restored after."""
    module, kind = _module(device), torch.device(device).type
    index = target % module.device_count()
    start = _index(module.current_device())
    try:
        module.set_device(index)
        yield observe(f"current_device() is {index} after set_device({index})",
                      _index(module.current_device()) == index, module.current_device())
        yield observe(f"torch.empty({elements}, device={kind!r}) lands on device {index}",
                      _landed(kind, elements) == index, _landed(kind, elements))
    finally:
        module.set_device(start)


def device_guard(device, outer, inner, elements):
    """Inside module.device(inner) the current device is `inner` and factories land there; after it, `outer` again."""
    module, kind = _module(device), torch.device(device).type
    count = module.device_count()
    outer, inner = outer % count, inner % count
    start = _index(module.current_device())
    try:
        module.set_device(outer)
        with module.device(inner):
            inside, landed = _index(module.current_device()), _landed(kind, elements)
        after = _index(module.current_device())
    finally:
        module.set_device(start)
    yield observe(f"current_device() is {inner} inside device({inner})", inside == inner, inside)
    yield observe(f"torch.empty({elements}, device={kind!r}) inside device({inner}) lands there", landed == inner,
                  landed)
    yield observe(f"current_device() is {outer} again after the block", after == outer, after)


def synchronize(device, elements):
    """synchronize() and synchronize(index) return None; the work queued before (a sum of `elements`) reads as
    computed."""
    module = _module(device)
    x = torch.arange(elements, dtype=torch.float64, device=device)
    total = (x * 2).sum()
    yield observe("synchronize() returns None", module.synchronize() is None)
    yield observe("synchronize(<index>) returns None", module.synchronize(_index(device)) is None)
    yield observe(f"the sum queued before synchronize is {elements * (elements - 1)}",
                  total.item() == elements * (elements - 1), total.item())


def properties(device):
    """get_device_name / get_device_properties of every device: non-empty names, positive total_memory."""
    module = _module(device)
    for index in range(module.device_count()):
        name, props = module.get_device_name(index), module.get_device_properties(index)
        yield observe(f"get_device_name({index}) is a non-empty str", isinstance(name, str) and name, repr(name))
        prop_name = getattr(props, "name", None)
        yield observe(f"get_device_properties({index}).name is a non-empty str",
                      isinstance(prop_name, str) and prop_name, repr(prop_name))
        if hasattr(props, "total_memory"):
            yield observe(f"get_device_properties({index}).total_memory > 0", props.total_memory > 0,
                          props.total_memory)


def memory_stats(device, nbytes):
    """Allocating `nbytes` raises memory_allocated by at least that; peak and reserved bound it; del gives it back."""
    module = _module(device)
    anchor = torch.ones(1, device=device)  # an allocation first: statistics a runtime settles lazily are current
    before = module.memory_allocated(device)
    block = torch.empty(nbytes, dtype=torch.uint8, device=device)
    during = module.memory_allocated(device)
    peak, reserved = module.max_memory_allocated(device), module.memory_reserved(device)
    yield observe(f"memory_allocated grows by >= {nbytes} bytes (from {before})", during - before >= nbytes, during)
    yield observe("max_memory_allocated() >= memory_allocated()", peak >= during, f"{peak} < {during}")
    yield observe("memory_reserved() >= memory_allocated()", reserved >= during, f"{reserved} < {during}")
    del block
    after = module.memory_allocated(device)
    yield observe(f"memory_allocated falls back to {before} after del", after <= before, after)
    del anchor


def peak_and_cache(device, nbytes):
    """After freeing `nbytes`, reset_peak_memory_stats() makes the peak the current allocation; empty_cache()
    returns and reserved memory does not grow (and still covers what is allocated)."""
    module = _module(device)
    block = torch.empty(nbytes, dtype=torch.uint8, device=device)
    del block
    module.reset_peak_memory_stats(device)
    allocated, peak = module.memory_allocated(device), module.max_memory_allocated(device)
    yield observe(f"max_memory_allocated() == memory_allocated() ({allocated}) after the reset", peak == allocated,
                  peak)
    reserved = module.memory_reserved(device)
    yield observe("empty_cache() returns None", module.empty_cache() is None)
    after = module.memory_reserved(device)
    yield observe(f"memory_reserved() does not grow across empty_cache() (was {reserved})", after <= reserved, after)
    yield observe("memory_reserved() >= memory_allocated() after empty_cache()",
                  after >= module.memory_allocated(device), after)


PROGRAMS = {"availability": availability, "set_device": set_device, "device_guard": device_guard,
            "synchronize": synchronize, "properties": properties, "memory_stats": memory_stats,
            "peak_and_cache": peak_and_cache}


# -- cases ------------------------------------------------------------------------------------------------------------

INDEX = Ints(0, 15)  # a device index, taken modulo device_count()
SWITCHES = Lists(INDEX, 1, 6)  # availability's switches of the current device
CLAIMED = Ints(1, 2**20)  # the manifest's device_count (stored; checked where this run's manifest claims as many)
ELEMENTS = Ints(1, 64)  # a factory's elements in set_device and device_guard
SUM_ELEMENTS = Ints(1, 4096)  # synchronize's arange
EXPONENT, MANTISSA = Ints(10, 24), Ints(0, 1023)  # an allocation's bytes: 2**exponent + mantissa << (exponent - 10)
NBYTES = Ints(2**EXPONENT.low, 2**EXPONENT.high + (MANTISSA.high << (EXPONENT.high - 10)))  # 1 KiB..~32 MiB
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds
    "availability": CaseParams({"claimed": CLAIMED, "switches": SWITCHES}),
    "set_device": CaseParams({"target": INDEX, "elements": ELEMENTS}),
    "device_guard": CaseParams({"outer": INDEX, "inner": INDEX, "elements": ELEMENTS}),
    "synchronize": CaseParams({"elements": SUM_ELEMENTS}),
    "properties": CaseParams(),
    "memory_stats": CaseParams({"nbytes": NBYTES}),
    "peak_and_cache": CaseParams({"nbytes": NBYTES}),
}


def _nbytes():
    """Bytes of one allocation: 2**10..2**24, log-uniform (half the draws at 1 MiB or more), shrinking to 1 KiB."""
    return st.tuples(EXPONENT.strategy(), MANTISSA.strategy()).map(
        lambda p: (2**p[0]) + (p[1] << max(p[0] - 10, 0)))


def device_api_cases(scenario, dtype, claimed):
    index = INDEX.strategy()

    @st.composite
    def draw_case(draw):
        if scenario == "availability":
            values = {"claimed": claimed,
                      "switches": draw(st.lists(index, min_size=SWITCHES.min_size, max_size=SWITCHES.max_size),
                                       label="device indices to switch to")}
        elif scenario == "set_device":
            values = {"target": draw(index, label="device index"),
                      "elements": draw(ELEMENTS.strategy(), label="elements")}
        elif scenario == "device_guard":
            values = {"outer": draw(index, label="outer device"), "inner": draw(index, label="guard's device"),
                      "elements": draw(ELEMENTS.strategy(), label="elements")}
        elif scenario == "synchronize":
            values = {"elements": draw(SUM_ELEMENTS.strategy(), label="elements")}
        elif scenario == "properties":
            values = {}
        else:
            values = {"nbytes": draw(_nbytes(), label="bytes allocated")}
        return scenario_case(scenario, dtype, PARAMS[scenario], {"input": torch.zeros(1), **values},
                             f"{scenario}{list(values.values())}")

    return draw_case()


def require_module(cts, scenario):
    """The runtime module's functions the scenario calls (`NEEDS`), before any case."""
    require(cts, runtime_module(cts), *NEEDS[scenario])


def cpu_claims_only(cts, row):
    """availability's check, run only on a claim this run makes. A stored case (corpus files travel between teams)
    carries the device_count of the manifest it was found with: one above this run's manifest's device_count (a
    replay without --manifest takes it from the device) is runtime_unavailable with both counts, never a failure
    of this backend. On CPU, the validation target, a claim above CPU's count is runtime_unavailable too: CPU never
    made that claim."""
    check = invariants(availability, require_module)(cts, row)

    def checked(case):
        claimed = row.values(case).get("claimed")
        if isinstance(claimed, int) and claimed > cts.manifest.device_count:
            raise CaseUnavailable(f"the case claims {claimed} devices (the device_count of the manifest it was "
                                  f"found with); this run's manifest claims {cts.manifest.device_count}: not run")
        if on_validation_target(cts) and isinstance(claimed, int) and claimed > torch.cpu.device_count():
            raise CaseUnavailable(f"the case claims {claimed} devices (the device_count of the manifest it was "
                                  f"found with); CPU has {torch.cpu.device_count()}")
        check(case)

    return checked


def _comparison(scenario):
    """Invariants of the one device, after the module functions the scenario needs; availability's only for a
    device count this run claims (`cpu_claims_only`)."""
    return Custom(cpu_claims_only if scenario == "availability" else invariants(PROGRAMS[scenario], require_module))


# The oracle is the invariant itself: each row's program observes the device alone, no CPU result to compare.
test_device_api = scenario_suite(
    "device_api", capability="device_api", level=6, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=_comparison(name),
                        cases=lambda cts, name=name: device_api_cases(name, cts.dtype, cts.manifest.device_count))
               for name in SCENARIOS])
