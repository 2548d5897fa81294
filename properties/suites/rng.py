"""RNG: the device's default generator honours `torch.manual_seed`, saves and restores its state, advances as ops draw.

Random ops given no generator draw from the device's default generator. Every scenario runs a set of
random ops on the device (`rand`, `randn`, `randint`, `bernoulli_`, `normal_`, `dropout`, `randperm`)
and checks invariants of the device alone (there is no CPU oracle for a device's random numbers):
- `seed_reproducible`: `torch.manual_seed(s)` twice draws the same numbers; a seed that differs from
  `s` in its low 32 bits draws different ones (seeds drawn over the whole unsigned 64-bit range);
- `state_round_trip`: after the device module's `manual_seed`, `get_rng_state()` taken mid-stream and
  given back with `set_rng_state()` draws the same numbers again (and reads back as the same state);
  `torch.random.fork_rng(device_type=...)` leaves the device's stream where it was;
- `advance`: consecutive draws of each op differ (the generator moves on as ops draw);
- `per_device` (2+ devices): `manual_seed_all(s)` seeds every device alike (devices of one model draw
  the same numbers); seeding and drawing on device 1 leaves device 0's stream where it was.
"Different" draws are judged on at least 64 elements (two independent streams agree by chance with
probability below 2**-64).

The generator acted on is `torch.<device type>`'s (manual_seed, get_rng_state, ...) for a device and
torch's own default generator (`torch.manual_seed`, `torch.get_rng_state`) for the CPU validation target,
whose `torch.cpu` module has no RNG functions; CPU has one device, so `per_device` is runtime_unavailable
there.

Limits: seeds that differ only above bit 32 are not required to differ: CPU's Mersenne Twister keeps the
low 32 bits of a seed (CUDA's Philox keeps 64), so the reference itself does not have that property.
Whether `rand(a)` then `rand(b)` equals `rand(a + b)` is not checked (CPU's vectorized `randn` does not).
Statistics of the draws are the `rng_distributions` suite's; `torch.Generator(device=...)` objects are
`device_generator`'s.
"""

from __future__ import annotations


import torch
from hypothesis import strategies as st

from torchcts.cases import scenario_case
from torchcts.cases.bounds import CaseParams, Ints
from torchcts.properties.runtime_checks import (invariants, observe, on_validation_target, require, runtime_module,
                                                unavailable)
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("the device's default generators honour `manual_seed` (seeds differing in their low 32 bits draw "
          "differently), `get_rng_state`/`set_rng_state` and `fork_rng` restore the stream, draws advance, devices "
          "keep separate streams")

DTYPES = ("float32",)
SCENARIOS = ("seed_reproducible", "state_round_trip", "advance", "per_device")
OPS = ("rand", "randn", "randint", "bernoulli_", "normal_", "dropout", "randperm")
RNG_FUNCTIONS = ("manual_seed", "manual_seed_all", "get_rng_state", "set_rng_state", "device_count", "device",
                 "current_device")
SEED_MAX = 2**64 - 1


# -- the program: torch only ------------------------------------------------------------------------------------------

def draw(device, op, n):
    """`n` numbers (a CPU copy) from random op `op` on `device`, given no generator."""
    if op == "rand":
        out = torch.rand(n, device=device)
    elif op == "randn":
        out = torch.randn(n, device=device)
    elif op == "randint":
        out = torch.randint(0, 2**20, (n,), device=device)
    elif op == "bernoulli_":
        out = torch.empty(n, device=device).bernoulli_(0.5)
    elif op == "normal_":
        out = torch.empty(n, device=device).normal_(2.0, 3.0)
    elif op == "dropout":
        out = torch.nn.functional.dropout(torch.ones(n, device=device), 0.5)
    else:
        out = torch.randperm(n, device=device)
    return out.cpu()


