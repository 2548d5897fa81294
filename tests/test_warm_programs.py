"""tests/warm_programs.py: a `torchcts` command forked from the warm interpreter answers as the program would."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import warm_programs

TORCHCTS = [sys.executable, "-m", "torchcts"]


@pytest.mark.slow
def test_a_forked_command_gives_what_the_program_gives(tmp_path, write_manifest):
    (tmp_path / "sub").mkdir()
    manifest = write_manifest("manifest = dict(BASE)\n", name="sub/manifest.py")
    for argv in (["--version"], ["check-manifest", "--manifest", "sub/manifest.py"],
                 ["check-manifest", "--manifest", "sub/missing.py"], ["no-such-command"]):
        cold = subprocess.run(TORCHCTS + argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        warm = warm_programs.run(TORCHCTS + argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr), argv
    assert manifest.is_file()


@pytest.mark.slow
def test_the_environment_the_path_stdin_and_stderr_into_stdout_are_the_commands(tmp_path):
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "warm_probe_module.py").write_text("VALUE = 7\n", encoding="utf-8")
    manifest = tmp_path / "manifest.py"
    manifest.write_text("import os, warm_probe_module\nassert warm_probe_module.VALUE == 7\n"
                        "manifest = {'manifest_version': 1, 'device_name': os.environ['WARM_DEVICE'], "
                        "'supported_dtypes': {'float32': True}, 'capabilities': {'inference': True}}\n",
                        encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "mods"), WARM_DEVICE="cpu")
    done = warm_programs.run(TORCHCTS + ["check-manifest", "--manifest", "manifest.py"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert done.returncode == 0, done.stdout
    assert done.stderr is None and "cpu" in done.stdout
    env["WARM_DEVICE"] = "meta"
    done = warm_programs.run(TORCHCTS + ["check-manifest", "--manifest", "manifest.py"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "meta" in done.stdout, done.stdout + done.stderr
    answers = "\n".join(["minimal", "stdin_device", "n"]) + "\n"
    done = warm_programs.run(TORCHCTS + ["init", "--output", "drafted.py"], cwd=tmp_path, input=answers,
                             capture_output=True, text=True, timeout=600)
    assert (tmp_path / "drafted.py").is_file() == (done.returncode == 0), done.stdout + done.stderr


def test_only_torchcts_commands_whose_environment_starts_alike_are_forked():
    env = dict(os.environ)
    assert warm_programs._forkable(TORCHCTS + ["run"], env)
    assert warm_programs._forkable(TORCHCTS + ["run"], dict(env, PYTHONPATH="/elsewhere", TORCHCTS_FAULTY="1"))
    assert not warm_programs._forkable([sys.executable, "-c", "pass"], env)
    assert not warm_programs._forkable(["torchcts", "run"], env)
    assert not warm_programs._forkable(TORCHCTS + ["run"], dict(env, OMP_NUM_THREADS="7"))
    assert not warm_programs._forkable(TORCHCTS + ["run"], dict(env, PYTHONMALLOC="debug"))
    assert not warm_programs._forkable(TORCHCTS + ["run"], {k: v for k, v in env.items() if k != "PATH"} | {
        "PYTORCH_NO_SUCH_SWITCH": "1"})


def test_a_pythonpath_folder_with_installed_distributions_starts_cold(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "module.py").write_text("", encoding="utf-8")
    (tmp_path / "site" / "backend-1.0.dist-info").mkdir(parents=True)
    assert warm_programs._forkable(TORCHCTS + ["run"], dict(os.environ, PYTHONPATH=str(tmp_path / "plain")))
    together = os.pathsep.join([str(tmp_path / "plain"), str(tmp_path / "site")])
    assert not warm_programs._forkable(TORCHCTS + ["run"], dict(os.environ, PYTHONPATH=together))


@pytest.mark.slow
def test_a_command_past_its_timeout_is_killed_and_the_next_one_runs(tmp_path):
    manifest = tmp_path / "manifest.py"
    manifest.write_text("import time\ntime.sleep(600)\nmanifest = {}\n", encoding="utf-8")
    with pytest.raises(subprocess.TimeoutExpired):
        warm_programs.run(TORCHCTS + ["check-manifest", "--manifest", str(manifest)], capture_output=True,
                          timeout=5)
    done = warm_programs.run(TORCHCTS + ["--version"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "torchcts" in done.stdout


@pytest.mark.slow
def test_hypothesis_s_folder_and_the_temporary_folder_are_the_commands_as_in_a_program(tmp_path):
    (tmp_path / "tmp").mkdir()
    manifest = tmp_path / "manifest.py"  # a manifest runs in the command's process tree: it says where they are
    manifest.write_text("import tempfile\nfrom hypothesis.configuration import storage_directory\n"
                        "raise RuntimeError(f\"WHERE {storage_directory('examples', intent_to_write=False).path} "
                        "{tempfile.gettempdir()}\")\n", encoding="utf-8")
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    command = TORCHCTS + ["check-manifest", "--manifest", "manifest.py"]
    cold = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    warm = warm_programs.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    said = f"WHERE {tmp_path / '.hypothesis' / 'examples'} {tmp_path / 'tmp'}"
    assert said in cold.stdout + cold.stderr, cold.stdout + cold.stderr
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)
