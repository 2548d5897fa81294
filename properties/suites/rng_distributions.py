"""RNG distributions: the device's random ops draw from the laws torch documents, judged by goodness-of-fit tests.

Each scenario draws thousands of numbers on the device (its default generator seeded from the case, so
a derandomized run gives the same verdicts), moves them to CPU and tests them (properties/rng_verdicts.py, its
p-values from properties/rng_statistics.py):
- Kolmogorov-Smirnov against the continuous CDF: `uniform` (`uniform_`), `normal` (`normal_`),
  `log_normal` (`log_normal_`), `cauchy` (`cauchy_`), `exponential` (`exponential_`);
- chi-square goodness of fit: `geometric` (`geometric_`, counts 1..K and the tail pooled), `randint`
  (up to 64 bins of the range), `multinomial` (category counts, with replacement),
  `multinomial_no_replacement` (the first draw of each row), `randperm` (where 0 lands in each permutation);
- exact binomial tests: `bernoulli` (`bernoulli_(p)`), `bernoulli_tensor` (`torch.bernoulli` of a
  tensor holding up to 4 probabilities, one test each), `dropout` (the share of zeros is p).
Invariants too: the support (values in range, integers, 0/1, categories of weight 0 never drawn, rows
without replacement and permutations without repeats) and dropout's scale (kept values are x / (1 - p)).
The distribution's parameters and the sample sizes are drawn by Hypothesis and shrink on failure.

False positives: FALSE_POSITIVE_BUDGET (1e-6) per item run, split (Bonferroni) over the item's examples and
the tests of one example: each test rejects at alpha = 1e-6 / (max_examples * TESTS[scenario]).
`benchmarks/bench_rng_false_positives.py` measures the rate and the power.

Dtypes: float32, float64, float16 and bfloat16 for every scenario. The KS test allows for low-precision
draws: a draw stands for any value between its neighbours in its dtype (any rounding mode), the law may be
off by the dtype's eps (the coarse uniforms a low-precision kernel starts from), and by the distance to
the same law with its parameters rounded to the dtype (CPU's bfloat16 `uniform_` takes its bounds so).
Integer-valued draws stay exact: randint bounds and randperm sizes are kept below 2**8 (bfloat16) and
2**11 (float16); bernoulli_tensor tests the probabilities as the dtype stores them.

Limits: tests have power against sizeable departures (a scale off by 10%+, a shifted support, a missing
category) at a few thousand draws (measured: std 20% too large rejected in 95% of runs at n = 5000, std
10% too large in 99% at n = 20000), not against subtle ones; independence between draws is only touched
by the rng suite (consecutive draws differ).
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import Bound, CaseParams, Floats, Ints, Lists, OneOf, Tuples
from torchcts.cases.scenario_case import INPUT, named, scenario_case
from torchcts.properties.rng_verdicts import CONTINUOUS, verdicts
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("random ops draw from their documented laws: Kolmogorov-Smirnov, chi-square and exact binomial tests "
          "under a 1e-6 per-item false-positive budget, plus support, permutation and dropout-scale invariants")

FALSE_POSITIVE_BUDGET = 1e-6  # the chance that a clean item run fails, split over its examples and tests
DTYPES = ("float32", "float64", "float16", "bfloat16")
SCENARIOS = CONTINUOUS + ("bernoulli", "bernoulli_tensor", "geometric", "randint", "multinomial",
                          "multinomial_no_replacement", "randperm", "dropout")
TESTS = {scenario: 1 for scenario in SCENARIOS} | {"bernoulli_tensor": 4}  # statistical tests per example, at most
EXACT_INTEGERS = {"float16": 2**11, "bfloat16": 2**8, "float32": 2**24, "float64": 2**40}  # |v| exact below
RANDPERM_MAX = 2**14


# -- the program: torch only ------------------------------------------------------------------------------------------

def draw_distribution(device, scenario, dtype, params, n, seed):
    """`n` draws (CPU copies) of `scenario`'s random op on `device` with `params`, in dtype `dtype` (a name), after
    torch.manual_seed(seed); the caller's RNG states are restored after."""
    kind = torch.device(device).type
    dtype = getattr(torch, dtype)
    forked = torch.random.fork_rng(devices=[]) if kind == "cpu" else torch.random.fork_rng(
        devices=range(getattr(torch, kind).device_count()), device_type=kind)
    with forked:
        torch.manual_seed(seed)
        empty = torch.empty(n, dtype=dtype, device=device)
        if scenario == "uniform":
            return empty.uniform_(params[0], params[1]).cpu()
        if scenario == "normal":
            return empty.normal_(params[0], params[1]).cpu()
        if scenario == "log_normal":
            return empty.log_normal_(params[0], params[1]).cpu()
        if scenario == "cauchy":
            return empty.cauchy_(params[0], params[1]).cpu()
        if scenario == "exponential":
            return empty.exponential_(params[0]).cpu()
        if scenario == "bernoulli":
            return empty.bernoulli_(params[0]).cpu()
        if scenario == "bernoulli_tensor":
            probabilities = torch.tensor(params, dtype=dtype, device=device)[:, None].expand(len(params), n)
            return torch.bernoulli(probabilities).cpu()
        if scenario == "geometric":
            return empty.geometric_(params[0]).cpu()
        if scenario == "randint":
            return torch.randint(params[0], params[1], (n,), dtype=dtype, device=device).cpu()
        if scenario == "multinomial":
            return torch.multinomial(torch.tensor(params, dtype=dtype, device=device), n, replacement=True).cpu()
        if scenario == "multinomial_no_replacement":
            weights = torch.tensor(params[:-1], dtype=dtype, device=device)
            return torch.multinomial(weights.expand(n, len(weights)), params[-1], replacement=False).cpu()
        if scenario == "randperm":
            size, big = params
            return [torch.stack([torch.randperm(size, dtype=dtype, device=device) for _ in range(n)]).cpu(),
                    torch.randperm(big, dtype=dtype, device=device).cpu()]
        value = torch.full((n,), params[1], dtype=dtype, device=device)  # dropout
        return torch.nn.functional.dropout(value, params[0], training=True).cpu()