def rng_api(device):
    """(manual_seed, get_rng_state, set_rng_state, fork_rng) acting on `device`'s default generator: torch.<type>'s
    for a device, torch's own for CPU (torch.cpu has no RNG functions; CPU's generator is torch's default)."""
    kind = torch.device(device).type
    if kind == "cpu":
        return (torch.manual_seed, torch.get_rng_state, torch.set_rng_state,
                lambda: torch.random.fork_rng(devices=[]))
    module = getattr(torch, kind)
    index = torch.device(device).index
    index = module.current_device() if index is None else index

    def seed(value):
        with module.device(index):
            module.manual_seed(value)

    return (seed, lambda: module.get_rng_state(index), lambda state: module.set_rng_state(state, index),
            lambda: torch.random.fork_rng(devices=[index], device_type=kind))


def _isolated(device):
    """The caller's RNG states of CPU and `device` (all its devices) restored after the block."""
    kind = torch.device(device).type
    if kind == "cpu":
        return torch.random.fork_rng(devices=[])
    return torch.random.fork_rng(devices=range(getattr(torch, kind).device_count()), device_type=kind)


def seed_reproducible(device, n, seed, other_seed):
    """torch.manual_seed(seed) twice: every op draws the same `n` numbers; other_seed (other low 32 bits): others."""
    with _isolated(device):
        for op in OPS:
            torch.manual_seed(seed)
            first = draw(device, op, n)
            torch.manual_seed(seed)
            again = draw(device, op, n)
            torch.manual_seed(other_seed)
            other = draw(device, op, n)
            yield observe(f"{op}: seed {seed} twice draws the same numbers", torch.equal(first, again),
                          f"{first[:4].tolist()} then {again[:4].tolist()}")
            yield observe(f"{op}: seeds {seed} and {other_seed} draw different numbers", not torch.equal(first, other),
                          f"both {first[:4].tolist()}...")


def state_round_trip(device, n, seed, warmup):
    """After manual_seed(seed) and `warmup` draws, the state read, given back, draws the same numbers and reads back
    equal; fork_rng restores the device's stream."""
    seed_device, get_state, set_state, fork = rng_api(device)
    with _isolated(device):
        for op in OPS:
            seed_device(seed)
            for _ in range(warmup):
                draw(device, op, n)
            state = get_state().clone()
            first = draw(device, op, n)
            set_state(state)
            restored = get_state()
            again = draw(device, op, n)
            yield observe(f"{op}: get_rng_state() given back reads back equal", torch.equal(state, restored),
                          f"{state.numel()} bytes, {int((state != restored).sum())} differ")
            yield observe(f"{op}: draws after set_rng_state(state) repeat those after get_rng_state()",
                          torch.equal(first, again), f"{first[:4].tolist()} then {again[:4].tolist()}")
            set_state(state)
            with fork():
                draw(device, op, n)
            after_fork = draw(device, op, n)
            yield observe(f"{op}: fork_rng restores the device's stream", torch.equal(first, after_fork),
                          f"{first[:4].tolist()} before, {after_fork[:4].tolist()} after the fork")


def advance(device, n, seed, draws):
    """After manual_seed(seed), `draws` consecutive draws of each op all differ."""
    with _isolated(device):
        torch.manual_seed(seed)
        for op in OPS:
            runs = [draw(device, op, n) for _ in range(draws)]
            repeats = [(i, j) for i in range(draws) for j in range(i) if torch.equal(runs[i], runs[j])]
            yield observe(f"{op}: {draws} consecutive draws of {n} all differ", not repeats,
                          f"draws {repeats[:3]} equal")


def per_device(device, n, seed, other_seed):
    """manual_seed_all(seed): devices 0 and 1 draw alike; seeding device 1 with other_seed and drawing there leaves
    device 0's stream as it was."""
    kind = torch.device(device).type
    module = getattr(torch, kind)
    first, second = torch.device(kind, 0), torch.device(kind, 1)
    with _isolated(device):
        module.manual_seed_all(seed)
        expected = draw(first, "rand", n)
        module.manual_seed_all(seed)
        on_second = draw(second, "rand", n)
        yield observe(f"manual_seed_all({seed}): devices 0 and 1 draw the same numbers",
                      torch.equal(expected, on_second),
                      f"{expected[:3].tolist()} on 0, {on_second[:3].tolist()} on 1")
        module.manual_seed_all(seed)
        with module.device(1):
            module.manual_seed(other_seed)
        reseeded = draw(second, "rand", n)
        for op in OPS:
            draw(second, op, n)
        on_first = draw(first, "rand", n)
        yield observe(f"seeding device 1 with {other_seed} and drawing there leaves device 0's stream",
                      torch.equal(expected, on_first), f"{expected[:3].tolist()}, then {on_first[:3].tolist()}")
        yield observe(f"device 1 seeded with {other_seed} draws other numbers than seed {seed}",
                      not torch.equal(expected, reseeded), f"both {expected[:3].tolist()}")


