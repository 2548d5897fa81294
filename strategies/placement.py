"""Put a CPU case on the device under test without changing how it sits in memory.

A device copy made with `.to(device)` may come back contiguous; conformance needs the device to
see exactly the strides and storage offset the case was built with. `place` copies the reachable
storage and rebuilds the same view on the device, then checks what the device reports.
"""

from __future__ import annotations

from typing import Any

import attrs
import torch

from torchcts.strategies.fingerprint import reachable_storage


@attrs.frozen
class Placement:
    """A value moved to a device, with every way the device copy differs from the CPU layout."""

    value: Any
    mismatches: tuple[str, ...] = ()

    @property
    def faithful(self) -> bool:
        return not self.mismatches


def copy_exact(t: torch.Tensor, device: torch.device | str | None = None) -> torch.Tensor:
    """A copy of a strided tensor with the same sizes, strides, storage offset and (reachable) storage."""
    device = t.device if device is None else torch.device(device)
    flat = reachable_storage(t.detach())
    base = flat.to(device=device, copy=True)
    copy = base.as_strided(t.shape, t.stride(), t.storage_offset())
    return copy.requires_grad_(t.requires_grad) if t.is_floating_point() or t.is_complex() else copy


def place(value: Any, device: torch.device | str, keep_on_cpu: frozenset[str] = frozenset()) -> Placement:
    """Copy tensors (also inside lists, tuples, dicts and SampleInputs) to `device`, checking layouts.

    A `device` keyword (a factory op's sample names the device to create on) is set to `device`.
    Tensors at the paths in `keep_on_cpu` ("input", "args[1]", "kwargs.indices", "args[0][2]")
    are copied but stay on CPU: some ops take an argument on CPU whatever the device
    (`tensor_split`'s indices; see `samples.cpu_pinned_paths`).
    """
    mismatches: list[str] = []
    placed = _place(value, torch.device(device), "", mismatches, keep_on_cpu)
    return Placement(placed, tuple(mismatches))


def _place(value: Any, device: torch.device, where: str, mismatches: list[str], keep: frozenset[str]) -> Any:
    if isinstance(value, torch.Tensor):
        target = torch.device("cpu") if where in keep else device
        return _place_tensor(value, target, where or "tensor", mismatches)
    if isinstance(value, (list, tuple)):
        items = [_place(v, device, f"{where}[{i}]", mismatches, keep) for i, v in enumerate(value)]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {k: device if k == "device" and _names_a_device(v) else
                _place(v, device, f"{where}.{k}" if where else str(k), mismatches, keep) for k, v in value.items()}
    if hasattr(value, "input") and hasattr(value, "args") and hasattr(value, "kwargs") and hasattr(value, "transform"):
        from torch.testing._internal.opinfo.core import SampleInput

        placed = SampleInput(
            _place(value.input, device, "input", mismatches, keep),
            args=tuple(_place(a, device, f"args[{i}]", mismatches, keep) for i, a in enumerate(value.args)),
            kwargs={k: _place(v, device, f"kwargs.{k}", mismatches, keep) if k != "device" else v
                    for k, v in value.kwargs.items()},
            output_process_fn_grad=value.output_process_fn_grad,
            broadcasts_input=value.broadcasts_input,
            name=value.name,
        )
        if _names_a_device(placed.kwargs.get("device")):  # factory samples name their device
            placed.kwargs["device"] = device
        return placed
    return value


def _names_a_device(value: Any) -> bool:
    return isinstance(value, torch.device) or (isinstance(value, str) and value.split(":")[0].isidentifier())


def _place_tensor(t: torch.Tensor, device: torch.device, where: str, mismatches: list[str]) -> torch.Tensor:
    if t.layout != torch.strided or t.is_nested:
        moved = t.to(device)
        if moved.layout != t.layout or moved.shape != t.shape:
            mismatches.append(f"{where}: device copy has layout {moved.layout} shape {tuple(moved.shape)}, "
                              f"expected {t.layout} {tuple(t.shape)}")
        return moved
    moved = copy_exact(t, device)
    expected = (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)
    got = (tuple(moved.shape), moved.stride(), moved.storage_offset(), moved.dtype)
    if got != expected:
        mismatches.append(f"{where}: device reports sizes/strides/offset/dtype {got}, CPU case has {expected}")
    return moved
