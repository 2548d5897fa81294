"""Seeded bugs for the rng_distributions suite (properties/suites/rng_distributions.py): draws from the wrong law.

Each is a transform of a random kernel's correct draws (the device draws CPU's numbers, then the bug
acts on them), shaped like a real kernel mistake, firing in one parameter range, dtype or size:
- `normal_float64_std_as_variance`: the float64 `normal_` kernel scales by std**2 (the variance);
- `exponential_mean_as_rate`: `exponential_` with lambd > 1 draws with rate 1/lambd (the mean taken as the rate);
- `bernoulli_tensor_small_p_never`: `torch.bernoulli(p)` compares 8-bit random numbers with p, so p below
  2**-8 never draws a 1;
- `geometric_counts_failures`: `geometric_` with p < 0.25 (a log-based branch) counts failures, not
  trials: its support starts at 0;
- `multinomial_no_replacement_repeats`: without replacement and 4+ samples per row, the last sample
  repeats the first (a parallel sampler that does not remove what it drew);
- `randperm_large_repeats`: `randperm(n)` for n >= 4096 (a parallel shuffle with a race) repeats a value;
- `dropout_scales_by_inverse_p`: `dropout` with p > 0.5 scales kept values by 1/p instead of 1/(1-p).
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug, argument

SMALL_P = 2**-8
RANDPERM_RACE = 4096


def _normal_float64_std(func, args, kwargs) -> bool:
    return args[0].dtype == torch.float64 and float(argument(func, args, kwargs, "std", 1.0)) != 1.0


def _scaled_by_variance(func, args, kwargs, value):
    mean, std = float(argument(func, args, kwargs, "mean", 0.0)), float(argument(func, args, kwargs, "std", 1.0))
    return value.sub_(mean).mul_(std).add_(mean)  # mean + std * (std * z)


def _rate_above_one(func, args, kwargs) -> bool:
    return float(argument(func, args, kwargs, "lambd", 1.0)) > 1.0


def _rate_as_mean(func, args, kwargs, value):
    return value.mul_(float(argument(func, args, kwargs, "lambd", 1.0)) ** 2)  # mean lambd instead of 1/lambd


def _small_p(func, args, kwargs) -> bool:
    p = args[0]
    return bool(((p > 0) & (p < SMALL_P)).any())


def _never_for_small_p(func, args, kwargs, value):
    return torch.where((args[0] > 0) & (args[0] < SMALL_P), torch.zeros_like(value), value)


def _geometric_small_p(func, args, kwargs) -> bool:
    return float(argument(func, args, kwargs, "p")) < 0.25


def _failures(func, args, kwargs, value):
    return value.sub_(1)


def _without_replacement_4(func, args, kwargs) -> bool:
    return not argument(func, args, kwargs, "replacement", False) and int(args[1]) >= 4


def _last_repeats_first(func, args, kwargs, value):
    value[..., -1] = value[..., 0]
    return value


def _large_randperm(func, args, kwargs) -> bool:
    return int(args[0]) >= RANDPERM_RACE


def _repeats_a_value(func, args, kwargs, value):
    value[-1] = value[0]
    return value


def _dropout_above_half(func, args, kwargs) -> bool:
    return bool(argument(func, args, kwargs, "train", True)) and float(args[1]) > 0.5


def _scaled_by_inverse_p(func, args, kwargs, value):
    output, mask = value
    p = float(args[1])
    return output * ((1 - p) / p), mask


BUGS = (
    Bug("normal_float64_std_as_variance", ("aten.normal_.default",), "normal_ on a float64 tensor with std != 1",
        "draws are scaled by std**2 (the variance) instead of std", _normal_float64_std, _scaled_by_variance,
        suite="rng_distributions"),
    Bug("exponential_mean_as_rate", ("aten.exponential_.default",), "exponential_ with lambd > 1",
        "draws have mean lambd (lambd taken as the mean, not the rate)", _rate_above_one, _rate_as_mean,
        suite="rng_distributions"),
    Bug("bernoulli_tensor_small_p_never", ("aten.bernoulli.default",), "torch.bernoulli of a tensor holding a p in "
        "(0, 2**-8)", "those positions never draw 1 (p compared with 8-bit random numbers)", _small_p,
        _never_for_small_p, suite="rng_distributions"),
    Bug("geometric_counts_failures", ("aten.geometric_.default",), "geometric_ with p < 0.25",
        "draws count failures before the first success: the support starts at 0, not 1", _geometric_small_p,
        _failures, suite="rng_distributions"),
    Bug("multinomial_no_replacement_repeats", ("aten.multinomial.default",), "multinomial without replacement, "
        "4 or more samples per row", "the last sample of each row repeats its first", _without_replacement_4,
        _last_repeats_first, suite="rng_distributions"),
    Bug("randperm_large_repeats", ("aten.randperm.generator_out",), "randperm(n) with n >= 4096",
        "the last value repeats the first: not a permutation", _large_randperm, _repeats_a_value,
        suite="rng_distributions"),
    Bug("dropout_scales_by_inverse_p", ("aten.native_dropout.default",), "dropout in training with p > 0.5",
        "kept values are scaled by 1/p instead of 1/(1-p)", _dropout_above_half, _scaled_by_inverse_p,
        suite="rng_distributions"),
)
