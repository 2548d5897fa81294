"""When another installed package's `torch.backends` entry point took PrivateUse1 at `import torch`, a backend that
registers it fails with an error naming that package and entry point and TORCH_DEVICE_BACKEND_AUTOLOAD=0.

Nothing is installed: each test writes a dist-info folder with an entry point into a temp folder on PYTHONPATH,
which importlib.metadata (and so torch's autoload) finds like any installed package; every torch runs in a
subprocess, since PrivateUse1 can be renamed once per process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchcts.manifest.templates import render_template
from tests import warm_programs

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "backends"
TORCH_MESSAGE = "RuntimeError: torch.register_privateuse1_backend() has already been set! Current backend: otherdev"


def install_entry_point(site: Path, package: str, point: str, module: str, body: str, version: str = "1.0") -> None:
    """A package `package` with a `torch.backends` entry point `point = module:autoload` whose autoload runs `body`."""
    info = site / f"{package.replace('-', '_')[:40]}-{version}.dist-info"  # the name in METADATA is the package's
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[torch.backends]\n{point} = {module}:autoload\n")
    (site / f"{module}.py").write_text("def autoload():\n" + textwrap.indent(textwrap.dedent(body), "    "))


RENAME_OTHERDEV = """
import torch
torch.utils.rename_privateuse1_backend("otherdev")
"""


def environment(site: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(TINY)]), **extra)
    for name in ("TORCHCTS_FAULTY", "TORCH_DEVICE_BACKEND_AUTOLOAD"):
        if name not in extra:
            env.pop(name, None)
    return env


def run_tiny(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    manifest = tmp_path / "manifest.py"
    manifest.write_text(render_template("smoke", device_name="tiny", backend_import="tiny_backend"))
    command = [sys.executable, "-m", "torchcts", "run", "--device", "tiny", "--manifest", str(manifest),
               "--ops", "^abs$", "--property", "forward", "--dtype", "float32", "--max-examples", "2",
               "--results-dir", str(tmp_path / "results"), "--no-report"]
    return warm_programs.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)


def test_the_error_names_the_package_and_entry_point_that_took_privateuse1(tmp_path):
    site = tmp_path / "site"
    install_entry_point(site, "otherdev-backend", "otherdev", "otherdev_backend", RENAME_OTHERDEV)
    done = run_tiny(tmp_path, environment(site))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR:")]
    assert errors == [
        f"ERROR: {tmp_path / 'manifest.py'}: backend_import 'tiny_backend' failed: PrivateUse1 is already taken by "
        "'otherdev': the torch.backends entry point 'otherdev = otherdev_backend:autoload' of package "
        "otherdev-backend 1.0 registered it at `import torch`; run with TORCH_DEVICE_BACKEND_AUTOLOAD=0 to turn "
        f"autoload off for this run ({TORCH_MESSAGE})"], done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_turning_autoload_off_as_the_error_says_lets_the_backend_run(tmp_path):
    site = tmp_path / "site"
    install_entry_point(site, "otherdev-backend", "otherdev", "otherdev_backend", RENAME_OTHERDEV)
    done = run_tiny(tmp_path, environment(site, TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "PrivateUse1" not in done.stderr
    (records,) = (tmp_path / "results").glob("*/records.jsonl")
    assert '"outcome": "passed"' in records.read_text()


EXPLAIN = """
import json, sys
import torch
from torchcts.manifest import privateuse1
print(json.dumps({"holder": privateuse1.holder(), "explain": privateuse1.explain(privateuse1.holder())}))
"""


def explain_in(site: Path, **extra: str) -> dict:
    done = warm_programs.run([sys.executable, "-c", EXPLAIN], env=environment(site, **extra), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    return json.loads(done.stdout.splitlines()[-1])


def test_of_several_entry_points_the_one_named_like_the_holder_is_blamed(tmp_path):
    site = tmp_path / "site"
    install_entry_point(site, "quiet-helper", "helper", "quiet_helper", "pass\n")
    install_entry_point(site, "acme-npu", "npu", "acme_npu_plugin",
                        'import torch\ntorch.utils.rename_privateuse1_backend("npu")\n', version="3.2")
    answer = explain_in(site)
    assert answer["holder"] == "npu"
    assert "entry point 'npu = acme_npu_plugin:autoload' of package acme-npu 3.2 registered it" in answer["explain"]
    assert "quiet" not in answer["explain"]


def test_an_entry_point_not_named_like_the_holder_is_found_by_replaying_them(tmp_path):
    site = tmp_path / "site"
    install_entry_point(site, "plugin-a", "a", "plugin_a", "pass\n")
    install_entry_point(site, "plugin-b", "b", "plugin_b",
                        'import torch\ntorch.utils.rename_privateuse1_backend("zzdev")\n')
    text = explain_in(site)["explain"]
    assert text.startswith("PrivateUse1 is already taken by 'zzdev': the torch.backends entry point "
                           "'b = plugin_b:autoload' of package plugin-b 1.0 registered it at `import torch`")
    assert "plugin-a" not in text


def test_where_the_replay_cannot_tell_every_entry_point_that_ran_is_listed(tmp_path):
    site = tmp_path / "site"
    install_entry_point(site, "plugin-a", "a", "plugin_a", "pass\n")
    # renames at import torch, and ends any process that runs it again: the replay gets no answer
    install_entry_point(site, "plugin-b", "b", "plugin_b", 'import os, torch\n'
                        'torch.utils.rename_privateuse1_backend("zzdev")\n'
                        'if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD") == "0":\n    os._exit(3)\n')
    text = explain_in(site)["explain"]
    assert "one of the torch.backends entry points" in text
    assert "'a = plugin_a:autoload' of package plugin-a 1.0" in text and "'b = plugin_b:autoload'" in text


def test_a_holder_registered_after_import_torch_is_not_blamed_on_an_entry_point(tmp_path):
    site = tmp_path / "site"
    install_entry_point(site, "plugin-a", "a", "plugin_a", "pass\n")
    done = warm_programs.run([sys.executable, "-c", "import tiny_backend\n" + EXPLAIN], env=environment(site),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith('"explain": "PrivateUse1 is already taken by \'tiny\': it was registered in '
                                        'this process before the backend ran, not at `import torch` (no '
                                        'torch.backends entry point registers it)"}')
    off = warm_programs.run([sys.executable, "-c", "import tiny_backend\n" + EXPLAIN],
                         env=environment(site, TORCH_DEVICE_BACKEND_AUTOLOAD="0"), capture_output=True, text=True,
                         timeout=300)
    assert "not by a torch.backends entry point (TORCH_DEVICE_BACKEND_AUTOLOAD is off)" in off.stdout


def test_hostile_entry_point_metadata_is_shown_bounded(tmp_path):
    site = tmp_path / "site"
    long_name = "x" * 5000
    install_entry_point(site, "p" + "q" * 3000, long_name, "plugin_long",
                        f'import torch\ntorch.utils.rename_privateuse1_backend("{"d" * 300}")\n')
    text = explain_in(site)["explain"]
    assert len(text) < 1000 and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in text
    assert "'" + "x" * 97 + "..." in text and "of package p" + "q" * 96 + "..." in text


def test_the_faulty_device_names_the_package_that_took_privateuse1(tmp_path):
    site = tmp_path / "site"
    install_entry_point(site, "otherdev-backend", "otherdev", "otherdev_backend", RENAME_OTHERDEV)
    manifest = tmp_path / "manifest.py"
    manifest.write_text(render_template("smoke", device_name="faulty"))
    command = [sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--manifest", str(manifest),
               "--ops", "^abs$", "--max-examples", "2", "--results-dir", str(tmp_path / "results"), "--no-report"]
    done = warm_programs.run(command, env=environment(site), capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "ERROR: --device 'faulty': PrivateUse1 is already taken by the 'otherdev' backend; the faulty device needs "
        "it: the torch.backends entry point 'otherdev = otherdev_backend:autoload' of package otherdev-backend 1.0 "
        "registered it at `import torch`; run with TORCH_DEVICE_BACKEND_AUTOLOAD=0 to turn autoload off for this run")


IMPORT_BACKEND = """
import json, sys
import torch
from torchcts.manifest.load import BackendImportError, import_backend
try:
    import_backend(sys.argv[1], sys.argv[2])
