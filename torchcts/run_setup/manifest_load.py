"""A run's manifest: which file (given, local or shipped for the device), loaded, its backend imported, the
property suites (installed and the manifest's `custom_test_dirs`) registered, and the plan built on it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from torchcts.arguments import input_file_problem
from torchcts.engine.hypothesis_profile import register_manifest_profile
from torchcts.manifest import Manifest, ManifestError, environment_problems, load_manifest
from torchcts.manifest.load import BackendImportError, import_backend
from torchcts.manifest.targets import LOCAL_MANIFEST, shipped_target, used_line
from torchcts.plan import registry
from torchcts.plan.build import Plan, Selection, build_plan
from torchcts.run_setup.errors import SessionError
from torchcts.run_setup.request import RunRequest


def manifest_path(request: RunRequest, device: str, replaying: bool) -> Path:
    """--manifest, else ./manifest.py, else (not replaying) the manifest TorchCTS ships for the device and
    --compile backend (`torchcts.manifest.targets`, said on stderr), else ./manifest.py (reported missing)."""
    given = request.manifest
    if given is not None or replaying or LOCAL_MANIFEST.exists():
        return Path(given or LOCAL_MANIFEST)
    target = shipped_target(device, request.compile)
    if target is None:
        return LOCAL_MANIFEST
    print(used_line(target), file=sys.stderr)
    return target.path


def run_manifest(request: RunRequest, path: Path, replaying: bool) -> Manifest | None:
    """The run's manifest (None when replaying without one), its backend imported and its properties loaded."""
    if replaying and request.manifest is None and not path.exists():
        load_properties(())
        return None  # replaying needs no claims; a manifest only adds tolerance overrides
    problem = input_file_problem(path)
    if problem is not None:
        raise SessionError(f"--manifest: {problem}")
    try:
        manifest, _ = load_manifest(path)
    except ManifestError as exc:
        raise SessionError(f"TorchCTS manifest is invalid:\n{exc.render()}") from None
    register_manifest_profile(manifest.hypothesis)  # before the backend module, which may build profiles on it
    import_manifest_backend(manifest)
    load_properties(manifest.custom_test_dirs)
    return manifest


def import_manifest_backend(manifest: Manifest) -> None:
    """Import the manifest's backend module; one that raises, exits or kills its process is a SessionError."""
    if manifest.backend_import is None:
        return
    try:
        import_backend(manifest.backend_import, manifest.device_name)
    except BackendImportError as exc:
        problems = "; ".join(p.render() for p in environment_problems(manifest))
        raise SessionError(f"{manifest.source}: backend_import {manifest.backend_import!r} failed: {exc}"
                           + (f" ({problems})" if problems else "")) from None


def load_properties(extra_dirs: Any) -> None:
    """Import the installed property suites and the manifest's `custom_test_dirs` into the registry."""
    try:
        registry.load(tuple(d for d in extra_dirs if Path(d).is_dir()))
    except registry.RegistryError as exc:
        raise SessionError(f"custom_test_dirs: {exc}") from None


def run_plan(manifest: Manifest | None, selection: Selection) -> Plan:
    """The plan of the run's items and accounting (empty without a manifest)."""
    if manifest is None:
        return Plan((), ())
    try:
        return build_plan(manifest, selection)
    except registry.RegistryError as exc:
        raise SessionError(f"custom_test_dirs: {exc}") from None
