"""Allocator guards: an allocation past the device's memory raises out-of-memory (never crashes), and the
device stays usable after it.

Scenarios (the two that provoke out-of-memory run their program in a child process, so a backend that
dies instead of raising is a finding naming the signal, not the end of the run):
- `oom_raises`: `torch.empty(request, dtype=uint8)` with a request a drawn factor (2..16) times the
  device's memory must raise `torch.OutOfMemoryError` (CPU validation: CPU's documented
  RuntimeError "DefaultCPUAllocator: can't allocate memory" for 2**50 bytes). A case stores the
  factor, not the bytes: replayed anywhere, its request is past the replaying device's memory.
- `reusable_after_oom`: with a drawn live tensor held, the refused request leaves memory_allocated()
  at its level before the attempt, and a drawn allocation and a computation (a sum of an arange)
  then succeed and read right.
- `fragmentation`: drawn blocks (1..16 KiB, 40..80 of them) are filled with their own values, every
  block a drawn mask picks is freed, new drawn blocks are allocated in the holes, and every live
  block must still hold its values (and their sums).
The oracle is the invariant itself; the fill values are known to the program.

The device's memory: the largest of `resource_limits.max_device_memory_mb`,
`hardware.device_memory_gb` (the device's entry) and `get_device_properties(i).total_memory` that is
known, so the request is past each of them; with none known (CPU) 2**50 bytes. What the suite
allocates successfully stays within 1/4 of `max_device_memory_mb` (fragmentation: at most 1.25 MiB).
`hardware.oom_recoverable = False` leaves `reusable_after_oom` out (capability_not_declared, with
that reason). The child is forked where the device survives a fork (CPU, meta, Python devices);
for CUDA-like devices (torch.cuda cannot be used in a child forked after it was initialised) it is
a fresh interpreter (`python -c`) that imports torch and the manifest's `backend_import` and runs
the same program: slower (seconds per case), the same verdicts.

Limits: the request is a single allocation (no gradual exhaustion); whether a backend's caching
allocator retries after freeing its cache is not observed; unified-memory devices
(`memory_model = "unified"`) may page instead of refusing: their request is still sized from the
device's memory.
"""

from __future__ import annotations

import json
import subprocess
import sys

import torch
from hypothesis import strategies as st

from torchcts.engine.outcome import NotRun
from torchcts.engine.targets import CaseUnavailable
from torchcts.isolation.fork import fork_safe, run_forked
from torchcts.core.outcomes import Outcome
from torchcts.cases.bounds import CaseParams, Flag, Ints, Lists
from torchcts.cases.scenario_case import INPUT, named, scenario_case
from torchcts.properties.runtime_checks import Observation, has_attribute, observe, require, runtime_module
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("an allocation past the device's memory raises `torch.OutOfMemoryError` in a child process (a crash is a "
          "finding, never the harness's), memory is reusable after it, fragmented allocations keep their values")

DTYPES = ("float32",)
SCENARIOS = ("oom_raises", "reusable_after_oom", "fragmentation")
CPU_IMPOSSIBLE = 2**50  # bytes no CPU allocator can give: CPU's documented "can't allocate memory"
CHILD_TIMEOUT_S = 300.0
MIB = 2**20
USABLE_MOST = 16 * MIB  # what the suite may allocate successfully, at most


# -- the programs: torch only -----------------------------------------------------------------------------------------

def _module(device):
    return getattr(torch, torch.device(device).type)


def _attempt(device, request):
    """Try to allocate `request` bytes; the exception raised (None: the allocation succeeded)."""
    try:
        block = torch.empty(request, dtype=torch.uint8, device=device)
    except Exception as exc:  # noqa: BLE001 - which exception is what the program reports
        return exc
    del block
    return None


def _expected_error(device, error):
    """Whether `error` is the out-of-memory error the device type documents."""
    if torch.device(device).type == "cpu":
        return isinstance(error, torch.OutOfMemoryError) or (
            type(error) is RuntimeError and "can't allocate memory" in str(error))
    return isinstance(error, torch.OutOfMemoryError)


