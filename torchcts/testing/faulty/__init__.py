"""The `faulty` device: a PyTorch backend with seeded bugs, for proving that suites catch bugs.

`enable()` registers the device (PrivateUse1 renamed to `faulty`): tensors with
`device="faulty"` then behave like a real device's, computing on CPU through one generic path,
exactly as CPU does until seeded bugs are switched on (`enable_bugs("tile_sum")`, or the
TORCHCTS_FAULTY_BUGS environment variable). `BUGS` lists every bug: the aten overloads it
affects, the condition it needs, what it does. docs/faulty-backend.md explains its use.
"""

from __future__ import annotations

from torchcts.testing.faulty.bugs import BUGS, ENV_VAR, Bug, active_bugs, disable_bugs, enable_bugs
from torchcts.testing.faulty.device import DEVICE_NAME, FaultyTensor, is_registered

__all__ = [
    "BUGS",
    "DEVICE_NAME",
    "ENV_VAR",
    "Bug",
    "FaultyTensor",
    "active_bugs",
    "disable_bugs",
    "enable",
    "enable_bugs",
    "is_registered",
]


def enable() -> None:
    """Register the faulty device (once per process) and switch on the bugs TORCHCTS_FAULTY_BUGS names."""
    from torchcts.testing.faulty import bugs, device

    if not device.is_registered():
        bugs.load_from_environment()
    device.register()


def autoload() -> None:
    """torch.backends entry point: called by `import torch` when device-backend autoload is on.

    Never lets an error escape into `import torch`: it becomes a warning.
    """
    import warnings

    try:
        enable()
    except Exception as exc:  # noqa: BLE001 - import torch must survive whatever happens here
        warnings.warn(f"torchcts: the faulty device was not registered: {exc}", RuntimeWarning, stacklevel=2)
