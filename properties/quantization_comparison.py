"""How the native quantization suite compares the device's quantized observables with CPU's.

Quantization is `clamp(round_half_even(x / scale) + zero_point)`: with power-of-two scales every
observable has one right answer and is compared exactly; with any other scale, and for requantizing
ops, int_repr may differ by one step and dequantize by one scale (docs/suites/native_quantization.md).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchcts.strategies import same_bits


def power_of_two(scale: float) -> bool:
    return math.frexp(scale)[0] == 0.5


def exact_qparams(seen: dict[str, Any]) -> bool:
    """Whether every scale CPU observed is a power of two (quantization then has one right answer)."""
    found = seen["scales"].tolist() if "scales" in seen else [seen["scale"]]
    return all(power_of_two(s) for s in found)


def _step(seen: dict[str, Any], like: torch.Tensor) -> torch.Tensor:
    """One quantization step of every element of `like` (the scale, per channel along the axis)."""
    if "scales" in seen:
        shape = [1] * like.dim()
        shape[seen["axis"]] = -1
        return seen["scales"].to(torch.float64).reshape(shape).expand(like.shape)
    return torch.full(like.shape, float(seen["scale"]), dtype=torch.float64)


def _first_beyond(bad: torch.Tensor) -> list[int]:
    return [int(i) for i in bad.nonzero()[0]] if bad.dim() else []


def compare_quantized(actual: dict[str, Any], expected: dict[str, Any], exact: bool, what: str) -> None:
    """AssertionError naming the first observable (and multi-index) that differs beyond the allowance:
    everything exact when `exact`, else int_repr within one step and dequantize within one scale."""
    assert isinstance(actual, dict) and actual.keys() == expected.keys(), \
        f"{what}: the device observed {sorted(actual)}, CPU {sorted(expected)}"
    for name, want in expected.items():
        got = actual[name]
        if not isinstance(want, torch.Tensor):
            assert got == want and type(got) is type(want), f"{what}: {name} = {got!r}, CPU gives {want!r}"
            continue
        assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and got.shape == want.shape, \
            f"{what}: {name} is {_meta(got)}, CPU gives {_meta(want)}"
        got = got.cpu()
        if exact or not (name.endswith("int_repr") or name.endswith("dequantize")):
            if same_bits(got, want):
                continue
            bad = got.to(torch.float64) != want.to(torch.float64)
            if not bad.any():  # same values, other bits (-0.0)
                bad = torch.ones_like(bad)
            allowed = "exactly (a power-of-two scale)" if exact else "exactly"
        elif name.endswith("int_repr"):
            bad = (got.to(torch.int64) - want.to(torch.int64)).abs() > 1
            allowed = "within one step"
        else:
            # one scale, plus the float result's own rounding (qint32 values past 2**24 steps)
            slack = _step(expected, want) + 2 * torch.finfo(want.dtype).eps * want.to(torch.float64).abs()
            bad = (got.to(torch.float64) - want.to(torch.float64)).abs() > slack
            allowed = "within one scale"
        if bad.any():
            where = _first_beyond(bad)
            raise AssertionError(f"{what}: {name}{where} = {got[tuple(where)].item()!r}, CPU gives "
                                 f"{want[tuple(where)].item()!r} (must match {allowed}; "
                                 f"{int(bad.sum())} of {bad.numel()} elements differ)")


def _meta(t: Any) -> str:
    return f"{t.dtype} {list(t.shape)}" if isinstance(t, torch.Tensor) else type(t).__name__
