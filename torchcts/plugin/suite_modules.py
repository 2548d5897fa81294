"""Collecting the installed property suites through the registry's package, not pytest's file naming.

A suite is a module of `torchcts.properties.suites` named for its area (`forward.py`), which
pytest's `test_*.py` pattern does not match: the plugin makes a `SuiteModule` of each, imported
under its registered name (`torchcts.properties.suites.forward`, the module `registry.load`
imports), so a check is never imported twice under two names. Node ids keep the file's path and
the check's name (`.../suites/forward.py::test_forward[forward::add::function::float32]`).
Custom suites (a manifest's `custom_test_dirs`) stay `test_*.py` files pytest collects itself.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from torchcts.plan.suites import suite_module_of


class SuiteModule(pytest.Module):
    """A suite module, imported by its module name (`torchcts.properties.suites.<area>`) rather than by path."""

    def _getobj(self) -> Any:
        name = suite_module_of(self.path)
        assert name is not None, self.path  # made only for suite files (`collect`)
        return importlib.import_module(name)


def collect(file_path: Path, parent: pytest.Collector) -> SuiteModule | None:
    """A `SuiteModule` for a file of the installed suites' folder; None for any other file."""
    if suite_module_of(file_path) is None:
        return None
    return SuiteModule.from_parent(parent, path=file_path)