def distribution_check(cts, row):
    """Draws on the device (its exceptions: the backend's errors), then every invariant and test at the item's alpha
    (the statistical oracle: `rng_verdicts`; no CPU draws to compare with). The case's values are read by name."""
    scenario = row.name
    alpha = FALSE_POSITIVE_BUDGET / (cts.max_examples * TESTS[scenario])

    def run(cts_, sample, target):
        values = named(row.params, sample)
        return draw_distribution(target.device, values["scenario"], values["dtype"], values["params"],
                                 values["samples"], values["seed"])

    def check(case):
        draws = cts.on_device_call(run, case.sample, what=f" ({scenario})")
        params = row.values(case)["params"]
        broken = [o for o in verdicts(scenario, params, draws, alpha, cts.dtype) if not o.holds]
        if broken:
            raise AssertionError(f"{scenario} [{case.transforms[0]}] on {cts.target.describe()}: "
                                 + "; ".join(o.describe() for o in broken[:4]))

    return check


# -- cases ------------------------------------------------------------------------------------------------------------

# The bounds of what a case stores (PARAMS below); the draws go through them
SAMPLES = Ints(2000, 20000)  # draws of one example
TENSOR_SAMPLES = Ints(2**15, 2**16)  # bernoulli_tensor's draws per probability
ROWS_WITHOUT_REPLACEMENT = Ints(200, 2000)  # multinomial_no_replacement's rows
SEED = Ints(0, 2**32 - 1)
PROBABILITY, NEAR_ZERO, NEAR_ONE = Floats(0.0, 1.0), Floats(2**-9, 2**-8), Floats(1 - 2**-8, 1.0)
UNIFORM_LOW, UNIFORM_WIDTH = Floats(-8, 8), Floats(0.5, 16)
LOCATION, SCALE = Floats(-8, 8), Floats(0.1, 8)  # normal and cauchy
LOG_LOCATION, LOG_SCALE = Floats(-2, 2), Floats(0.1, 2)  # log_normal
RATE = Floats(0.05, 20)  # exponential
SUCCESS = Floats(0.05, 0.95)  # geometric
DROP, KEPT_VALUE = Floats(0.0, 0.9), Floats(0.5, 4.0)  # dropout
FIRST_WEIGHT, WEIGHT = Ints(1, 10), Ints(0, 10)
OTHER_WEIGHTS = Lists(WEIGHT, 1, 15)
PERMUTATION = Ints(2, 16)  # randperm's size whose positions are tested
PERMUTATIONS_PER_SIZE = (10, 40)  # randperm draws 10..40 permutations per position
LARGE_PERMUTATION = Ints(1, RANDPERM_MAX)  # randperm's one large permutation (below the dtype's exact integers too)
RANDINT_REACH = max(EXACT_INTEGERS.values()) // 2  # randint's bounds: within the dtype's exact integers