PROGRAMS = {"seed_reproducible": seed_reproducible, "state_round_trip": state_round_trip, "advance": advance,
            "per_device": per_device}


# -- cases ------------------------------------------------------------------------------------------------------------

NUMBERS = Ints(64, 512)  # numbers per draw (randperm's length too)
SEED = Ints(0, SEED_MAX)
WARMUP = Ints(0, 3)  # state_round_trip's draws before the state is read
DRAWS = Ints(2, 4)  # advance's consecutive draws
_OTHER_SEED_RULE = ("the other seed differs from the seed in its low 32 bits",
                    lambda p: (p["seed"] - p["other_seed"]) % 2**32 != 0)
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds
    "seed_reproducible": CaseParams({"n": NUMBERS, "seed": SEED, "other_seed": SEED}, rules=(_OTHER_SEED_RULE,)),
    "state_round_trip": CaseParams({"n": NUMBERS, "seed": SEED, "warmup": WARMUP}),
    "advance": CaseParams({"n": NUMBERS, "seed": SEED, "draws": DRAWS}),
    "per_device": CaseParams({"n": NUMBERS, "seed": SEED, "other_seed": SEED}, rules=(_OTHER_SEED_RULE,)),
}


@st.composite
def _seed_pair(draw_):
    """A seed over the unsigned 64-bit range, and another differing from it in the low 32 bits."""
    seed = draw_(SEED.strategy(), label="seed")
    low = (seed + draw_(st.integers(1, 2**32 - 1), label="low 32 bits apart")) % 2**32
    return seed, draw_(st.integers(0, 2**32 - 1), label="high 32 bits of the other seed") * 2**32 + low


def rng_cases(scenario: str) -> st.SearchStrategy[Case]:
    """`scenario`'s cases: the numbers per draw, a seed pair, then its third parameter (named in PARAMS)."""
    third = {"state_round_trip": "warmup", "advance": "draws"}.get(scenario, "other_seed")

    @st.composite
    def draw_case(draw_) -> Case:
        n = draw_(NUMBERS.strategy(), label="numbers per draw")
        seed, other_seed = draw_(_seed_pair())
        if third == "warmup":
            extra, what = draw_(WARMUP.strategy(), label="draws before the state is read"), "warm-up draws"
        elif third == "draws":
            extra, what = draw_(DRAWS.strategy(), label="consecutive draws"), "consecutive draws"
        else:
            extra, what = other_seed, "other seed"
        return scenario_case.scenario_case(scenario, torch.float32, PARAMS[scenario],
                                           {scenario_case.INPUT: torch.zeros(0), "n": n, "seed": seed, third: extra},
                                           f"{scenario}: {n} numbers per draw, seed {seed}, {what} {extra}")

    return draw_case()


def rng_functions(cts, scenario: str) -> None:
    """The device module's RNG functions (the CPU validation target uses torch's own: it needs none); `per_device`
    also needs a second device (CPU has one: runtime_unavailable there)."""
    module = runtime_module(cts)
    if not on_validation_target(cts):
        require(cts, module, *RNG_FUNCTIONS, capability="rng")
    if scenario == "per_device":
        count = 1 if on_validation_target(cts) else module.device_count()
        if count < 2:
            raise unavailable(f"{cts.target.device_type} has {count} device: per-device streams need two")


# Facts about the device's default generators alone (no CPU oracle for its random numbers): each row's program
# observes them, given the case's values by name, after the facilities the scenario needs (`rng_functions`).
test_rng = scenario_suite(
    "rng", capability="rng", level=3, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=Custom(invariants(PROGRAMS[name], rng_functions)),
                        cases=lambda cts, name=name: rng_cases(name)) for name in SCENARIOS])
