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
    Cases are built on CPU; a tensor on another device is deliberately foreign (an error input
    that mixes devices) and is put on a device other than `device`, so the mix survives.
    """
    mismatches: list[str] = []
    shared = _SharedStorages(_storages_used_twice(value))
    placed = _place(value, torch.device(device), "", mismatches, keep_on_cpu, shared)
    return Placement(placed, tuple(mismatches))


class _SharedStorages:
    """Tensors of one case that share a storage (an `out=` aliasing its input) share it on the
    device too: the whole storage is copied once and each tensor is rebuilt as a view of it."""

    def __init__(self, keys: set[tuple[int, torch.dtype]]):
        self.keys = keys
        self.copies: dict[tuple[int, torch.dtype, torch.device], torch.Tensor] = {}

    def view(self, t: torch.Tensor, device: torch.device) -> torch.Tensor | None:
        key = _storage_key(t)
        if key not in self.keys:
            return None
        if (*key, device) not in self.copies:
            whole = t.untyped_storage().nbytes() // t.element_size()
            self.copies[(*key, device)] = torch.as_strided(t.detach(), (whole,), (1,), 0).to(device, copy=True)
        view = self.copies[(*key, device)].as_strided(t.shape, t.stride(), t.storage_offset())
        return view.requires_grad_(t.requires_grad) if t.is_floating_point() or t.is_complex() else view


def _storage_key(t: torch.Tensor) -> tuple[int, torch.dtype]:
    return (t.untyped_storage().data_ptr(), t.dtype)


def _storages_used_twice(value: Any) -> set[tuple[int, torch.dtype]]:
    seen: set[tuple[int, torch.dtype]] = set()
    twice: set[tuple[int, torch.dtype]] = set()
    for t in _dense_cpu_tensors(value):
        key = _storage_key(t)
        (twice if key in seen else seen).add(key)
    return twice


def _dense_cpu_tensors(value: Any):
    if isinstance(value, torch.Tensor):
        if value.device.type == "cpu" and value.layout == torch.strided and not value.is_nested \
                and value.untyped_storage().nbytes():
            yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _dense_cpu_tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _dense_cpu_tensors(v)
    elif hasattr(value, "input") and hasattr(value, "args") and hasattr(value, "kwargs"):
        yield from _dense_cpu_tensors([value.input, value.args, value.kwargs])


def _place(value: Any, device: torch.device, where: str, mismatches: list[str], keep: frozenset[str],
           shared: _SharedStorages) -> Any:
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            return _foreign(value, device)
        target = torch.device("cpu") if where in keep else device
        return _place_tensor(value, target, where or "tensor", mismatches, shared)
    if isinstance(value, (list, tuple)):
        items = [_place(v, device, f"{where}[{i}]", mismatches, keep, shared) for i, v in enumerate(value)]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {k: device if k == "device" and _names_a_device(v) else
                _place(v, device, f"{where}.{k}" if where else str(k), mismatches, keep, shared) for k, v in value.items()}
    if hasattr(value, "input") and hasattr(value, "args") and hasattr(value, "kwargs") and hasattr(value, "transform"):
        from torch.testing._internal.opinfo.core import SampleInput

        placed = SampleInput(
            _place(value.input, device, "input", mismatches, keep, shared),
            args=tuple(_place(a, device, f"args[{i}]", mismatches, keep, shared) for i, a in enumerate(value.args)),
            kwargs={k: _place(v, device, f"kwargs.{k}", mismatches, keep, shared) if k != "device" else v
                    for k, v in value.kwargs.items()},
            output_process_fn_grad=value.output_process_fn_grad,
            broadcasts_input=value.broadcasts_input,
            name=value.name,
        )
        if _names_a_device(placed.kwargs.get("device")):  # factory samples name their device
            placed.kwargs["device"] = device
        return placed
    return value


def _foreign(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """The same metadata on a device other than `device` (meta, or CPU when `device` is meta)."""
    other = torch.device("cpu" if device.type == "meta" else "meta")
    if t.device == other:
        return t
    return torch.zeros_like(t, device=other) if t.device.type == "meta" else t.to(other)


def _names_a_device(value: Any) -> bool:
    return isinstance(value, torch.device) or (isinstance(value, str) and value.split(":")[0].isidentifier())


def _place_tensor(t: torch.Tensor, device: torch.device, where: str, mismatches: list[str],
                  shared: _SharedStorages) -> torch.Tensor:
    if t.layout != torch.strided or t.is_nested:
        moved = t.to(device)
        if moved.layout != t.layout or moved.shape != t.shape:
            mismatches.append(f"{where}: device copy has layout {moved.layout} shape {tuple(moved.shape)}, "
                              f"expected {t.layout} {tuple(t.shape)}")
        return moved
    moved = shared.view(t, device)
    if moved is None:
        moved = copy_exact(t, device)
    expected = (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)
    got = (tuple(moved.shape), moved.stride(), moved.storage_offset(), moved.dtype)
    if got != expected:
        mismatches.append(f"{where}: device reports sizes/strides/offset/dtype {got}, CPU case has {expected}")
    return moved
