"""Between items the engine empties the device's cache when its reserved memory passes `cleanup_threshold_pct`."""

from __future__ import annotations

import attrs
import torch

from torchcts.engine.memory_cleanup import cleanup_if_needed
from torchcts.manifest.model import ResourceLimits
from torchcts.testing import faulty  # noqa: F401 - registers the device


@attrs.frozen
class _Manifest:
    resource_limits: ResourceLimits


def _cached_mib(mib: int) -> None:
    held = torch.empty(mib * 2**18, device="faulty")  # float32: mib MiB, freed on return but still reserved
    assert torch.faulty.memory_reserved() >= held.numel() * 4


def test_the_cache_is_emptied_at_the_threshold_and_kept_below_it():
    torch.faulty.empty_cache()
    _cached_mib(8)
    reserved = torch.faulty.memory_reserved()
    below = _Manifest(ResourceLimits(max_device_memory_mb=reserved / 2**20 * 2, cleanup_threshold_pct=80))
    assert not cleanup_if_needed("faulty", below) and torch.faulty.memory_reserved() == reserved
    above = _Manifest(ResourceLimits(max_device_memory_mb=reserved / 2**20 * 1.1, cleanup_threshold_pct=80))
    assert cleanup_if_needed("faulty", above)
    assert torch.faulty.memory_reserved() == torch.faulty.memory_allocated() < reserved


def test_devices_without_memory_statistics_are_left_alone():
    limits = _Manifest(ResourceLimits(max_device_memory_mb=1, cleanup_threshold_pct=1))
    assert not cleanup_if_needed("cpu", limits) and not cleanup_if_needed("meta", limits)
