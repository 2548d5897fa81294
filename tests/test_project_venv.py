"""The CLI stays in the Python environment it was started from unless TORCHCTS_USE_PROJECT_VENV=1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)


@pytest.fixture
def project_with_fake_venv(tmp_path):
    """A project folder whose .venv/bin/python records how it was called instead of running."""
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/called-with"\n')
    python.chmod(0o755)
    (tmp_path / "sub").mkdir()
    return tmp_path


def run_cli(cwd, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TORCHCTS_")}
    environment.update(env)
    return subprocess.run([sys.executable, "-m", "torchcts", "init", "--help"], cwd=cwd, env=environment,
                          capture_output=True, text=True)


def test_cli_ignores_a_project_venv_by_default(project_with_fake_venv):
    result = run_cli(project_with_fake_venv)
    assert result.returncode == 0
    assert "Write a starting manifest" in result.stdout
    assert not (project_with_fake_venv / "called-with").exists()


def test_cli_switches_into_the_nearest_project_venv_when_asked(project_with_fake_venv):
    result = run_cli(project_with_fake_venv / "sub", TORCHCTS_USE_PROJECT_VENV="1")
    assert result.returncode == 0, result.stderr
    assert (project_with_fake_venv / "called-with").read_text().split() == ["-m", "torchcts", "init", "--help"]


def test_switch_without_a_venv_says_so_and_stays(tmp_path):
    result = run_cli(tmp_path, TORCHCTS_USE_PROJECT_VENV="1")
    assert result.returncode == 0
    assert "no .venv found" in result.stderr
    assert "Write a starting manifest" in result.stdout
