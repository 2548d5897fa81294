"""The claims a replay runs with when it is given no manifest: the case's own, and the device count reported.

`torchcts replay` needs no manifest (docs/corpus.md): a stored case holds what its check runs on. Suites still
read a manifest while they run (a runtime suite's device count, a memory budget, the autocast policy), so a
replayed case without one runs with this neutral manifest instead of None: it claims no dtype, has every schema
default, counts the devices the device's runtime module reports, and claims one capability: the one the case's
property tests, when the case is replayed on the device type it was found on (the case was found because that
device claimed it: a facility gone since is a failure, a regression for a fixed case, never "not run"). Replayed on
another device type it claims none (a facility that device lacks is `runtime_unavailable`: nothing claimed it).
A --manifest replaces all of this: what it declares is claimed, nothing else.
"""

from __future__ import annotations

from typing import Any

import attrs
import torch

from torchcts.manifest.model import Manifest
from torchcts.manifest.parse import validate
from torchcts.plan import registry

MAX_DEVICES = 64  # a runtime reporting more (or something that is no count) is taken at 1


def replay_manifest(device_type: str, capability: str | None = None) -> Manifest:
    """The neutral manifest of a replay on `device_type` without --manifest, claiming `capability` (if any)."""
    raw = {"manifest_version": 1, "device_name": device_type, "supported_dtypes": {}, "capabilities": {},
           "device_count": reported_device_count(device_type)}
    manifest, _ = validate(raw)
    if manifest is None:  # a device type the manifest schema does not take as a device_name
        manifest, _ = validate(dict(raw, device_name="auto"))
    assert manifest is not None, "the neutral replay manifest must be valid"
    return attrs.evolve(manifest, capabilities=frozenset({capability})) if capability else manifest


def own_capability(case: Any, device_type: str) -> str | None:
    """The capability a replay without --manifest claims for `case` on `device_type`: its property's, where the case
    names this device type; None elsewhere (or for a property no longer registered)."""
    if str(case.device_type).partition(":")[0] != device_type.partition(":")[0]:
        return None
    try:
        return registry.get(case.property).capability
    except registry.RegistryError:
        return None


def reported_device_count(device_type: str) -> int:
    """`torch.<device_type>.device_count()`, or 1 where there is no such module or it gives no usable count."""
    count = getattr(getattr(torch, device_type, None), "device_count", None)
    try:
        value = count() if callable(count) else 1
    except Exception:  # noqa: BLE001 - the backend's runtime is the one under test: its failure is found by the suites
        return 1
    return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_DEVICES else 1
