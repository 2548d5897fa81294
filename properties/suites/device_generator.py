"""Device generators: `torch.Generator(device=...)` objects exist, are reproducible and independent of each other.

Every scenario makes generators on the device and passes them to the random ops that take one
(`rand`, `randn`, `randint`, `normal_`, `bernoulli` with a tensor of p, `randperm`, `multinomial`),
checking invariants of the device alone:
- `seed_reproducible`: `g.manual_seed(s)` twice draws the same numbers from every op; `initial_seed()`
  reads `s`; a seed with other low 32 bits draws other numbers;
- `state_round_trip`: `get_state()` taken mid-stream, given back with `set_state()` (to the same and
  to a fresh generator), draws the same numbers again; `clone_state()` (where torch has it) does too;
- `independent`: two generators seeded apart, drawn interleaved, draw what each draws alone;
- `default_untouched`: drawing with a generator leaves the device's default generator where it was
  (its state before and after is equal).
"Different" draws are judged on at least 64 elements.

The CPU validation target passes (`torch.Generator("cpu")`). The faulty test device makes its generators in its
compiled part (torchcts/testing/faulty/generators.py; torch gives a Python backend no hook for them) and carries
this suite's seeded bugs there; where that part cannot be built (no compiler), `torch.Generator("faulty")` raises
and a manifest claiming `device_generator` gets an `error` on every item, never a skip.

Limits: seeds differing only above bit 32 are not required to differ (CPU keeps the low 32 bits);
`graphsafe_get_state` and offsets (CUDA graphs) are not tried; the draws' statistics are the
`rng_distributions` suite's.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.runtime_checks import (claimed, invariants, observe, on_validation_target, unavailable,
                                                unclaimed)
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("`torch.Generator(device=...)` is reproducible (`initial_seed`, `get_state`/`set_state`, `clone_state`), "
          "generators are independent and leave the default generator alone, for rand, randn, randint, normal_, "
          "bernoulli, randperm, multinomial")

DTYPES = ("float32",)
SCENARIOS = ("seed_reproducible", "state_round_trip", "independent", "default_untouched")
OPS = ("rand", "randn", "randint", "normal_", "bernoulli", "randperm", "multinomial")
SEED_MAX = 2**64 - 1


# -- the program: torch only ------------------------------------------------------------------------------------------

def draw(device, op, n, generator):
    """`n` numbers (a CPU copy) from random op `op` on `device`, drawn from `generator`."""
    if op == "rand":
        out = torch.rand(n, device=device, generator=generator)
    elif op == "randn":
        out = torch.randn(n, device=device, generator=generator)
    elif op == "randint":
        out = torch.randint(0, 2**20, (n,), device=device, generator=generator)
    elif op == "normal_":
        out = torch.empty(n, device=device).normal_(2.0, 3.0, generator=generator)
    elif op == "bernoulli":
        out = torch.bernoulli(torch.full((n,), 0.5, device=device), generator=generator)
    elif op == "randperm":
        out = torch.randperm(n, device=device, generator=generator)
    else:
        out = torch.multinomial(torch.ones(n, device=device), n // 2, generator=generator)
    return out.cpu()


def seed_reproducible(device, n, seed, other_seed):
    """A generator seeded with `seed` twice draws the same numbers (initial_seed() reads it); with `other_seed`
    (other low 32 bits), other numbers."""
    generator = torch.Generator(device=device)
    for op in OPS:
        generator.manual_seed(seed)
        first = draw(device, op, n, generator)
        yield observe(f"initial_seed() after manual_seed({seed})", generator.initial_seed() == seed,
                      generator.initial_seed())
        generator.manual_seed(seed)
        again = draw(device, op, n, generator)
        other = draw(device, op, n, torch.Generator(device=device).manual_seed(other_seed))
        yield observe(f"{op}: seed {seed} twice draws the same numbers", torch.equal(first, again),
                      f"{first[:4].tolist()} then {again[:4].tolist()}")
        yield observe(f"{op}: seeds {seed} and {other_seed} draw different numbers", not torch.equal(first, other),
                      f"both {first[:4].tolist()}")


def state_round_trip(device, n, seed, warmup):
    """After manual_seed(seed) and `warmup` draws, get_state() given back (to the generator, to a fresh one) and
    clone_state() draw the same numbers as the generator did."""
    for op in OPS:
        generator = torch.Generator(device=device).manual_seed(seed)
        for _ in range(warmup):
            draw(device, op, n, generator)
        state = generator.get_state()
        clone = generator.clone_state() if hasattr(generator, "clone_state") else None
        first = draw(device, op, n, generator)
        generator.set_state(state)
        again = draw(device, op, n, generator)
        fresh = torch.Generator(device=device)
        fresh.set_state(state)
        on_fresh = draw(device, op, n, fresh)
        yield observe(f"{op}: set_state(get_state()) repeats the draws", torch.equal(first, again),
                      f"{first[:4].tolist()} then {again[:4].tolist()}")
        yield observe(f"{op}: a fresh generator given the state draws the same", torch.equal(first, on_fresh),
                      f"{first[:4].tolist()} then {on_fresh[:4].tolist()}")
        if clone is not None:
            cloned = draw(device, op, n, clone)
            yield observe(f"{op}: clone_state() draws the same", torch.equal(first, cloned),
                          f"{first[:4].tolist()} then {cloned[:4].tolist()}")


def independent(device, n, seed, other_seed):
    """Generators seeded `seed` and `other_seed`, drawn interleaved, draw what each draws alone."""
    alone = []
    for value in (seed, other_seed):
        generator = torch.Generator(device=device).manual_seed(value)
        alone.append([draw(device, op, n, generator) for op in OPS])
    pair = [torch.Generator(device=device).manual_seed(value) for value in (seed, other_seed)]
    for position, op in enumerate(OPS):
        for which, generator in enumerate(pair):
            mixed = draw(device, op, n, generator)
            yield observe(f"{op}: generator {which} (seed {(seed, other_seed)[which]}) drawn interleaved draws "
                          f"what it draws alone", torch.equal(mixed, alone[which][position]),
                          f"{mixed[:4].tolist()} vs {alone[which][position][:4].tolist()}")


def default_state(device):
    """The state of `device`'s default generator (torch's own for CPU, whose torch.cpu has no RNG functions)."""
    kind = torch.device(device).type
    if kind == "cpu":
        return torch.get_rng_state()
    module = getattr(torch, kind)
    index = torch.device(device).index
    return module.get_rng_state(module.current_device() if index is None else index)


def default_untouched(device, n, seed, other_seed):
    """Drawing from a generator seeded `seed` leaves the device's default generator's state as it was."""
    generator = torch.Generator(device=device).manual_seed(seed)
    before = default_state(device).clone()
    for op in OPS:
        draw(device, op, n, generator)
    after = default_state(device)
    yield observe("the default generator's state is unchanged by draws from another generator",
                  torch.equal(before, after), f"{int((before != after).sum())} of {before.numel()} bytes changed")


PROGRAMS = {"seed_reproducible": seed_reproducible, "state_round_trip": state_round_trip,
            "independent": independent, "default_untouched": default_untouched}


# -- cases ------------------------------------------------------------------------------------------------------------

NUMBERS = Ints(64, 512)  # numbers per draw (randperm's length, multinomial's categories)
SEED = Ints(0, SEED_MAX)
WARMUP = Ints(0, 3)  # state_round_trip's draws before the state is read
_OTHER_SEED = CaseParams({"n": NUMBERS, "seed": SEED, "other_seed": SEED},
                         rules=(("the other seed differs from the seed in its low 32 bits",
                                 lambda p: (p["seed"] - p["other_seed"]) % 2**32 != 0),))
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds
    "seed_reproducible": _OTHER_SEED, "independent": _OTHER_SEED, "default_untouched": _OTHER_SEED,
    "state_round_trip": CaseParams({"n": NUMBERS, "seed": SEED, "warmup": WARMUP}),
}


def generator_cases(scenario: str) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw_) -> Case:
        n = draw_(NUMBERS.strategy(), label="numbers per draw")
        seed = draw_(SEED.strategy(), label="seed")
        if scenario == "state_round_trip":
            name, what = "warmup", "warm-up draws"
            extra = draw_(WARMUP.strategy(), label="draws before the state is read")
        else:
            low = (seed + draw_(st.integers(1, 2**32 - 1), label="low 32 bits apart")) % 2**32
            extra = draw_(st.integers(0, 2**32 - 1), label="high 32 bits of the other seed") * 2**32 + low
            name, what = "other_seed", "other seed"
        return scenario_case(scenario, torch.float32, PARAMS[scenario],
                             {"input": torch.zeros(0), "n": n, "seed": seed, name: extra},
                             f"{scenario}: {n} numbers per draw, seed {seed}, {what} {extra}")

    return draw_case()


def require_generator(cts, scenario):
    """A replayed case on a device that claims no generator and cannot make one: runtime_unavailable."""
    if not on_validation_target(cts) and not claimed(cts):
        try:
            torch.Generator(device=cts.target.device)
        except Exception as exc:  # noqa: BLE001 - any refusal: the facility is missing, and nothing claimed it
            raise unavailable(f"torch.Generator(device={cts.target.device!r}) raises {type(exc).__name__}; "
                              f"the device_generator capability needs it; {unclaimed(cts)}") from exc


# Invariants of the device's generators alone: each row's program observes them, no CPU result to compare.
test_device_generator = scenario_suite(
    "device_generator", capability="device_generator", level=3, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=Custom(invariants(PROGRAMS[name], require_generator)),
                        cases=lambda cts, name=name: generator_cases(name)) for name in SCENARIOS])
