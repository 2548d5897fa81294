"""Stress: large tensors, long sequences of small ops and long loops on the device end as they do on CPU.

Scenarios (float32; the program builds its tensors on the device from a drawn size):
- `large_tensor`: one tensor of a drawn 50..100% of the tensor budget (below), `a + a.flip(0)` of
  `sin` of a scaled (int32, modulo 65536) arange, its sum and maximum and its last elements.
- `op_sequence`: a drawn pattern of up to 16 small ops (tanh of an affine map, sin, a mix with a
  rolled copy, clamp, a scaled cumsum) repeated to a drawn length, on a tensor of 1..4096 elements,
  with `synchronize()` every drawn 16..512 ops and once at the start and the end.
- `long_loop`: a loop of a drawn number of iterations of one contracting update (tanh of an affine
  map of the tensor and its rolled copy), with no synchronization until the end.
The oracle is the same program on CPU (program_check: values within the float32 tolerance; the
updates contract, so differences of a few ulps do not grow along the sequence).

Budgets (from the manifest's `resource_limits`; level 7, and at level >= 8 in brackets):
- tensor budget: `max_tensor_size_mb` when set, else 64 MiB [256 MiB]; never above
  `max_device_memory_mb` / 5 (measured: the program's peak is 4.0x its tensor) nor above
  `max_system_memory_mb` / 24 (measured: a replay on CPU peaks at 20x the tensor, program, oracle and
  comparison together; 23x on the faulty device), nor above 16 GiB. A replay (`torchcts replay`) takes
  the level-7 default (64 MiB) whatever its level: a larger stored case runs only where the manifest sets
  `max_tensor_size_mb`.
- `op_sequence`: 256..512 ops [1024..2048]; `long_loop`: 300..600 iterations [1200..2400].
CPU validation at level 7 with 5 examples takes a few seconds per item.

A stored case is read within the bounds declared in PARAMS (the ranges above, at either level); one
asking for a tensor past the run's own budget (a corpus file from another team; in a replay, anything past
64 MiB unless the manifest sets `max_tensor_size_mb`) is not run (runtime_unavailable for the case, with the
sizes).

Limits: one device, one stream; wall-clock time is not judged (a slow kernel is no failure here);
memory the device keeps cached across the items is not checked (device_api, guard_alloc).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.engine.programs import program_check
from torchcts.engine.targets import CaseUnavailable
from torchcts.cases.bounds import CaseParams, Ints, Lists, OneOf
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("tensors near `max_tensor_size_mb`, hundreds of small ops with periodic synchronize, long loops: equal to "
          "CPU (more work at level 8)")

DTYPES = ("float32",)
SCENARIOS = ("large_tensor", "op_sequence", "long_loop")
MIB = 2**20
DEFAULT_TENSOR_MB = {7: 64, 8: 256}
SEQUENCE = {7: (256, 512), 8: (1024, 2048)}
LOOP = {7: (300, 600), 8: (1200, 2400)}
OPS = 5  # op codes of `op_sequence`
MOST_TENSOR_BYTES = 2**34  # 16 GiB: the largest tensor budget, whatever the manifest says
# peak memory of large_tensor as a multiple of its tensor's bytes, measured (64 and 256 MiB): the program alone 4.0x
# (the device's share); a whole replay 20x on CPU, 23x on the faulty device whose memory is the host's (program,
# oracle and comparison: the host's share); each rounded up
DEVICE_PEAK, SYSTEM_PEAK = 5, 24


# -- the program: torch only ------------------------------------------------------------------------------------------

def stress(input, scenario, size, pattern, length, sync_every):
    """`scenario` on `input`'s device: `size` is the bytes of `large_tensor` or the elements of the others;
    `op_sequence` repeats the op codes `pattern` to `length` ops, synchronizing every `sync_every`; `long_loop`
    runs `length` iterations."""
    device = input.device
    module = getattr(torch, device.type)

    def step(x, code):  # nested: an exported program is one function
        if code == 0:
            return torch.tanh(x * 1.25 + 0.125)
        if code == 1:
            return torch.sin(x)
        if code == 2:
            return x * 0.5 + x.roll(1) * 0.5
        if code == 3:
            return torch.clamp(x, -0.75, 0.75)
        return torch.cumsum(x, 0) / x.numel()

    if scenario == "large_tensor":
        n = size // 4
        a = torch.sin((torch.arange(n, dtype=torch.int32, device=device) % 65536).float() * 1e-3)
        c = a + a.flip(0)
        return [c, c.sum(dtype=torch.float64), c.amax(), c[-8:]]
    x = torch.linspace(-1.0, 1.0, size, dtype=torch.float32, device=device)
    module.synchronize()
    if scenario == "op_sequence":
        for index in range(length):
            x = step(x, pattern[index % len(pattern)])
            if (index + 1) % sync_every == 0:
                module.synchronize()
    else:  # long_loop
        for _ in range(length):
            x = torch.tanh(x * 0.75 + x.roll(1) * 0.25 + 0.0625)
    module.synchronize()
    return x


PROGRAMS = {scenario: stress for scenario in SCENARIOS}


# -- budgets and cases ------------------------------------------------------------------------------------------------

def tensor_budget_bytes(limits, level, replay=False):
    """Bytes of `large_tensor`'s largest tensor: max_tensor_size_mb, else the level's default (a `replay`: the
    smallest level's, since a stored case may come from a larger machine), within the device and system memory
    limits divided by the measured peaks."""
    budget = limits.max_tensor_size_mb or DEFAULT_TENSOR_MB[8 if level >= 8 and not replay else 7]
    if limits.max_device_memory_mb:
        budget = min(budget, limits.max_device_memory_mb / DEVICE_PEAK)
    if limits.max_system_memory_mb:
        budget = min(budget, limits.max_system_memory_mb / SYSTEM_PEAK)
    return max(min(int(budget * MIB), MOST_TENSOR_BYTES) // 4 * 4, 4)


PERCENT = Ints(50, 100)  # large_tensor: percent of the tensor budget
ELEMENTS = Ints(1, 4096)  # op_sequence and long_loop
PATTERN = Lists(Ints(0, OPS - 1), 1, 16)  # op codes repeated by op_sequence
SYNC_EVERY = Ints(16, 512)
UNUSED = {"pattern": Lists(Ints(0, 0), 1, 1), "length": Ints(0, 0), "sync_every": Ints(1, 1)}  # stored as drawn
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds; a run also
    # refuses a stored large_tensor past its own tensor budget
    "large_tensor": CaseParams({"scenario": OneOf(("large_tensor",)), "size": Ints(4, MOST_TENSOR_BYTES), **UNUSED},
                               rules=(("size is a multiple of 4 bytes", lambda p: p["size"] % 4 == 0),)),
    "op_sequence": CaseParams({"scenario": OneOf(("op_sequence",)), "size": ELEMENTS, "pattern": PATTERN,
                               "length": Ints(SEQUENCE[7][0], SEQUENCE[8][1]), "sync_every": SYNC_EVERY}),
    "long_loop": CaseParams({"scenario": OneOf(("long_loop",)), "size": ELEMENTS, "pattern": UNUSED["pattern"],
                             "length": Ints(LOOP[7][0], LOOP[8][1]), "sync_every": UNUSED["sync_every"]}),
}


def stress_cases(scenario, dtype, level, budget):
    deep = 8 if level >= 8 else 7

    @st.composite
    def draw_case(draw):
        pattern, length, sync_every = [0], 0, 1
        if scenario == "large_tensor":
            percent = draw(PERCENT.strategy(), label="percent of the tensor budget")
            size = max(budget * percent // 100 // 4 * 4, 4)
            what = f"large_tensor: {size / MIB:.2f} MiB ({percent}% of {budget / MIB:.2f} MiB)"
        else:
            size = draw(ELEMENTS.strategy(), label="elements")
            bounds = SEQUENCE[deep] if scenario == "op_sequence" else LOOP[deep]
            length = draw(st.integers(*bounds), label="ops" if scenario == "op_sequence" else "iterations")
            if scenario == "op_sequence":
                pattern = draw(PATTERN.strategy(), label="pattern of ops")
                sync_every = draw(SYNC_EVERY.strategy(), label="ops between synchronizations")
            what = f"{scenario}: {size} elements, {length} steps, pattern {pattern}, synchronize every {sync_every}"
        sample = sample_input(torch.zeros(1), args=(scenario, size, pattern, length, sync_every))
        return Case(scenario, "scenario", dtype, sample, 0, transforms=(what,))

    return draw_case()


def _budget(cts) -> int:
    return tensor_budget_bytes(cts.manifest.resource_limits, cts.level, replay=cts.replay is not None)


def budget_check(cts, row):
    """The program's result on the device equals CPU's (`program_check`), for a case within this run's budget."""
    budget = _budget(cts)
    check = program_check(cts, stress, strides=False)

    def within_budget(case):
        """A stored large_tensor case (corpus files travel between teams) runs only within this run's tensor budget
        (the other sizes are bounded by PARAMS)."""
        values = row.values(case)
        scenario, size = values["scenario"], values["size"]
        if scenario == "large_tensor" and size > budget:
            raise CaseUnavailable(f"the case asks for a tensor of {size} bytes, past this run's budget for one "
                                  f"({budget} bytes; a manifest's resource_limits.max_tensor_size_mb sets it): "
                                  "not run")
        check(case)

    return within_budget


test_stress = scenario_suite(
    "stress", capability="device_api", level=7, dtypes=DTYPES,
    scenarios=[Scenario(scenario, PARAMS[scenario], stress, Custom(budget_check),
                        cases=lambda cts: stress_cases(cts.item.op, cts.dtype, cts.level, _budget(cts)))
               for scenario in SCENARIOS])
