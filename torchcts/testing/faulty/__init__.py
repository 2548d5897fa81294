"""The `faulty` device: a PyTorch backend with seeded bugs, for proving that suites catch bugs.

`enable()` registers the device (PrivateUse1 renamed to `faulty`): tensors with
`device="faulty"` then behave like a real device's, computing on CPU through one generic path,
exactly as CPU does until seeded bugs are switched on (`enable_bugs("tile_sum")`, or the
TORCHCTS_FAULTY_BUGS environment variable). `BUGS` lists every bug: the aten overloads it
affects, the condition it needs, what it does. docs/faulty-backend.md explains its use.
"""

from __future__ import annotations

from torchcts.testing.faulty.bugs import BUGS, ENV_VAR, Bug, active_bugs, disable_bugs, enable_bugs
from torchcts.testing.faulty.device import DEVICE_NAME, FaultyTensor, is_registered, start_trace, take_trace

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
    "start_trace",
    "take_trace",
]


def enable() -> None:
    """Register the faulty device (once per process) and switch on the bugs TORCHCTS_FAULTY_BUGS names."""
    from torchcts.testing.faulty import bugs, device

    if not device.is_registered():
        bugs.load_from_environment()
    device.register()


_ready = True  # the package is fully imported (see torchcts.testing.faulty_autoload)

from torchcts.testing import faulty_autoload as _autoload  # noqa: E402

if _autoload.requested:  # torch's autoload ran while this package was importing torch
    enable()
