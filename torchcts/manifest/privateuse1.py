"""Who holds PrivateUse1, for an error that names the cause when a backend cannot register it.

PyTorch has one PrivateUse1 slot per process, renamed once. At `import torch` every installed
package's `torch.backends` entry point runs (torch/__init__.py `_import_device_backends`, unless
TORCH_DEVICE_BACKEND_AUTOLOAD is not "1"), so an unrelated package that registers its device there
takes the slot before a manifest's `backend_import` runs, and the backend fails with torch's
"torch.register_privateuse1_backend() has already been set! Current backend: X", which names
neither the package nor the way out. `explain` says both: the entry point that holds it, its
package, and TORCH_DEVICE_BACKEND_AUTOLOAD=0 for the run.

Torch does not record which entry point renamed PrivateUse1: `find_taker` replays them one by one in
a fresh interpreter (only for an error's message); where it cannot tell, one whose name, module or
package contains the holder's name is named, else every entry point that ran is listed. Entry-point
metadata comes from installed packages: shown bounded. No torch import here: the slot is read only
where torch is imported already.
"""

from __future__ import annotations

import os
import sys

import attrs

AUTOLOAD_ENV = "TORCH_DEVICE_BACKEND_AUTOLOAD"
GROUP = "torch.backends"
UNRENAMED = "privateuseone"  # PrivateUse1's name until a backend renames it
FAULTY_ENV = "TORCHCTS_FAULTY"  # torchcts.testing.faulty_autoload's switch (that module imports nothing heavy)
MAX_LISTED = 5
MAX_TEXT = 100
AT_IMPORT, NOT_AT_IMPORT = "at import", "not at import"  # `find_taker`'s answers other than an entry point
FIND_TIMEOUT_S = 60.0


@attrs.frozen
class AutoloadEntryPoint:
    """A `torch.backends` entry point as installed: `name = value` of `package` `version`."""

    name: str
    value: str
    package: str | None
    version: str | None

    def describe(self) -> str:
        where = f" of package {self.package}" + (f" {self.version}" if self.version else "") if self.package else ""
        return f"'{self.name} = {self.value}'{where}"

    def mentions(self, holder: str) -> bool:
        wanted = _normal(holder)
        return bool(wanted) and any(wanted in _normal(text) for text in (self.name, self.value, self.package or ""))


def holder() -> str | None:
    """PrivateUse1's registered name, or None while it is free (or torch is not imported in this process)."""
    torch = sys.modules.get("torch")
    try:
        name = torch._C._get_privateuse1_backend_name() if torch is not None else UNRENAMED
    except Exception:  # noqa: BLE001 - a torch too old or half imported: nothing to explain
        return None
    return None if name == UNRENAMED else str(name)


def autoload_enabled() -> bool:
    """Whether `import torch` ran the `torch.backends` entry points in this environment (torch's own test)."""
    return os.environ.get(AUTOLOAD_ENV, "1") == "1"


def autoload_entry_points() -> list[AutoloadEntryPoint]:
    """The installed `torch.backends` entry points, as `import torch` finds them (importlib.metadata)."""
    from importlib.metadata import entry_points

    found = []
    try:
        for point in entry_points(group=GROUP):
            dist = getattr(point, "dist", None)
            metadata = getattr(dist, "metadata", None)
            package = metadata["Name"] if metadata is not None and metadata["Name"] else None
            version = getattr(dist, "version", None) if dist is not None else None
            found.append(AutoloadEntryPoint(_short(point.name), _short(point.value), _short(package),
                                            _short(version)))
    except Exception:  # noqa: BLE001 - broken metadata of some package: explain with what could be read
        pass
    return found


def explain(taken_by: str) -> str:
    """Why PrivateUse1 is `taken_by` already and how to free it for a run, in one line."""
    return f"PrivateUse1 is already taken by {_short(taken_by)!r}: {cause(taken_by)}"


def cause(taken_by: str) -> str:
    """Who registered PrivateUse1 as `taken_by` in this process, and what to do: the `torch.backends` entry point
    (found by `find_taker`, else guessed by name) and TORCH_DEVICE_BACKEND_AUTOLOAD=0; or "not at import torch"."""
    earlier = "it was registered in this process before the backend ran"
    if not autoload_enabled():
        return f"{earlier}, not by a {GROUP} entry point ({AUTOLOAD_ENV} is off)"
    points = autoload_entry_points()
    taker = find_taker(points) if points else NOT_AT_IMPORT
    if taker == NOT_AT_IMPORT:
        return f"{earlier}, not at `import torch` (no {GROUP} entry point registers it)"
    if taker == AT_IMPORT:
        return (f"it is registered as torch is imported, before any {GROUP} entry point runs (a sitecustomize or "
                ".pth file of this environment?)")
    if isinstance(taker, AutoloadEntryPoint):
        who = f"the {GROUP} entry point {taker.describe()} registered it"
    else:  # the finder could not tell: the entry points named like the holder, else all of them (they all ran)
        named = [p for p in points if p.mentions(taken_by)] or points
        listed = ", ".join(p.describe() for p in named[:MAX_LISTED]) + (
            f" and {len(named) - MAX_LISTED} more" if len(named) > MAX_LISTED else "")
        who = (f"the {GROUP} entry point {listed} registered it" if len(named) == 1
               else f"one of the {GROUP} entry points {listed} registered it")
    fix = f"run with {AUTOLOAD_ENV}=0 to turn autoload off for this run"
    if taken_by == "faulty" and os.environ.get(FAULTY_ENV) == "1":
        fix += f" (or unset {FAULTY_ENV}, which asks TorchCTS's entry point for its faulty device)"
    return f"{who} at `import torch`; {fix}"


_FIND_TAKER = r"""
import json, sys
sys.path[:] = json.loads(sys.argv[1])
import torch
from importlib.metadata import entry_points

def name():
    return torch._C._get_privateuse1_backend_name()

answer = "at import" if name() != "privateuseone" else "not at import"
if answer == "not at import":
    for index, point in enumerate(entry_points(group="torch.backends")):
        try:
            point.load()()
        except Exception:
            continue
        if name() != "privateuseone":
            answer = index
            break
print("\n" + json.dumps(answer))
"""


def find_taker(points: list[AutoloadEntryPoint]) -> AutoloadEntryPoint | str | None:
    """Which entry point renames PrivateUse1 at `import torch`: a fresh interpreter imports torch with autoload off,
    then runs the entry points one by one in torch's order until one renames it. That entry point; AT_IMPORT when
    torch's import itself renamed it; NOT_AT_IMPORT when none did; None when the check could not run (~2 s: it
    imports torch, so it runs only for an error's message)."""
    import json
    import subprocess

    environment = dict(os.environ, **{AUTOLOAD_ENV: "0"})
    try:
        path = json.dumps([entry for entry in sys.path if isinstance(entry, str)])
        done = subprocess.run([sys.executable, "-c", _FIND_TAKER, path], env=environment, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=FIND_TIMEOUT_S)
        answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    if answer in (AT_IMPORT, NOT_AT_IMPORT):
        return answer
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(points):
        return points[answer]
    return None


def blames_privateuse1(failure: str, taken_by: str) -> bool:
    """Whether a failure's text is about the taken slot (torch's "register_privateuse1_backend() has already been
    set! Current backend: X", a backend's own "PrivateUse1 is taken by X") rather than another problem."""
    text = failure.lower()
    return "privateuse" in text or f"current backend: {taken_by.lower()}" in text


def _normal(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _short(text: object) -> str | None:
    if text is None:
        return None
    value = " ".join(str(text).split())
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT - 3] + "..."