def _probability() -> st.SearchStrategy[float]:
    """A probability: near 0 (where 2**15+ draws still expect 64+ ones), anywhere, or near 1."""
    return st.one_of(NEAR_ZERO.strategy(), PROBABILITY.strategy(), NEAR_ONE.strategy())


def _up_to(limit: int) -> st.SearchStrategy[int]:
    """1..limit, every power-of-two scale alike (a size condition of 4096+ is as likely as one of 8+)."""
    return st.integers(0, limit.bit_length() - 1).flatmap(
        lambda k: st.integers(2**k, min(2 ** (k + 1) - 1, limit)))


@st.composite
def _weights(draw, label: str) -> list[int]:
    first = draw(FIRST_WEIGHT.strategy(), label=f"{label}: first weight")
    return [first] + draw(OTHER_WEIGHTS.strategy(), label=f"{label}: other weights")


def parameters(scenario: str, dtype_name: str) -> st.SearchStrategy[tuple[list, int]]:
    """(the law's parameters, the sample size) for `scenario` in dtype `dtype_name`."""
    limit = EXACT_INTEGERS[dtype_name]
    samples = SAMPLES.strategy()
    if scenario == "uniform":
        return st.tuples(UNIFORM_LOW.strategy(), UNIFORM_WIDTH.strategy()).map(lambda t: [t[0], t[0] + t[1]]).flatmap(
            lambda p: st.tuples(st.just(p), samples))
    if scenario in ("normal", "cauchy"):
        return st.tuples(st.tuples(LOCATION.strategy(), SCALE.strategy()).map(list), samples)
    if scenario == "log_normal":
        return st.tuples(st.tuples(LOG_LOCATION.strategy(), LOG_SCALE.strategy()).map(list), samples)
    if scenario == "exponential":
        return st.tuples(st.tuples(RATE.strategy()).map(list), samples)
    if scenario == "bernoulli":
        return st.tuples(st.tuples(_probability()).map(list), samples)
    if scenario == "bernoulli_tensor":
        return st.tuples(st.lists(_probability(), min_size=1, max_size=4), TENSOR_SAMPLES.strategy())
    if scenario == "geometric":
        return st.tuples(st.tuples(SUCCESS.strategy()).map(list), samples)
    if scenario == "randint":
        return st.tuples(st.tuples(st.integers(-limit // 2, limit // 2 - 1), st.integers(1, limit // 2)).map(
            lambda t: [t[0], t[0] + t[1]]), samples)
    if scenario == "multinomial":
        return st.tuples(_weights("weights"), samples)
    if scenario == "multinomial_no_replacement":
        return _weights("weights").flatmap(lambda w: st.tuples(
            st.integers(1, sum(1 for x in w if x)).map(lambda k: w + [k]), ROWS_WITHOUT_REPLACEMENT.strategy()))
    if scenario == "randperm":
        low, high = PERMUTATIONS_PER_SIZE
        return PERMUTATION.strategy().flatmap(lambda size: st.tuples(
            st.tuples(st.just(size), _up_to(min(limit, LARGE_PERMUTATION.high))).map(list),
            st.integers(low * size, high * size)))
    return st.tuples(st.tuples(DROP.strategy(), KEPT_VALUE.strategy()).map(list), samples)  # dropout


def _case_params(scenario: str, law: Bound, samples: Bound = SAMPLES, rules=()) -> CaseParams:
    """Stored args (scenario, dtype name, the law's parameters, the sample count, the seed) and the placeholder."""
    return CaseParams({"scenario": OneOf((scenario,)), "dtype": OneOf(DTYPES), "params": law, "samples": samples,
                       "seed": SEED}, rules=rules)


def _randint_within(bounds: list[int], limit: int) -> bool:
    low, high = bounds
    return -limit // 2 <= low <= limit // 2 - 1 and 1 <= high - low <= limit // 2


_WEIGHTS = Lists(WEIGHT, OTHER_WEIGHTS.min_size + 1, OTHER_WEIGHTS.max_size + 1)
_FIRST_WEIGHT_RULE = ("the first weight is at least 1", lambda p: p["params"][0] >= FIRST_WEIGHT.low)
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws above go through these bounds
    "uniform": _case_params("uniform", Tuples((UNIFORM_LOW, Floats(UNIFORM_LOW.low + UNIFORM_WIDTH.low,
                                                                   UNIFORM_LOW.high + UNIFORM_WIDTH.high))),
                            rules=(("high - low within the drawn widths (0.5..16)", lambda p: UNIFORM_WIDTH.low * 0.999
                                    <= p["params"][1] - p["params"][0] <= UNIFORM_WIDTH.high * 1.001),)),
    "normal": _case_params("normal", Tuples((LOCATION, SCALE))),
    "cauchy": _case_params("cauchy", Tuples((LOCATION, SCALE))),
    "log_normal": _case_params("log_normal", Tuples((LOG_LOCATION, LOG_SCALE))),
    "exponential": _case_params("exponential", Tuples((RATE,))),
    "bernoulli": _case_params("bernoulli", Tuples((PROBABILITY,))),
    "bernoulli_tensor": _case_params("bernoulli_tensor", Lists(PROBABILITY, 1, 4), TENSOR_SAMPLES),
    "geometric": _case_params("geometric", Tuples((SUCCESS,))),
    "randint": _case_params("randint", Tuples((Ints(-RANDINT_REACH, RANDINT_REACH - 1),
                                               Ints(-RANDINT_REACH + 1, 2 * RANDINT_REACH - 1))),
                            rules=(("-E/2 <= low < E/2 and 1 <= high - low <= E/2 (E: the dtype's EXACT_INTEGERS)",
                                    lambda p: _randint_within(p["params"], EXACT_INTEGERS[p["dtype"]])),)),
    "multinomial": _case_params("multinomial", _WEIGHTS, rules=(_FIRST_WEIGHT_RULE,)),
    "multinomial_no_replacement": _case_params(
        "multinomial_no_replacement", Lists(Ints(0, max(WEIGHT.high, _WEIGHTS.max_size)), _WEIGHTS.min_size + 1,
                                            _WEIGHTS.max_size + 1), ROWS_WITHOUT_REPLACEMENT,
        rules=(_FIRST_WEIGHT_RULE, ("weights (all but the last value) within 0..10",
                                    lambda p: all(WEIGHT.problem(w) is None for w in p["params"][:-1])),
               ("1 <= draws per row (the last value) <= the weights above 0",
                lambda p: 1 <= p["params"][-1] <= sum(1 for w in p["params"][:-1] if w)))),
    "randperm": _case_params(
        "randperm", Tuples((PERMUTATION, LARGE_PERMUTATION)),
        Ints(PERMUTATIONS_PER_SIZE[0] * PERMUTATION.low, PERMUTATIONS_PER_SIZE[1] * PERMUTATION.high),
        rules=(("10 * size <= samples <= 40 * size",
                lambda p: PERMUTATIONS_PER_SIZE[0] * p["params"][0] <= p["samples"]
                <= PERMUTATIONS_PER_SIZE[1] * p["params"][0]),
               ("the large permutation's size <= the dtype's EXACT_INTEGERS",
                lambda p: p["params"][1] <= EXACT_INTEGERS[p["dtype"]]))),
    "dropout": _case_params("dropout", Tuples((DROP, KEPT_VALUE))),
}


