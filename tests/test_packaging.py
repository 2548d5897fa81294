"""Packaging: the top-level folders install inside the torchcts namespace, editable and from a wheel."""

from __future__ import annotations

import json
import os
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

import torchcts
from tests import warm_programs

REPO = Path(__file__).resolve().parents[1]
NAMESPACED = {"strategies": "torchcts.strategies", "properties": "torchcts.properties",
              "manifests": "torchcts.manifests", "corpus": "torchcts.corpus"}


@pytest.mark.slow
def test_editable_install_maps_top_level_folders_into_the_namespace(tmp_path):
    """Run outside the checkout, so only the installed package can answer the imports."""
    probe = (
        "import importlib, importlib.util, json\n"
        f"names = {list(NAMESPACED.values())!r}\n"
        "files = {n: importlib.import_module(n).__file__ for n in names}\n"
        f"top_level = {{n: importlib.util.find_spec(n) is not None for n in {list(NAMESPACED)!r}}}\n"
        "print(json.dumps([files, top_level]))\n"
    )
    result = warm_programs.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    files, top_level = json.loads(result.stdout)
    for folder, module in NAMESPACED.items():
        assert Path(files[module]).resolve() == REPO / folder / "__init__.py"
    assert not any(top_level.values()), top_level


@pytest.mark.slow
def test_python_dash_m_and_console_script_run_the_cli():
    result = warm_programs.run([sys.executable, "-m", "torchcts", "--help"], capture_output=True, text=True, check=True)
    assert "check-manifest" in result.stdout and "init" in result.stdout
    script = Path(sys.executable).parent / "torchcts"
    result = warm_programs.run([str(script), "--version"], capture_output=True, text=True, check=True)
    assert torchcts.__version__ in result.stdout


@pytest.mark.slow
def test_wheel_installs_the_namespaced_packages_and_templates(tmp_path):
    source = tmp_path / "src"
    everywhere = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache")

    def ignore(folder: str, names: list[str]) -> set[str]:  # ./results holds runs; torchcts/results is a package
        return set(everywhere(folder, names)) | ({"results"} if Path(folder) == REPO else set())

    shutil.copytree(REPO, source, ignore=ignore)
    wheels = tmp_path / "wheels"
    warm_programs.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(source)], check=True, capture_output=True)
    (wheel,) = wheels.glob("torchcts-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in NAMESPACED.values():
        assert module.replace(".", "/") + "/__init__.py" in names
    assert "torchcts/manifests/templates/smoke.py.jinja" in names
    assert "torchcts/manifests/targets/meta.py" in names
    assert "torchcts/pathshapes/data/cnn_classifiers.json" in names
    assert "torchcts/manifests/templates/_layout.py.jinja" in names
    assert "torchcts/cases/script_templates/case_script.py.jinja" in names
    assert "torchcts/report/templates/scorecard.md.jinja" in names
    assert "torchcts/crashes/known_crashes.json" in names
    assert "torchcts/coverage/exclusions.json" in names
    for init in (REPO / "torchcts").rglob("__init__.py"):  # every subpackage, however deep, is packaged
        assert init.relative_to(REPO).as_posix() in names
    assert any(name.startswith("torchcts/corpus/") and name.endswith(".json") for name in names)
    suites = sorted(path.name for path in (REPO / "properties" / "suites").glob("*.py"))
    assert len(suites) > 30 and all(f"torchcts/properties/suites/{name}" in names for name in suites)
    assert not any(n.startswith(("strategies/", "properties/", "tests/")) for n in names)
    entry_points = next(zipfile.ZipFile(wheel).read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert "torchcts = torchcts.plugin" in entry_points and "torchcts = torchcts.cli:main" in entry_points

    site = tmp_path / "site"
    warm_programs.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                    str(wheel)], check=True, capture_output=True)
    probe = (
        "import torchcts, torchcts.strategies, torchcts.properties, torchcts.corpus\n"
        "from torchcts.testing.faulty.bugs import BUGS\n"  # the seeded bugs, suite_bugs' modules included
        "assert any(bug.suite == 'serialization' for bug in BUGS.values())\n"
        "from torchcts.plan.suites import suite_modules\n"  # the suites the registry and the plugin find
        f"assert len(suite_modules()) == {len(suites) - 1}, suite_modules()\n"
        "from torchcts.manifest.templates import render_template\n"
        "assert render_template('complete').startswith('# complete: ')\n"
        "print(torchcts.__file__)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(site))
    result = warm_programs.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(site)
