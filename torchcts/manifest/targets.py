"""The manifests TorchCTS ships for real targets, and which one a command uses when it is given none.

`manifests/targets/<name>.py` (installed as `torchcts.manifests`, folder `targets/`) holds reviewed claims
for cpu (validation), meta, cpu under `torch.compile` (inductor, aot_eager, and openvino: a third-party backend
whose package is never a TorchCTS dependency), cuda, mps and xpu. A command
that takes `--manifest` uses, in order: the file given, `./manifest.py` when it exists, else the shipped
manifest of the target `--device D [--compile B]` names. Nothing here imports torch: the device type is
read from the device string (`cuda:1` -> `cuda`), which is all a shipped target is keyed by.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import attrs

LOCAL_MANIFEST = Path("manifest.py")


@attrs.frozen
class ShippedTarget:
    """A shipped manifest: its file stem, the device type and compile backend it was reviewed for."""

    name: str
    device_type: str
    compile_backend: str | None = None
    validation: bool = False  # also picked by `run --validation` (CPU against its own oracle)
    package: str | None = None  # what `pip install` needs for its backend_import: a third-party backend's package

    @property
    def path(self) -> Path:
        """The manifest file (a real file: the package is installed from a folder, never a zip)."""
        return Path(str(resources.files("torchcts.manifests").joinpath("targets", f"{self.name}.py")))

    def flags(self) -> str:
        """The command-line flags that pick this target: `--device meta`, `--device cpu --compile inductor`."""
        flags = f"--device {self.device_type}" + (f" --compile {self.compile_backend}" if self.compile_backend else "")
        return f"{flags} or --validation" if self.validation else flags


TARGETS: tuple[ShippedTarget, ...] = (
    ShippedTarget("cpu", "cpu", validation=True),
    ShippedTarget("meta", "meta"),
    ShippedTarget("inductor", "cpu", "inductor"),
    ShippedTarget("aot_eager", "cpu", "aot_eager"),
    ShippedTarget("openvino", "cpu", "openvino", package="openvino"),
    ShippedTarget("cuda", "cuda"),
    ShippedTarget("mps", "mps"),
    ShippedTarget("xpu", "xpu"),
)


class NoShippedTarget(Exception):
    """No --manifest, no ./manifest.py and no shipped manifest for the device: the message lists the targets."""


def device_type(device: str) -> str:
    """The device type of a device string, without importing torch: `cuda:1` -> `cuda`."""
    return device.strip().split(":", 1)[0].lower()


def shipped_target(device: str | None, compile_backend: str | None = None) -> ShippedTarget | None:
    """The shipped target for `--device` and `--compile`, or None (always None without a device)."""
    if device is None:
        return None
    kind = device_type(device)
    return next((t for t in TARGETS if t.device_type == kind and t.compile_backend == compile_backend), None)


def install_hint(module: str) -> str | None:
    """`pip install P` for a module a shipped target's backend_import needs (its top-level name), else None."""
    top = module.split(".")[0]
    return next((f"pip install {t.package}" for t in TARGETS if t.package is not None and t.package == top), None)


def targets_line() -> str:
    """The shipped targets as one line, for errors and help."""
    return "; ".join(f"{t.name} ({t.flags()})" for t in TARGETS)


def resolve_manifest(given: Path | None, device: str | None, compile_backend: str | None = None,
                     required: bool = True) -> tuple[Path | None, ShippedTarget | None]:
    """(the manifest a command uses, the shipped target it came from or None).

    `given` (--manifest) wins, then ./manifest.py, then the shipped target of (device, compile_backend).
    With none of them: NoShippedTarget when `required`, else (None, None) (replay needs no claims)."""
    if given is not None:
        return given, None
    if LOCAL_MANIFEST.exists():
        return LOCAL_MANIFEST, None
    target = shipped_target(device, compile_backend)
    if target is not None:
        return target.path, target
    if not required:
        return None, None
    if device is None:
        why = "or pass --device D to use a manifest TorchCTS ships"
    else:
        why = f"TorchCTS ships none for --device {device}"
        why += f" --compile {compile_backend}" if compile_backend else ""
    raise NoShippedTarget(f"{LOCAL_MANIFEST.resolve()}: manifest file not found (create one with `torchcts init` "
                          f"or pass --manifest; {why}); shipped targets: {targets_line()}")


def used_line(target: ShippedTarget) -> str:
    """What a command prints (on stderr) when it uses a shipped manifest."""
    return (f"torchcts: no --manifest and no ./manifest.py: using the shipped {target.name} target manifest "
            f"{target.path}")
