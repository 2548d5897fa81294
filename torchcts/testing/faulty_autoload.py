"""When the faulty device registers: only when asked, so PrivateUse1 stays free for a user's backend.

The device takes PyTorch's single PrivateUse1 slot, so nothing registers it behind a user's back.
Three ways ask for it:
- `--device faulty` (torchcts run, fuzz, replay, selftest and the pytest plugin): the command calls
  `enable_for_device(device)` before it first uses the device, and a fuzz worker does the same;
- `TORCHCTS_FAULTY=1` in the environment: `autoload()`, the `torch.backends` entry point that
  plugins/faulty-autoload installs in the development environment, registers it when torch is
  imported, in any process (a subprocess, an exported script, a plain `python -c`);
- importing `torchcts.testing.faulty` (or any of its modules): the package registers it.

Nothing here imports torch or the device at module level: the entry point runs inside `import torch`,
and `enable_for_device` is cheap for every other device.
"""

from __future__ import annotations

import os
import sys
import warnings

ENV_SWITCH = "TORCHCTS_FAULTY"
DEVICE_NAME = "faulty"  # the same as torchcts.testing.faulty.DEVICE_NAME (which imports torch)


def requested_by_environment() -> bool:
    """TORCHCTS_FAULTY=1: every torch process of this environment registers the device."""
    return os.environ.get(ENV_SWITCH) == "1"


def names_faulty(device: str | None) -> bool:
    """Whether a device string names the faulty device (`faulty`, `faulty:0`)."""
    return device is not None and device.strip().split(":", 1)[0] == DEVICE_NAME


def enable_for_device(device: str | None) -> None:
    """Register the faulty device when `device` names it; RuntimeError when PrivateUse1 is another
    backend's, ValueError naming TORCHCTS_FAULTY_BUGS when it names an unknown bug. Any other device:
    nothing happens, nothing is imported."""
    if not names_faulty(device):
        return
    try:
        from torchcts.testing import faulty  # importing the package registers the device

        faulty.enable()  # once per process: nothing more when the import registered it
    except ValueError as exc:  # the only ValueError of registering: a bug name the device does not know
        raise ValueError(f"TORCHCTS_FAULTY_BUGS: {exc}") from None


def worker_environment(device: str | None) -> dict[str, str]:
    """What a worker process's environment adds for `device` (`engine.worker_process.DeviceSetup`): the bugs this
    process's faulty device has switched on (a test may switch them by hand), so the worker's device has them too;
    nothing for another device or before the device was imported."""
    module = sys.modules.get("torchcts.testing.faulty.bugs")
    if module is None or not names_faulty(device):
        return {}
    return {"TORCHCTS_FAULTY_BUGS": ",".join(module.active_bugs())}


def autoload() -> None:
    """The `torch.backends` entry point: register the device when TORCHCTS_FAULTY=1, else nothing.
    Never lets an error escape into `import torch`."""
    if not requested_by_environment():
        return
    package = sys.modules.get("torchcts.testing.faulty")
    if package is not None and not getattr(package, "_ready", False):
        return  # torchcts.testing.faulty is mid-import (it imported torch); it registers the device when done
    try:
        # the device registers only when TORCHCTS_FAULTY=1: this entry point runs in every `import torch`
        from torchcts.testing import faulty

        faulty.enable()
    except Exception as exc:  # noqa: BLE001 - import torch must survive whatever happens here
        warnings.warn(f"torchcts: {ENV_SWITCH}=1 but the faulty device was not registered: {exc}", RuntimeWarning,
                      stacklevel=2)
