"""What a worker process (a spawned isolation worker, a fuzz worker) sets up before its first item, as the
run's own process did: the manifest's backend, the device's own setup (`DeviceSetup`), the suites, the harness's
threads."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch

from torchcts.engine import device_findings
from torchcts.engine.device_setup import DeviceSetup
from torchcts.engine.run import HARNESS_THREADS
from torchcts.manifest.load import import_backend
from torchcts.plan import registry


def prepare_worker(manifest: Any, device: str, device_setup: DeviceSetup | None = None) -> None:
    """Import `manifest`'s backend (None: no manifest), run `device_setup` (None: the device needs none), load the
    packaged suites and the manifest's custom ones, and use the harness's thread count.

    A backend that fails to import here kills only this worker; the run imported it already and said so.
    The run warned about a suite file that registers nothing, so workers stay quiet about it."""
    if manifest is not None and manifest.backend_import is not None:
        import_backend(manifest.backend_import, manifest.device_name)
    if device_setup is not None:
        device_setup.ready(device)
    device_findings.probe(device)  # the run's device findings, noted here too: this worker's records point at them
    folders = manifest.custom_test_dirs if manifest is not None else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", registry.RegistryWarning)
        registry.load(tuple(folder for folder in folders if Path(folder).is_dir()))
    torch.set_num_threads(HARNESS_THREADS)
