"""Goodness-of-fit tests for random draws, written with torch and math (no scipy): p-values the rng suites compare
with their share of a false-positive budget.

- `ks_pvalue(samples, cdf, resolution)`: one-sample two-sided Kolmogorov-Smirnov against a continuous CDF,
  made conservative for draws rounded to their dtype: each draw may stand for any value between its two
  neighbours in that dtype (whatever the rounding mode), and the law the kernel draws from may be off by
  `resolution` (the spacing of the uniform numbers it starts from: 2**-8 for bfloat16). The p-value uses
  the asymptotic Kolmogorov distribution with Stephens' small-n correction
  (lambda = (sqrt(n) + 0.12 + 0.11 / sqrt(n)) * D), accurate in the far tail the budget uses.
- `chi_square_pvalue(counts, probabilities)`: Pearson's chi-square, neighbouring bins pooled until each
  expects at least 5, p = Q(df / 2, X**2 / 2) with `torch.special.gammaincc`.
- `binomial_pvalue(k, n, p)`: exact two-sided binomial test (twice the smaller tail, from log-pmf sums).
"""

from __future__ import annotations

import math
from typing import Callable

import torch

MIN_EXPECTED = 5.0  # the usual floor on a chi-square bin's expected count


def kolmogorov_pvalue(d: float, n: int) -> float:
    """P(D_n >= d) for the one-sample two-sided Kolmogorov-Smirnov statistic (asymptotic, Stephens' correction)."""
    if d <= 0:
        return 1.0
    root = math.sqrt(n)
    lam = (root + 0.12 + 0.11 / root) * d
    if lam < 0.3:  # the series converges slowly there, and the p-value is 1 to 6 digits
        return 1.0
    total = sum((-1) ** (k - 1) * math.exp(-2.0 * k * k * lam * lam) for k in range(1, 101))
    return min(1.0, max(0.0, 2.0 * total))


def ks_statistic(samples: torch.Tensor, cdf: Callable[[torch.Tensor], torch.Tensor], resolution: float = 0.0) -> float:
    """The conservative D: a draw x stands for any value between its neighbours in its dtype, so the empirical CDF
    is compared with F(next(x)) from above and F(previous(x)) from below, less the law's `resolution`."""
    x = samples.flatten().sort().values
    n = x.numel()
    inf = torch.tensor(float("inf"), dtype=x.dtype)
    above = cdf(torch.nextafter(x, inf).double())
    below = cdf(torch.nextafter(x, -inf).double())
    ranks = torch.arange(1, n + 1, dtype=torch.float64)
    d_plus = (ranks / n - above).max().item()
    d_minus = (below - (ranks - 1) / n).max().item()
    return max(d_plus, d_minus, 0.0) - resolution


def ks_pvalue(samples: torch.Tensor, cdf: Callable[[torch.Tensor], torch.Tensor], resolution: float = 0.0) -> float:
    return kolmogorov_pvalue(ks_statistic(samples, cdf, resolution), samples.numel())


def pooled(counts: torch.Tensor, expected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Neighbouring bins merged, in order, until each expects at least MIN_EXPECTED (a short last run joins the
    bin before it)."""
    merged_counts, merged_expected, count, mass = [], [], 0.0, 0.0
    for c, e in zip(counts.tolist(), expected.tolist()):
        count, mass = count + c, mass + e
        if mass >= MIN_EXPECTED:
            merged_counts.append(count)
            merged_expected.append(mass)
            count, mass = 0.0, 0.0
    if merged_counts:
        merged_counts[-1] += count
        merged_expected[-1] += mass
    else:
        merged_counts, merged_expected = [count], [mass]
    return torch.tensor(merged_counts, dtype=torch.float64), torch.tensor(merged_expected, dtype=torch.float64)


def chi_square_pvalue(counts: torch.Tensor, probabilities: torch.Tensor) -> float:
    """Pearson's goodness-of-fit p-value of `counts` against `probabilities` (same length, summing to 1)."""
    counts = counts.double()
    expected = probabilities.double() / probabilities.double().sum() * counts.sum()
    observed, expected = pooled(counts, expected)
    if observed.numel() < 2:
        return 1.0
    statistic = ((observed - expected) ** 2 / expected).sum()
    df = torch.tensor((observed.numel() - 1) / 2.0, dtype=torch.float64)
    return float(torch.special.gammaincc(df, statistic / 2))


def binomial_pvalue(k: int, n: int, p: float) -> float:
    """Exact two-sided binomial p-value of `k` successes in `n` trials of probability `p`."""
    if p <= 0.0 or p >= 1.0:
        return 1.0 if k == round(n * p) else 0.0
    ks = torch.arange(n + 1, dtype=torch.float64)
    log_pmf = (math.lgamma(n + 1) - torch.lgamma(ks + 1) - torch.lgamma(n - ks + 1)
               + ks * math.log(p) + (n - ks) * math.log1p(-p))
    pmf = log_pmf.exp()
    return min(1.0, 2.0 * min(pmf[:k + 1].sum().item(), pmf[k:].sum().item()))
