"""The claims a replay runs with when it is given no manifest: none, and the device count the device reports.

`torchcts replay` needs no manifest (docs/corpus.md): a stored case holds what its check runs on. Suites still
read a manifest while they run (a runtime suite's device count, a memory budget, the autocast policy), so a
replayed case without one runs with this neutral manifest instead of None: it claims no dtype and no capability
(a facility the device lacks is then `runtime_unavailable`, not a finding: nothing claimed it), has every schema
default, and counts the devices the device's runtime module reports (a multi-device case replays where the
device has two).
"""

from __future__ import annotations

import torch

from torchcts.manifest.model import Manifest
from torchcts.manifest.parse import validate

MAX_DEVICES = 64  # a runtime reporting more (or something that is no count) is taken at 1


def replay_manifest(device_type: str) -> Manifest:
    """The neutral manifest of a replay on `device_type` without --manifest."""
    raw = {"manifest_version": 1, "device_name": device_type, "supported_dtypes": {}, "capabilities": {},
           "device_count": reported_device_count(device_type)}
    manifest, _ = validate(raw)
    if manifest is None:  # a device type the manifest schema does not take as a device_name
        manifest, _ = validate(dict(raw, device_name="auto"))
    assert manifest is not None, "the neutral replay manifest must be valid"
    return manifest


def reported_device_count(device_type: str) -> int:
    """`torch.<device_type>.device_count()`, or 1 where there is no such module or it gives no usable count."""
    count = getattr(getattr(torch, device_type, None), "device_count", None)
    try:
        value = count() if callable(count) else 1
    except Exception:  # noqa: BLE001 - the backend's runtime is the one under test: its failure is found by the suites
        return 1
    return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_DEVICES else 1
