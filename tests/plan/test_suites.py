"""The installed suites are the modules of `torchcts.properties.suites`, found without importing them, and the pytest
plugin collects each once, under its registered name, whether pytest walks the package or is given the file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from torchcts.manifest.templates import render_template
from torchcts.plan import registry, suites
from tests import warm_programs

SUITES = Path(registry.__file__).resolve().parents[2] / "properties" / "suites"


def test_every_module_of_the_suites_package_is_a_suite_and_nothing_else_is():
    files = sorted(path.stem for path in SUITES.glob("*.py") if path.name != "__init__.py")
    assert suites.suite_modules() == tuple(f"torchcts.properties.suites.{name}" for name in files)
    assert "torchcts.properties.suites.forward" in suites.suite_modules()
    assert {spec.module for spec in registry.load() if spec.module.startswith(suites.SUITES_PACKAGE)} \
        == set(suites.suite_modules())  # every suite registers a property, and the registry loads them all


def test_a_file_is_a_suite_module_only_in_the_suites_folder():
    assert suites.suite_module_of(SUITES / "forward.py") == "torchcts.properties.suites.forward"
    assert suites.suite_module_of(SUITES / "__init__.py") is None
    assert suites.suite_module_of(SUITES.parent / "view_steps.py") is None  # a helper the suites share
    assert suites.suite_module_of(SUITES / "forward.txt") is None
    assert suites.suite_module_of(Path("/elsewhere/suites/forward.py")) is None  # a custom folder's file


@pytest.mark.slow
@pytest.mark.parametrize("target", ["package", "file"])
def test_the_plugin_collects_a_suite_once_with_its_check_named_as_before(tmp_path, target):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    where = ["--pyargs", "torchcts.properties"] if target == "package" else [str(SUITES / "layout.py")]
    result = warm_programs.run([sys.executable, "-m", "pytest", *where, "--manifest", "manifest.py", "--device", "faulty",
                             "--dtype", "float32", "--ops", "^add$", "--property", "layout", "--level", "2",
                             "--results-dir", "results", "-p", "no:cacheprovider", "--collect-only", "-q"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    items = [line for line in result.stdout.splitlines() if "::" in line and "NOTSET" not in line]
    assert len(items) == 1 and items[0].endswith("suites/layout.py::test_layout[layout::add::function::float32]"), \
        result.stdout[-3000:]