def distribution_cases(scenario: str, dtype: torch.dtype, dtype_name: str) -> st.SearchStrategy[Case]:
    """`scenario`'s cases in dtype `dtype_name`: the law's parameters and the sample size, then the seed."""
    @st.composite
    def draw_case(draw) -> Case:
        params, n = draw(parameters(scenario, dtype_name), label="parameters and sample size")
        seed = draw(SEED.strategy(), label="seed of the device's generator")
        values = {INPUT: torch.zeros(0), "scenario": scenario, "dtype": dtype_name, "params": params, "samples": n,
                  "seed": seed}
        return scenario_case(scenario, dtype, PARAMS[scenario], values,
                             f"{scenario}({params}) x {n} in {dtype_name}, seed {seed}")

    return draw_case()


# Each row: its law's draws on the device, judged by the statistical oracle (`distribution_check`: support
# invariants and a goodness-of-fit test at the row's share of the false-positive budget). No program is registered
# for export: the device's random numbers have no CPU result to compare with.
test_rng_distributions = scenario_suite(
    "rng_distributions", capability="rng_distributions", level=5, dtypes=DTYPES,
    scenarios=[Scenario(name, PARAMS[name], comparison=Custom(distribution_check),
                        cases=lambda cts, name=name: distribution_cases(name, cts.dtype, cts.item.dtype))
               for name in SCENARIOS])
