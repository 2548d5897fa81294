"""Between items, free the device's cached memory when its use passes the manifest's `cleanup_threshold_pct`.

A caching allocator keeps what earlier items freed; on a long run that cache can starve a later item
that needs a large block. After each item, where the device's runtime module reports memory
(`memory_reserved`) and a capacity (`resource_limits.max_device_memory_mb`, else
`get_device_properties(i).total_memory`), a use at or above the threshold (percent of the capacity)
triggers a garbage collection and `empty_cache()`. Devices without memory statistics (CPU, meta) are
left alone. Any error while asking is ignored: cleanup is housekeeping, never a finding.
"""

from __future__ import annotations

import gc
from typing import Any

import torch

MIB = 2**20


def capacity_bytes(module: Any, manifest: Any) -> int | None:
    """The memory the harness measures use against: the manifest's limit, else what the device says it has."""
    limit = manifest.resource_limits.max_device_memory_mb if manifest is not None else None
    if limit:
        return int(limit * MIB)
    properties = getattr(module, "get_device_properties", None)
    total = getattr(properties(), "total_memory", None) if properties is not None else None
    return int(total) if total else None


def cleanup_if_needed(device_type: str, manifest: Any) -> bool:
    """Collect garbage and empty the device's cache when its reserved memory is at or above the threshold;
    whether it did."""
    module = getattr(torch, device_type, None)
    if device_type in ("cpu", "meta") or not hasattr(module, "memory_reserved") or not hasattr(module, "empty_cache"):
        return False
    try:
        capacity = capacity_bytes(module, manifest)
        if not capacity:
            return False
        threshold = manifest.resource_limits.cleanup_threshold_pct if manifest is not None else 80
        if module.memory_reserved() * 100 < threshold * capacity:
            return False
        gc.collect()
        module.empty_cache()
        return True
    except Exception:  # noqa: BLE001 - housekeeping: a device that cannot say is left alone
        return False