def _describe(error):
    return "no exception" if error is None else f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"


def oom_raises(device, request):
    """An allocation of `request` bytes (past the device's memory) raises the device's out-of-memory error."""
    error = _attempt(device, request)
    expected = "RuntimeError (can't allocate memory)" if torch.device(device).type == "cpu" else \
        "torch.OutOfMemoryError"
    yield observe(f"torch.empty({request}, dtype=uint8) raises {expected}", _expected_error(device, error),
                  _describe(error))


def reusable_after_oom(device, request, live, n):
    """With `live` bytes held, a refused `request` leaves memory_allocated() where it was; `n` elements are then
    allocated and summed right."""
    module = _module(device)
    held = torch.ones(live, dtype=torch.uint8, device=device)
    before = module.memory_allocated(device)
    error = _attempt(device, request)
    yield observe("the request past the device's memory raises out-of-memory", _expected_error(device, error),
                  _describe(error))
    after = module.memory_allocated(device)
    yield observe(f"memory_allocated() is back to {before} after the refused request", after == before, after)
    x = torch.arange(n, dtype=torch.float64, device=device)
    total = (x + 1).sum().item()
    yield observe(f"a sum of arange({n}) + 1 computed after out-of-memory is {n * (n + 1) // 2}",
                  total == n * (n + 1) // 2, total)
    yield observe(f"the tensor held across the refused request still holds {live} ones",
                  held.sum().item() == live, held.sum().item())


def fragmentation(device, first, freed, second):
    """Blocks of `first` byte sizes filled with their own values; those `freed` marks are freed, blocks of
    `second` sizes allocated in the holes; every live block must still hold its value."""
    live = {}
    for index, size in enumerate(first):
        live[index] = torch.full((size,), index % 251, dtype=torch.uint8, device=device)
    for index, drop in enumerate(freed):
        if drop:
            del live[index]
    for offset, size in enumerate(second):
        index = len(first) + offset
        live[index] = torch.full((size,), index % 251, dtype=torch.uint8, device=device)
    wrong = [(index, block.numel()) for index, block in live.items()
             if not bool((block == index % 251).all())]
    yield observe(f"all {len(live)} live blocks hold their fill values", not wrong,
                  f"blocks (index, bytes) with other values: {wrong[:6]}")


PROGRAMS = {"oom_raises": oom_raises, "reusable_after_oom": reusable_after_oom, "fragmentation": fragmentation}


# -- running a program in a child --------------------------------------------------------------------------------------

def _as_json(program, device, args):
    try:
        return {"observations": [[o.what, o.holds, o.seen] for o in program(device, *args)]}
    except Exception as exc:  # noqa: BLE001 - the device raised: reported to the parent as the backend's error
        return {"raised": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}


_SPAWNED = """import importlib, json, sys
device, name, args, backend = json.loads(sys.argv[1])
if backend:
    importlib.import_module(backend)
from torchcts.properties.suites import guard_alloc as suite
print("TORCHCTS-ANSWER " + json.dumps(suite._as_json(suite.PROGRAMS[name], device, args)))
"""


def run_in_child(device, name, args, backend_import=None, timeout_s=CHILD_TIMEOUT_S):
    """PROGRAMS[name](device, *args) in a child process: its observations, with a failing one when the child died."""
    program = PROGRAMS[name]
    if fork_safe(torch.device(device).type):
        result = run_forked(lambda: _as_json(program, device, args), timeout_s)
        if result.status == "finished":
            return _answer(result.answer)
        died = result.describe()
    else:
        try:
            done = subprocess.run([sys.executable, "-c", _SPAWNED, json.dumps([device, name, list(args),
                                                                               backend_import])],
                                  capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            died = f"still running after {timeout_s:.0f} s; killed"
        else:
            answer = [line for line in done.stdout.splitlines() if line.startswith("TORCHCTS-ANSWER ")]
            if done.returncode == 0 and answer:
                return _answer(json.loads(answer[-1].split(" ", 1)[1]))
            died = f"the process running it died ({_exit(done.returncode)}): {done.stderr[-300:]}"
    return [Observation(f"{name} runs to its end in the child process (an allocator error must raise, not crash)",
                        False, died)]


def _exit(code):
    if code < 0:
        import signal

        return f"killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def _answer(answer):
    if "raised" in answer:
        raise RuntimeError(answer["raised"])  # in on_device_call: the backend's error
    return [Observation(what, bool(holds), seen) for what, holds, seen in answer["observations"]]


# -- sizes from the manifest ------------------------------------------------------------------------------------------

def device_memory_bytes(cts, module):
    """The largest size the manifest or the runtime gives for the device's memory (None when none is known)."""
    index = torch.device(cts.target.device).index or 0
    known = []
    limits, hardware = cts.manifest.resource_limits, cts.manifest.hardware
    if limits.max_device_memory_mb:
        known.append(int(limits.max_device_memory_mb * MIB))
    if hardware.device_memory_gb:
        listed = hardware.device_memory_gb
        known.append(int(listed[min(index, len(listed) - 1)] * 2**30))
    if module is not None and has_attribute(cts, module, "get_device_properties"):  # the backend's code: its errors
        total = cts.on_device_call(lambda *_: getattr(module.get_device_properties(index), "total_memory", None),
                                   None, what=" (get_device_properties)")
        if total:
            known.append(int(total))
    return max(known) if known else None


def usable_bytes(cts):
    """What the suite may allocate successfully: 1/4 of max_device_memory_mb, at most 16 MiB."""
    limit = cts.manifest.resource_limits.max_device_memory_mb
    return int(min(USABLE_MOST, limit * MIB / 4)) if limit else USABLE_MOST


def _past_usable(scenario, values, usable):
    """Whether a case (a stored one: corpus files travel between teams) allocates more than this run may."""
    if scenario == "reusable_after_oom":
        return values["live"] > max(usable // 4, 1)
    return sum(values["first"]) + sum(values["second"]) > usable


def request_bytes(factor, memory):
    """The request past the device's memory: `factor` times it (CPU_IMPOSSIBLE where none is known). A case stores
    the factor, not the bytes, so a stored case asks each device for a request past its own memory, never for an
    allocation that device could grant."""
    return CPU_IMPOSSIBLE if memory is None else int(memory * factor)


# -- cases ------------------------------------------------------------------------------------------------------------

FACTOR = Ints(2, 16)  # the request: this many times the device's memory (request_bytes)
HELD = Ints(1, USABLE_MOST // 4)  # reusable_after_oom's bytes held across the request (and 1/4 of the usable bytes)
ELEMENTS = Ints(1, 4096)  # reusable_after_oom's arange after the request
BLOCK = Ints(1, 16 * 1024)  # fragmentation's block bytes (and 1/80 of the usable bytes)
FIRST_BLOCKS = Lists(BLOCK, 40, 80)
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds; a run
    # also refuses a stored case that allocates more than its manifest allows
    "oom_raises": CaseParams({"factor": FACTOR}),
    "reusable_after_oom": CaseParams({"factor": FACTOR, "live": HELD, "n": ELEMENTS}),
    "fragmentation": CaseParams(
        {"first": FIRST_BLOCKS, "freed": Lists(Flag(), FIRST_BLOCKS.min_size, FIRST_BLOCKS.max_size),
         "second": Lists(BLOCK, 1, FIRST_BLOCKS.max_size)},
        rules=(("a freed mark per first block", lambda p: len(p["freed"]) == len(p["first"])),
               ("no more new blocks than freed ones (at least 1)",
                lambda p: len(p["second"]) <= max(1, sum(map(bool, p["freed"])))))),
}


def guard_alloc_cases(scenario, dtype, memory, usable):
    """`scenario`'s cases within this run's usable bytes, its values by their names in PARAMS; `memory()` (the
    device's memory, or None) is read at the first draw, once the check has found what the scenario needs."""
    @st.composite
    def draw_case(draw):
        if scenario == "oom_raises":
            values = {"factor": draw(FACTOR.strategy(), label="times the device's memory")}
        elif scenario == "reusable_after_oom":
            values = {"factor": draw(FACTOR.strategy(), label="times the device's memory"),
                      "live": draw(st.integers(HELD.low, max(usable // 4, 1)), label="bytes held across the request"),
                      "n": draw(ELEMENTS.strategy(), label="elements computed after")}
        else:
            block = st.integers(BLOCK.low, max(min(BLOCK.high, usable // 80), 1))
            first = draw(st.lists(block, min_size=FIRST_BLOCKS.min_size, max_size=FIRST_BLOCKS.max_size),
                         label="sizes of the first blocks")
            freed = draw(st.lists(st.booleans(), min_size=len(first), max_size=len(first)), label="blocks freed")
            second = draw(st.lists(block, min_size=1, max_size=max(1, sum(freed))), label="sizes of the new blocks")
            values = {"first": first, "freed": freed, "second": second}
        shown = [v if not isinstance(v, list) else f"{len(v)} values" for v in values.values()]
        if scenario != "fragmentation":
            shown[0] = f"{values['factor']} x memory: {request_bytes(values['factor'], memory())} bytes"
        return scenario_case(scenario, dtype, PARAMS[scenario], {INPUT: torch.zeros(1), **values},
                             f"{scenario}{shown}")

    return draw_case()


def _device_memory(cts):
    """The device's memory (`device_memory_bytes`; None on CPU, which has no device memory to size from)."""
    return None if cts.target.device_type == "cpu" else device_memory_bytes(cts, runtime_module(cts))


def _cases(scenario):
    """A row's cases: the device's memory read once, at the first draw (after the check's requirements)."""
    def cases(cts):
        known = []

        def memory():
            if not known:
                known.append(_device_memory(cts))
            return known[0]

        return guard_alloc_cases(scenario, cts.dtype, memory, usable_bytes(cts))

    return cases


def guard_check(cts, row):
    """The row's program on the device (in a child process where it provokes out-of-memory: a crash is a finding
    naming the signal), failing on the observations that do not hold; first what the scenario needs (reusable_after_oom:
    the manifest's oom_recoverable claim and memory_allocated), and a stored case past this run's usable bytes is not
    run."""
    scenario = row.name
    module = runtime_module(cts)
    if scenario == "reusable_after_oom":
        if not cts.manifest.hardware.oom_recoverable:
            raise NotRun(Outcome.CAPABILITY_NOT_DECLARED, "the manifest says hardware.oom_recoverable = False: "
                                                          "the device is not claimed to recover from out-of-memory")
        require(cts, module, "memory_allocated")
    memory = _device_memory(cts)
    backend = getattr(cts.manifest, "backend_import", None)

    def run(cts_, sample, target):
        values = named(row.params, sample)
        if scenario == "fragmentation":  # provokes no out-of-memory: runs here
            return list(fragmentation(target.device, values["first"], values["freed"], values["second"]))
        held = (values["live"], values["n"]) if scenario == "reusable_after_oom" else ()
        return run_in_child(target.device, scenario, (request_bytes(values["factor"], memory), *held), backend)

    def check(case):
        if scenario != "oom_raises" and _past_usable(scenario, row.values(case), usable_bytes(cts)):
            raise CaseUnavailable(f"the case allocates past what this run may use ({usable_bytes(cts)} bytes): "
                                  "a stored case from another run, not run")
        observations = cts.on_device_call(run, case.sample, what=f" ({scenario} in a child process)")
        broken = [o for o in observations if not o.holds]
        if broken:
            raise AssertionError(f"{scenario} [{'; '.join(case.transforms)}] on {cts.target.describe()}: "
                                 + "; ".join(o.describe() for o in broken[:4]))

    return check


# Invariants of the device's allocator alone (the program's own fill values and the documented error are the
# oracle): one row per scenario, each checked by `guard_check`, its program run in a child where it provokes
# out-of-memory. No program is registered for export: the scenarios' check is this suite's code.
test_guard_alloc = scenario_suite(
    "guard_alloc", capability="guard_alloc", level=6, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=Custom(guard_check), cases=_cases(name))
               for name in SCENARIOS])
