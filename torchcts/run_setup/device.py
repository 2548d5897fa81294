"""The device and the compile target a run tests: parsed, checked by allocating on them, their findings probed.

The CLI's own device checks (fuzz, path-shapes, init --probe) use these too, without the pytest plugin.
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from torchcts import backend_exits
from torchcts.arguments import shown
from torchcts.engine import device_findings
from torchcts.engine.compile_target import UnknownCompileBackend, check_backend, check_settings, run_compile_spec
from torchcts.engine.targets import Target
from torchcts.engine.device_setup import DeviceSetup
from torchcts.manifest import Manifest
from torchcts.run_setup.errors import SessionError
from torchcts.testing.faulty_autoload import enable_for_device, names_faulty, worker_environment


def worker_device_setup(device: str) -> DeviceSetup | None:
    """How a worker process (spawned, fuzz) readies `device` as the run's process did: the faulty device registers
    itself there, with the bugs the run has switched on; any other device needs nothing (its backend comes from the
    manifest's `backend_import`)."""
    return DeviceSetup.of(enable_for_device, worker_environment) if names_faulty(device) else None


def device_kind(name: str) -> str:
    """The device type a device string names; PrivateUse1 under its registered name (`faulty`, not `privateuseone`)."""
    try:
        return torch.device(name).type
    except (RuntimeError, ValueError, TypeError):  # a backend not imported here: its name as written
        kind = name.split(":", 1)[0]
        return torch._C._get_privateuse1_backend_name() if kind in ("privateuseone", "privateuse1") else kind


def device_name_warning(manifest: Manifest | None, device: str, validation: bool) -> str | None:
    """A warning when the manifest names another device type than --device (a validation run ignores it)."""
    if manifest is None or validation or manifest.device_name == "auto":
        return None
    if device_kind(manifest.device_name) == device_kind(device):
        return None
    return (f"{manifest.source}: device_name is {manifest.device_name!r} but this run tests --device {device}: "
            f"its claims may be another backend's")


def start_checks(device: str) -> tuple[Any, ...]:
    """`check_device`, then the device's findings (`device_findings.probe`: a defect of the whole device, such as no
    index, said once). Both run backend code (its allocator, its copies): under `backend_exits.guard()`, so a backend
    that calls sys.exit or os._exit, or signals its own process, is one SessionError naming where, not a silent end."""
    try:
        with backend_exits.guard():
            check_device(device)
            return device_findings.probe(device)
    except BaseException as exc:
        if isinstance(exc, Exception):
            raise  # a SessionError already
        if not backend_exits.is_backend_exit(exc):
            raise backend_exits.users_stop(exc)  # the user's Ctrl-C
        raise SessionError(f"--device {shown(device)}: the backend ended TorchCTS's device check: "
                           f"{backend_exits.describe(exc)}") from None


def check_device(device: str) -> None:
    """`device` parses, and this Python environment can allocate on exactly that device (index included).
    `faulty` registers the test device first: naming it is asking for it (`torchcts.testing.faulty_autoload`)."""
    try:
        enable_for_device(device)
    except (RuntimeError, ValueError) as exc:  # PrivateUse1 is another backend's; an unknown TORCHCTS_FAULTY_BUGS name
        raise SessionError(f"--device {shown(device)}: {first_line(exc, limit=600)}") from None
    try:
        wanted = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise SessionError(f"--device {shown(device)} is not a device string torch knows: {first_line(exc)}") from None
    try:
        got = torch.empty(1, device=device).device
    except Exception as exc:  # noqa: BLE001 - whatever the backend raises, the device is not usable
        raise SessionError(f"--device {shown(device)} is not available in this Python environment ({sys.executable}): "
                           f"{type(exc).__name__}: {first_line(exc)}") from None
    if wanted.index is not None and (got.index or 0) != wanted.index:
        raise SessionError(f"--device {shown(device)}: {wanted.type} has no device {wanted.index} here (a tensor "
                           f"asked for on it landed on {got}); use an index below the device count")


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, cut short: CUDA and dispatcher errors run to paragraphs."""
    lines = str(exc).strip().splitlines()
    line = lines[0] if lines else type(exc).__name__
    return line if len(line) <= limit else line[:limit - 3] + "..."


def run_target(device: str, manifest: Manifest | None, backend: str | None, shape_mode: str | None) -> Target:
    """The device, behind the compile target --compile, --shape-mode and the manifest's `compile` section make
    (`compile_target.run_compile_spec`); a backend torch._dynamo does not know (after backend_import) is a
    SessionError that lists the ones it knows."""
    spec = run_compile_spec(manifest.compile if manifest is not None else None, backend, shape_mode)
    if spec is None:
        if shape_mode is not None:
            raise SessionError(f"--shape-mode {shape_mode} needs a compile target: --compile B, or the manifest's "
                               "compile.backend")
        return Target(device)
    try:
        check_backend(spec.backend)
        check_settings(spec)
    except UnknownCompileBackend as exc:
        raise SessionError(str(exc)) from None
    return Target(device, spec)
