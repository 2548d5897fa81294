"""The TorchCTS pytest plugin (entry point `pytest11: torchcts`).

Installed with TorchCTS, so it loads in every pytest session of the environment; it stays inert
unless a TorchCTS option is given. With `--manifest`, the manifest is loaded and validated once
at configure time (an invalid manifest stops the session with every problem listed) and is
available to fixtures as `config.stash[MANIFEST_KEY]`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from torchcts.manifest import Manifest

# Nothing heavy (torch, the manifest model) is imported until a TorchCTS option asks for it.
MANIFEST_KEY = pytest.StashKey["Manifest"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("torchcts", "TorchCTS backend conformance")
    group.addoption(
        "--manifest",
        dest="torchcts_manifest",
        default=None,
        metavar="PATH",
        help="TorchCTS: backend manifest (a Python file defining a dict `manifest`); enables the plugin.",
    )


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("torchcts_manifest")
    if path is None:
        return
    from torchcts.manifest import ManifestError, load_manifest

    try:
        manifest, warnings = load_manifest(path)
    except ManifestError as exc:
        raise pytest.UsageError(f"TorchCTS manifest is invalid:\n{exc.render()}") from None
    config.stash[MANIFEST_KEY] = manifest
    for problem in warnings:
        config.issue_config_time_warning(pytest.PytestConfigWarning(f"{path}: {problem.render()}"), stacklevel=2)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    manifest = config.stash.get(MANIFEST_KEY, None)
    if manifest is None:
        return None
    return [
        f"torchcts: manifest {manifest.source} (fingerprint {manifest.fingerprint()[:16]}), "
        f"device {manifest.device_name}, semantic level {manifest.semantic_level}"
    ]
