"""The per-dtype probe: can the device hold this dtype at all?

Four elements, five steps, each compared bit for bit with the CPU: allocate on the device, copy a
CPU tensor to the device, copy it back, fill a device tensor, and one elementwise op (`x * x`, the
one op the CPU implements for every claimable dtype, float8 and the unsigned ones included). The
first step that raises or differs is the finding: "bfloat16: copy to device fails: ...".
"""

from __future__ import annotations

import torch

from torchcts.probe.result import Steps

ELEMENTS = 4  # bounded: a probe never asks the device for more than a few bytes


def cpu_values(dtype: torch.dtype) -> torch.Tensor:
    """The probe's CPU tensor: 0, 1, 2, 3 in `dtype` (small integers every claimable dtype holds)."""
    return torch.arange(ELEMENTS).to(dtype)


def probe_dtype(device: str, dtype: torch.dtype, steps: Steps) -> None:
    """Raise `StepFailed` at the first step `device` gets wrong for `dtype`; return when every step matches the CPU."""
    source = cpu_values(dtype)
    empty = steps.run("allocate", lambda: torch.empty(ELEMENTS, dtype=dtype, device=device))
    steps.expect("allocate", empty.dtype == dtype and empty.device.type == torch.device(device).type,
                 f"got a {empty.dtype} tensor on {empty.device}")
    on_device = steps.run("copy to device", lambda: source.to(device))
    steps.same("copy to CPU", on_device, source)
    filled = steps.run("fill", lambda: torch.empty(ELEMENTS, dtype=dtype, device=device).fill_(1))
    steps.same("fill", filled, torch.ones(ELEMENTS).to(dtype))
    steps.same("elementwise op (mul)", steps.run("elementwise op (mul)", lambda: on_device * on_device),
               source * source)
