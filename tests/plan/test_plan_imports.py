"""Imports run one way (DESIGN.md "Dependency direction"), checked in fresh interpreters: the plan stage
imports manifest and the registry, never the crash ledger or the engine (the old plan -> oracle_crashes
-> known_crashes -> plan cycle is gone); the manifest is a leaf; the report needs neither torch nor the
plugin; nothing imports the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_importing_the_plan_imports_no_later_stage():
    code = ("import json, sys, torchcts.plan.build, torchcts.plan.skips; "
            "print(json.dumps(sorted({m.split('.')[1] for m in sys.modules if m.startswith('torchcts.')})))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    stages = json.loads(result.stdout)
    assert not {"crashes", "engine", "plugin", "properties", "cases", "results", "cli"} & set(stages), stages


def _loaded_after(imports: str) -> list[str]:
    """The modules loaded in a fresh interpreter after running `imports`."""
    code = f"import json, sys\n{imports}\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


def _under(modules: list[str], *packages: str) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)]


@pytest.mark.slow
def test_the_manifest_is_a_leaf():
    loaded = _loaded_after("import torchcts.manifest")
    later = ("torchcts.plan", "torchcts.engine", "torchcts.plugin", "torchcts.strategies", "torchcts.properties",
             "strategies", "properties", "hypothesis")
    assert not _under(loaded, *later)


@pytest.mark.slow
def test_the_report_needs_no_torch_no_plugin_and_no_op_database():
    loaded = _loaded_after("import torchcts.report.render, torchcts.report.data, torchcts.results.merge")
    assert not _under(loaded, "torch", "torchcts.plugin", "torchcts.plan.catalog")


# Every module of the package (strategies and properties included) but the command line and its
# entry point (`torchcts.testing.faulty_autoload` too: importing it only defines its hook).
WALK_ALL_BUT_CLI = """
import importlib, importlib.util, pkgutil
def walk(package):
    for info in pkgutil.iter_modules(importlib.util.find_spec(package).submodule_search_locations):
        name = f"{package}.{info.name}"
        if name in ("torchcts.cli", "torchcts.__main__"):
            continue
        yield name
        if info.ispkg:
            yield from walk(name)
for name in [*walk("torchcts"), *walk("torchcts.strategies"), *walk("torchcts.properties")]:
    importlib.import_module(name)
"""


@pytest.mark.slow
def test_nothing_imports_the_command_line():
    loaded = _loaded_after(WALK_ALL_BUT_CLI)
    assert {"torchcts.plugin", "torchcts.fuzz.hunt", "torchcts.report.render", "torchcts.strategies.dtype_claims",
            "torchcts.properties.suites.forward", "torchcts.testing.selftest"} <= set(loaded)  # the walk reached them
    assert not _under(loaded, "torchcts.cli")
