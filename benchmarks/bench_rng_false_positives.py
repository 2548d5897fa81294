"""False-positive rate and power of the rng_distributions suite's normal KS test, on clean CPU draws.

    python benchmarks/bench_rng_false_positives.py [--runs 200] [--n 5000] [--alpha A]

Draws `n` numbers with `normal_(0, 1)` on CPU under `--runs` different seeds and tests each against
N(0, 1) with the suite's conservative KS test (properties/rng_statistics.py). Prints:
- the false-positive rate at the suite's alpha (default: FALSE_POSITIVE_BUDGET split over 100
  examples, one test each) and at 0.05 and 0.01 (where a calibrated test rejects ~5% and ~1%);
- the power: the share of runs rejected at the suite's alpha when the draws come from N(0, 1.2)
  (std 20% too large), N(0.1, 1) (mean shifted by a tenth of a std) and N(0, 1.1).
"""

from __future__ import annotations

import argparse

import torch

from torchcts.properties.rng_statistics import ks_pvalue
from torchcts.properties.rng_verdicts import continuous_cdf
from torchcts.properties.suites.rng_distributions import FALSE_POSITIVE_BUDGET


def p_values(runs: int, n: int, mean: float, std: float) -> torch.Tensor:
    law = continuous_cdf("normal", [0.0, 1.0])
    found = []
    for seed in range(runs):
        draws = torch.empty(n).normal_(mean, std, generator=torch.Generator().manual_seed(seed))
        found.append(ks_pvalue(draws, law, torch.finfo(draws.dtype).eps))
    return torch.tensor(found, dtype=torch.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--alpha", type=float, default=FALSE_POSITIVE_BUDGET / 100)
    options = parser.parse_args()
    clean = p_values(options.runs, options.n, 0.0, 1.0)
    print(f"normal KS, {options.runs} runs of {options.n} clean CPU draws of N(0, 1):")
    for alpha in (options.alpha, 0.05, 0.01):
        print(f"  false-positive rate at alpha {alpha:.3g}: {(clean < alpha).double().mean().item():.4f}")
    print(f"  smallest p-value: {clean.min().item():.3g}")
    for mean, std in ((0.0, 1.2), (0.1, 1.0), (0.0, 1.1)):
        shifted = p_values(options.runs, options.n, mean, std)
        print(f"  power against N({mean}, {std}) at alpha {options.alpha:.3g}: "
              f"{(shifted < options.alpha).double().mean().item():.4f}")


if __name__ == "__main__":
    main()
