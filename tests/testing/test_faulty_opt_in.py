"""The faulty device registers only when asked, so a user's own PrivateUse1 backend works in TorchCTS's .venv.

Asking is `--device faulty` (the run, fuzz and replay commands, the pytest plugin, a fuzz worker),
TORCHCTS_FAULTY=1 (the development environment's `torch.backends` entry point), or importing
`torchcts.testing.faulty`. Every check runs in a fresh interpreter: PrivateUse1 can be taken once
per process, and this test process may hold the faulty device already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchcts.manifest.templates import render_template
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

BACKENDS = Path(__file__).resolve().parents[1] / "backends"  # tiny_backend.py: a user-style PrivateUse1 backend
NAME = "import torch; print(torch._C._get_privateuse1_backend_name())"


def python(code: str, *, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """`python -c code` with the test backends importable, and neither switch set unless given in `env`."""
    return warm_programs.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env=clean_env(**env))


def clean_env(**env: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in ("TORCHCTS_FAULTY", "TORCH_DEVICE_BACKEND_AUTOLOAD")}
    return {**base, "PYTHONPATH": os.pathsep.join(filter(None, [str(BACKENDS), os.environ.get("PYTHONPATH")])),
            **env}


def test_torchcts_leaves_privateuse1_free_unless_asked():
    """Importing TorchCTS's CLI, plugin, engine, fuzz worker, strategies and properties takes nothing."""
    modules = ("torchcts.cli.main", "torchcts.plugin", "torchcts.plugin.options", "torchcts.run_setup.start",
               "torchcts.engine.run",
               "torchcts.fuzz.worker", "torchcts.strategies", "torchcts.properties.suites.forward",
               "torchcts.testing.faulty_autoload")
    result = python(f"import {', '.join(modules)}; {NAME}")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "privateuseone"
    assert "torchcts.testing.faulty" not in python(f"import sys, {modules[0]}; print(sorted(sys.modules))").stdout


def test_a_users_own_backend_works_without_turning_autoload_off():
    code = "import torchcts.plugin, tiny_backend, torch; print(torch.ones(3, device='tiny').abs().cpu().tolist())"
    result = python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[1.0, 1.0, 1.0]"


@pytest.mark.parametrize("first_import", ["torchcts.testing.faulty", "torchcts.testing.faulty.device",
                                          "torchcts.testing.faulty.bugs"])
def test_importing_the_device_registers_it(first_import):
    result = python(f"import {first_import}, torch; print(torch.ones(1, device='faulty').device)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "faulty:0" and "Warning" not in result.stderr


@pytest.mark.parametrize("first_import", ["torch", "torchcts.strategies", "torchcts.testing.faulty"])
def test_torchcts_faulty_1_registers_it_in_any_torch_process(first_import):
    """The entry point of plugins/faulty-autoload, whatever starts the import of torch (even the device itself)."""
    code = f"import {first_import}, torch; print(torch.ones(2, device='faulty') + 1)"
    result = python(code, TORCHCTS_FAULTY="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tensor([2., 2.], device='faulty:0')" and "Warning" not in result.stderr


@pytest.mark.parametrize("env", [{}, {"TORCHCTS_FAULTY": "0"}, {"TORCHCTS_FAULTY": ""},
                                 {"TORCHCTS_FAULTY": "1", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}])
def test_without_the_switch_a_plain_script_has_no_faulty_device(env):
    assert python(NAME, **env).stdout.strip() == "privateuseone"


def test_the_switch_with_privateuse1_taken_warns_and_import_torch_survives():
    """TORCHCTS_FAULTY=1 in a process whose PrivateUse1 is already another backend's: a warning, not a crash."""
    code = ("import torch; torch.utils.rename_privateuse1_backend('mine'); "
            "from torchcts.testing import faulty_autoload; faulty_autoload.autoload(); print('alive')")
    result = python(code, TORCHCTS_FAULTY="1", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert result.stdout.strip() == "alive", result.stderr
    assert "TORCHCTS_FAULTY=1 but the faulty device was not registered" in result.stderr and "'mine'" in result.stderr


def test_device_faulty_registers_it_and_refuses_in_one_line_when_privateuse1_is_taken_or_a_bug_is_unknown():
    check = "from torchcts.run_setup.errors import SessionError; from torchcts.run_setup.device import check_device; "
    asked = python(check + f"check_device('faulty'); {NAME}")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.strip() == "faulty"
    taken = python("import tiny_backend; " + check +
                   "\ntry:\n    check_device('faulty')\nexcept SessionError as exc:\n    print(exc)")
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.strip().startswith("--device 'faulty': PrivateUse1 is already taken by the 'tiny' backend")
    assert len(taken.stdout.strip().splitlines()) == 1
    bad_bug = python(check + "\ntry:\n    check_device('faulty')\nexcept SessionError as exc:\n    print(exc)",
                     TORCHCTS_FAULTY_BUGS="tile_sun")
    assert bad_bug.returncode == 0, bad_bug.stderr
    assert bad_bug.stdout.startswith("--device 'faulty': TORCHCTS_FAULTY_BUGS: unknown faulty bug 'tile_sun'; known:")
    assert len(bad_bug.stdout.strip().splitlines()) == 1


def test_a_spawned_fuzz_worker_registers_it_from_its_options(tmp_path):
    """A worker is a fresh interpreter (spawn): its engine settings register the device named by --device."""
    (tmp_path / "manifest.py").write_text(render_template("smoke", device_name="faulty"))
    code = ("from torchcts.fuzz.options import FuzzOptions; from torchcts.fuzz.worker import engine_settings; "
            "engine_settings(FuzzOptions(device='faulty', manifest='manifest.py', budget_s=None, max_visits=1, "
            f"corpus_dir='corpus')); {NAME}")
    result = python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "faulty"


def test_torchcts_run_on_a_users_backend_needs_no_autoload_switch(tmp_path):
    """`torchcts run --device tiny` in the development .venv: the run gets past the device check and runs items."""
    (tmp_path / "manifest.py").write_text(render_template("smoke", device_name="tiny", backend_import="tiny_backend"))
    result = warm_programs.run([sys.executable, "-m", "torchcts", "run", "--device", "tiny", "--ops", "^abs$", "--dtype",
                             "float32", "--level", "1", "--max-examples", "2", "--derandomize", "--results-dir", "r"],
                            capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=600)
    assert result.returncode in (0, 1), result.stdout[-2000:] + result.stderr[-2000:]
    summary = json.loads(next((tmp_path / "r").glob("*/run.json")).read_text())
    assert summary["environment"]["device"] == "tiny"
    records = [json.loads(line) for line in next((tmp_path / "r").glob("*/records.jsonl")).read_text().splitlines()]
    assert any(r.get("outcome") in ("passed", "failed", "error") for r in records)
