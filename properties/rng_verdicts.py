"""The laws the rng_distributions suite's draws must follow, and the verdict on a sample of them (CPU copies of the
draws): support invariants (values within range, integers, 0 or 1, categories of weight 0 never drawn, rows and
permutations without repeats, dropout's scale) and a goodness-of-fit test per law (Kolmogorov-Smirnov against the
continuous CDF, chi-square on counts, exact binomial on 0/1 draws: `rng_statistics`), each at the level `alpha`
the suite gives it (its share of the false-positive budget).
"""

from __future__ import annotations

import math

import torch

from torchcts.properties.rng_statistics import binomial_pvalue, chi_square_pvalue, ks_pvalue
from torchcts.properties.runtime_checks import Observation, observe

CONTINUOUS = ("uniform", "normal", "log_normal", "cauchy", "exponential")  # the laws judged by Kolmogorov-Smirnov
RANDINT_BINS = 64  # randint's chi-square bins, at most


def _normal_cdf(z: torch.Tensor) -> torch.Tensor:
    return 0.5 * torch.erfc(-z / math.sqrt(2.0))


def continuous_cdf(scenario: str, params: list[float]):
    """The CDF (float64 tensors in and out) `scenario` with `params` draws from."""
    if scenario == "uniform":
        low, high = params
        return lambda x: ((x - low) / (high - low)).clamp(0.0, 1.0)
    if scenario == "normal":
        return lambda x: _normal_cdf((x - params[0]) / params[1])
    if scenario == "log_normal":
        return lambda x: torch.where(x > 0, _normal_cdf((x.clamp_min(1e-300).log() - params[0]) / params[1]), 0.0)
    if scenario == "cauchy":
        return lambda x: 0.5 + torch.atan((x - params[0]) / params[1]) / math.pi
    return lambda x: torch.where(x > 0, -torch.expm1(-params[0] * x.clamp_min(0.0)), 0.0)  # exponential


def rounded_parameters_slack(scenario: str, params: list[float], draws: torch.Tensor, law) -> float:
    """How far (at the draws) the law is from the same law with its parameters rounded to the draws' dtype: a
    kernel may take its parameters in the dtype it draws in (CPU's bfloat16 uniform_ does)."""
    rounded = torch.tensor(params, dtype=torch.float64).to(draws.dtype).double().tolist()
    if rounded == list(params):
        return 0.0
    x = draws.double()
    return (law(x) - continuous_cdf(scenario, rounded)(x)).abs().nan_to_num(0.0).max().item()


def _ks(scenario, params, draws, alpha) -> list[Observation]:
    support = {"uniform": (params[0], params[-1]), "log_normal": (0.0, math.inf), "exponential": (0.0, math.inf)}
    low, high = (torch.tensor(bound, dtype=torch.float64).to(draws.dtype).double().item()
                 for bound in support.get(scenario, (-math.inf, math.inf)))  # the bounds as the dtype rounds them
    values = draws.double()
    outside = values[(values < low) | (values > high) | values.isnan()]
    law = continuous_cdf(scenario, params)
    p = ks_pvalue(draws, law, torch.finfo(draws.dtype).eps + rounded_parameters_slack(scenario, params, draws, law))
    return [observe(f"draws within [{low}, {high}]", outside.numel() == 0, f"{outside[:4].tolist()}"),
            observe(f"Kolmogorov-Smirnov p-value >= alpha {alpha:.2g}", p >= alpha, f"p = {p:.3g}")]


def _counts(values: torch.Tensor, size: int) -> torch.Tensor:
    return torch.bincount(values.long().flatten(), minlength=size)[:size].double()


def _integral(values: torch.Tensor) -> bool:
    return bool((values == values.round()).all())


def _geometric(params, draws, alpha) -> list[Observation]:
    p, n = params[0], draws.numel()
    values = draws.double()
    support = _integral(values) and bool((values >= 1).all())
    last = 1  # bins 1..last, then the tail: the tail expects at least MIN_EXPECTED
    while n * (1 - p) ** last >= 5.0:
        last += 1
    ks = torch.arange(1, last + 1, dtype=torch.float64)
    probabilities = torch.cat([p * (1 - p) ** (ks - 1), torch.tensor([(1 - p) ** last], dtype=torch.float64)])
    counts = torch.cat([_counts(values.clamp(0, last + 1), last + 2)[1:last + 1],
                        (values > last).sum().double().reshape(1)])
    chi = chi_square_pvalue(counts, probabilities)
    return [observe("draws are integers >= 1", support, f"min {values.min().item()}"),
            observe(f"chi-square p-value >= alpha {alpha:.2g} (bins 1..{last}, tail)", chi >= alpha, f"p = {chi:.3g}")]


