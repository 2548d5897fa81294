"""The `faulty` device: a PyTorch backend with seeded bugs, for proving that suites catch bugs.

Importing this package (or any of its modules) registers the device (PrivateUse1 renamed to
`faulty`), and only that does: TorchCTS registers it for `--device faulty`, the development
environment's autoload entry point for TORCHCTS_FAULTY=1 (`torchcts.testing.faulty_autoload`).
Tensors with `device="faulty"` then behave like a real device's, computing on CPU through one
generic path, exactly as CPU does until seeded bugs are switched on (`enable_bugs("tile_sum")`, or
the TORCHCTS_FAULTY_BUGS environment variable). `BUGS` lists every bug: the aten overloads it
affects, the condition it needs, what it does. docs/faulty-backend.md explains its use.
"""

from __future__ import annotations

from torchcts.engine import device_ops_trace
from torchcts.testing.faulty import bugs, device
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
    if not device.is_registered():
        bugs.load_from_environment()
    device.register()
    device_ops_trace.provide(start_trace, take_trace)  # the engine records each traced item's device ops


_ready = True  # the package is fully imported (torchcts.testing.faulty_autoload waits for this)

enable()  # importing the device is asking for it; RuntimeError when PrivateUse1 is another backend's