except BackendImportError as exc:
    print(json.dumps(str(exc)))
else:
    print(json.dumps(None))
"""


def import_backend_in(site: Path, module: str, device: str) -> str | None:
    import json

    done = warm_programs.run([sys.executable, "-c", IMPORT_BACKEND, module, device], env=environment(site),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_failure_not_about_privateuse1_gets_no_note_about_its_holder(tmp_path):
    site = tmp_path / "site"
    install_entry_point(site, "newdev-backend", "newdev", "newdev_backend",
                        'import torch\ntorch.utils.rename_privateuse1_backend("newdev")\n')
    (site / "needs_config.py").write_text('raise ValueError("config file missing")\n')
    assert import_backend_in(site, "needs_config", "otherdev") == "ValueError: config file missing"


def test_a_backend_that_registered_itself_through_its_entry_point_is_not_told_to_turn_autoload_off(tmp_path):
    """The holder is the manifest's own device: its entry point registered it, and turning autoload off would stop
    that; the backend module's own complaint is shown as it is."""
    site = tmp_path / "site"
    install_entry_point(site, "mydev-backend", "mydev", "mydev_autoload",
                        'import torch\ntorch.utils.rename_privateuse1_backend("mydev")\n')
    (site / "mydev_again.py").write_text('import torch\ntorch.utils.rename_privateuse1_backend("mydev2")\n')
    own = import_backend_in(site, "mydev_again", "mydev:0")
    assert own is not None and "has already been set" in own and "AUTOLOAD" not in own, own
    other = import_backend_in(site, "mydev_again", "mydev2")  # another device's backend: the holder is the cause
    assert other is not None and other.startswith("PrivateUse1 is already taken by 'mydev'") and "AUTOLOAD=0" in other