def _randint(params, draws, alpha) -> list[Observation]:
    low, high = params
    values = draws.double()
    inside = _integral(values) and bool(((values >= low) & (values < high)).all())
    width = high - low
    bins = min(width, RANDINT_BINS)
    edges = [-((-b * width) // bins) for b in range(bins + 1)]  # bin b holds offsets [edges[b], edges[b+1])
    probabilities = torch.tensor([edges[b + 1] - edges[b] for b in range(bins)], dtype=torch.float64) / width
    offsets = (values - low).clamp(0, width - 1)
    counts = _counts(torch.bucketize(offsets, torch.tensor(edges[1:], dtype=torch.float64), right=True), bins)
    chi = chi_square_pvalue(counts, probabilities)
    return [observe(f"draws are integers in [{low}, {high})", inside, f"min {values.min().item()}, max "
                    f"{values.max().item()}"),
            observe(f"chi-square p-value >= alpha {alpha:.2g} ({bins} bins)", chi >= alpha, f"p = {chi:.3g}")]


def _multinomial(params, draws, alpha, replacement) -> list[Observation]:
    weights = torch.tensor(params if replacement else params[:-1], dtype=torch.float64)
    drawn = draws.long()
    never = [c for c in drawn.unique().tolist() if weights[c] == 0]
    found = [observe("categories of weight 0 are never drawn", not never, f"drew {never[:4]}")]
    if not replacement:
        repeats = [r for r, row in enumerate(drawn.tolist()) if len(set(row)) != len(row)]
        found.append(observe(f"rows drawn without replacement repeat no category", not repeats,
                             f"{len(repeats)} rows repeat one, e.g. row {repeats[:1]}: "
                             f"{drawn[repeats[0]].tolist() if repeats else ''}"))
        drawn = drawn[:, 0]  # the first draw of a row follows the weights
    chi = chi_square_pvalue(_counts(drawn, len(weights)), weights)
    return found + [observe(f"chi-square p-value >= alpha {alpha:.2g} ({len(weights)} categories)", chi >= alpha,
                            f"p = {chi:.3g}")]


def _randperm(params, draws, alpha) -> list[Observation]:
    size, big = params
    perms, large = draws[0].long(), draws[1].long()
    valid = bool((perms.sort(dim=1).values == torch.arange(size)).all())
    large_valid = torch.equal(large.sort().values, torch.arange(big))
    positions = (perms == 0).long().argmax(dim=1)
    chi = chi_square_pvalue(_counts(positions, size), torch.ones(size, dtype=torch.float64))
    return [observe(f"every randperm({size}) is a permutation", valid),
            observe(f"randperm({big}) is a permutation", large_valid,
                    f"{big - large.unique().numel()} values repeated"),
            observe(f"chi-square p-value >= alpha {alpha:.2g} (where 0 lands, {size} positions)", chi >= alpha,
                    f"p = {chi:.3g}")]


def _bernoulli(probabilities: list[float], draws: torch.Tensor, alpha: float) -> list[Observation]:
    rows = draws.double().reshape(len(probabilities), -1)
    found = [observe("draws are 0 or 1", bool(((rows == 0) | (rows == 1)).all()))]
    for p, row in zip(probabilities, rows):
        k, n = int(row.sum().item()), row.numel()
        pvalue = binomial_pvalue(k, n, p)
        found.append(observe(f"binomial p-value >= alpha {alpha:.2g} for p = {p:.6g}", pvalue >= alpha,
                             f"{k} ones in {n} (expected {n * p:.1f}), p-value {pvalue:.3g}"))
    return found


def _dropout(params, draws, alpha) -> list[Observation]:
    p, value = params
    values = draws.double()
    kept = values[values != 0]
    expected = value / (1 - p)
    scale_ok = bool(((kept - expected).abs() <= 4 * torch.finfo(draws.dtype).eps * expected).all())
    zeros, n = int((values == 0).sum().item()), values.numel()
    pvalue = binomial_pvalue(zeros, n, p)
    return [observe(f"kept values are {value} / (1 - {p}) = {expected:.6g}", scale_ok,
                    f"{kept[:4].tolist()}"),
            observe(f"binomial p-value >= alpha {alpha:.2g} for the share of zeros p = {p:.6g}", pvalue >= alpha,
                    f"{zeros} zeros in {n} (expected {n * p:.1f}), p-value {pvalue:.3g}")]


def verdicts(scenario: str, params: list, draws, alpha: float, dtype: torch.dtype) -> list[Observation]:
    """Every invariant and test of `scenario`'s draws with `params`; each test at level `alpha`."""
    if scenario in CONTINUOUS:
        return _ks(scenario, params, draws, alpha)
    if scenario == "geometric":
        return _geometric(params, draws, alpha)
    if scenario == "randint":
        return _randint(params, draws, alpha)
    if scenario in ("multinomial", "multinomial_no_replacement"):
        return _multinomial(params, draws, alpha, scenario == "multinomial")
    if scenario == "randperm":
        return _randperm(params, draws, alpha)
    if scenario == "dropout":
        return _dropout(params, draws, alpha)
    if scenario == "bernoulli":  # p passed as a Python float
        return _bernoulli(params, draws, alpha)
    return _bernoulli(torch.tensor(params, dtype=dtype).double().tolist(), draws, alpha)  # p as the dtype holds it
