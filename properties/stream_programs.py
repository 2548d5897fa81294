"""What the streams and events suites share: a chain of small ops computed on a device and on CPU, and checks of it.

`chain(x, w, ops)` applies ops from OPS (sin, tanh, silu, an affine map, an in-place add, a matmul with a
scaled random square matrix: values stay bounded) in order; `inputs` builds a case's CPU tensors from a
seed; `agrees` is the observation that a device's result (read back to CPU) equals CPU's chain within
RTOL/ATOL; `to_side` places inputs on the device and orders a side stream after their copies.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import Lists, OneOf
from torchcts.properties.runtime_checks import observe

OPS = ("sin", "tanh", "silu", "affine", "add_", "matmul")
RTOL, ATOL = 1e-3, 1e-4


def device_module(device):
    """`torch.<type>` of `device` (torch.cuda, torch.xpu, torch.cpu, ...)."""
    return getattr(torch, torch.device(device).type)


def inputs(rows, cols, seed):
    """A (rows, cols) input and a (cols, cols) matrix scaled to keep a matmul's values bounded, on CPU."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=generator), torch.randn(cols, cols, generator=generator) / cols ** 0.5


def apply(op, x, w):
    if op == "sin":
        return x.sin()
    if op == "tanh":
        return x.tanh()
    if op == "silu":
        return x * torch.sigmoid(x)
    if op == "affine":
        return x * 0.75 + 0.25
    if op == "add_":
        return (x + 0).add_(0.5)  # in place, on a result of this stream
    if op == "matmul":
        return x @ w
    raise ValueError(f"unknown op {op!r}")


def chain(x, w, ops):
    for op in ops:
        x = apply(op, x, w)
    return x


def agrees(what, got, expected):
    """An observation: `got` (moved to CPU) equals `expected` (CPU's) within the suite's tolerance."""
    got = got.cpu()
    holds = got.shape == expected.shape and torch.allclose(got, expected, rtol=RTOL, atol=ATOL)
    worst = (got - expected).abs().nan_to_num(float("inf")).max().item() if got.shape == expected.shape else None
    return observe(what, holds, f"shape {tuple(got.shape)} vs {tuple(expected.shape)}, largest difference {worst}, "
                                f"first values {got.flatten()[:3].tolist()} vs {expected.flatten()[:3].tolist()}")


def to_side(module, device, stream, *tensors):
    """`tensors` (CPU) on the device, copied on the current stream, which `stream` (if another) then waits for."""
    placed = [t.to(device) for t in tensors]
    if stream != module.current_stream(device):
        stream.wait_stream(module.current_stream(device))
    return placed


def chain_bound(min_size=1, max_size=4):
    """The bound of a stored chain of ops (`cases.bounds`): what `op_chains` draws."""
    return Lists(OneOf(OPS), min_size, max_size)


def op_chains(min_size=1, max_size=4):
    return chain_bound(min_size, max_size).strategy()
