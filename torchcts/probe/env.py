"""What a capability probe runs with: the device, a small float dtype the manifest claims, the step runner and
the manifest, and the comparisons with the CPU every probe shares (`agree`, `close`)."""

from __future__ import annotations

from typing import Any, Callable

import attrs
import torch

from torchcts.probe.result import StepFailed, Steps, difference


@attrs.frozen
class ProbeEnv:
    """One probe's device, value dtype, steps and manifest."""

    device: str
    dtype: torch.dtype  # the float dtype value checks use
    steps: Steps
    manifest: Any = None

    @property
    def device_type(self) -> str:
        return torch.device(self.device).type

    def values(self, *items: float, dtype: torch.dtype | None = None) -> torch.Tensor:
        return torch.tensor(items or (0.5, 1.0, 1.5, 2.0), dtype=dtype or self.dtype)

    def to_device(self, tensor: torch.Tensor, step: str = "copy to device") -> torch.Tensor:
        return self.steps.run(step, lambda: tensor.to(self.device))

    def agree(self, step: str, fn: Callable[..., Any], *cpu_inputs: torch.Tensor) -> Any:
        """Run `fn` on the CPU inputs and on device copies of them; fail `step` unless the results are close.
        The device result."""
        expected = self.steps.run(f"{step} on CPU", lambda: fn(*cpu_inputs))
        device_inputs = [self.to_device(t) for t in cpu_inputs]
        got = self.steps.run(step, lambda: fn(*device_inputs))
        self.close(step, got, expected)
        return got

    def close(self, step: str, got: Any, expected: torch.Tensor) -> None:
        """Fail `step` unless device result `got` is close to `expected` (NaN matches NaN, -0.0 only -0.0)."""
        got = self.steps.run(step, lambda: got.detach().cpu())
        if got.shape != expected.shape:
            raise StepFailed(step, f"got shape {tuple(got.shape)}, expected {tuple(expected.shape)}")
        wide = torch.complex128 if expected.is_complex() or got.is_complex() else torch.float64
        a, b = got.to(wide), expected.detach().to(wide)
        loose = 1e-2 if torch.finfo(self.dtype).bits <= 16 else 1e-4
        zeros = b == 0
        signs_agree = wide == torch.complex128 or torch.equal(torch.signbit(a[zeros]), torch.signbit(b[zeros]))
        if not (signs_agree and torch.allclose(a, b, rtol=loose, atol=loose, equal_nan=True)):
            raise StepFailed(step, difference(a, b) or "values differ")
