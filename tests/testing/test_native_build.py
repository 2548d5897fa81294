"""The faulty device's compiled part (torchcts.testing.native_build): cached by torch version and source, built once
when several processes start together, and missing with a reason (never a crash) where it cannot be built."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchcts.testing import native_build


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty cache folder and no build loaded yet in this process (the loaded one is put back after)."""
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(native_build.SWITCH, raising=False)
    monkeypatch.setattr(native_build, "_loaded", None)
    return tmp_path / "cache"


def test_the_build_folder_is_named_by_torch_version_and_source(fresh, monkeypatch, tmp_path):
    here = native_build.build_dir()
    assert here.parent == fresh / "faulty-native" and here.name.startswith(f"torch-{torch.__version__}-")
    monkeypatch.setattr(torch, "__version__", "9.9.9")
    other_torch = native_build.build_dir()
    monkeypatch.undo()
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(fresh))
    changed = tmp_path / "faulty_runtime.cpp"
    changed.write_bytes(native_build.SOURCE.read_bytes() + b"// a changed source\n")
    monkeypatch.setattr(native_build, "SOURCE", changed)
    other_source = native_build.build_dir()
    assert len({here, other_torch, other_source}) == 3 and other_torch.name.startswith("torch-9.9.9-")


def test_switched_off_it_is_missing_with_the_reason(fresh, monkeypatch):
    monkeypatch.setenv(native_build.SWITCH, "0")
    loaded = native_build.load()
    assert not loaded.available and "TORCHCTS_FAULTY_NATIVE=0" in loaded.reason
    assert not fresh.exists()  # nothing built, nothing written


def test_without_a_compiler_it_is_missing_with_the_reason(fresh, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler-anywhere")
    loaded = native_build.load()
    assert not loaded.available and "no C++ compiler ('no-such-compiler-anywhere'" in loaded.reason


def test_without_ninja_it_is_missing_with_the_reason(fresh, monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "c++").symlink_to(sys.executable)  # a compiler on PATH, ninja nowhere
    monkeypatch.setenv("PATH", str(bin_dir))
    loaded = native_build.load()
    assert not loaded.available and "ninja is not on PATH" in loaded.reason


def test_a_failed_build_is_remembered_so_later_processes_do_not_compile_again(fresh, monkeypatch):
    monkeypatch.setattr(native_build, "_missing_tool", lambda: None)  # as on a machine with a compiler and ninja
    folder = native_build.build_dir()
    folder.mkdir(parents=True)
    (folder / native_build.FAILED_MARK).write_text("faulty_runtime.cpp:12: error: something\n")
    loaded = native_build.load()  # it reads the mark instead of compiling
    assert not loaded.available and "error: something" in loaded.reason and str(folder) in loaded.reason


def test_an_unwritable_cache_is_a_reason_not_a_crash(fresh, monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(blocker / "cache"))
    loaded = native_build.load()
    assert not loaded.available and "cannot be built" in loaded.reason


def test_a_build_others_can_write_is_not_loaded(fresh, monkeypatch):
    """Loading a shared object runs its code: one in a folder another user could have written is refused."""
    monkeypatch.setattr(native_build, "_missing_tool", lambda: None)
    folder = native_build.build_dir()
    folder.mkdir(parents=True)
    planted = folder / f"{native_build.MODULE_NAME}.so"
    planted.write_bytes(b"not a shared object")  # never loaded: the check comes first
    folder.chmod(0o777)
    loaded = native_build.load()
    assert not loaded.available and f"{folder} is writable by other users" in loaded.reason
    folder.chmod(0o755)
    planted.chmod(0o666)
    monkeypatch.setattr(native_build, "_loaded", None)
    assert f"{planted} is writable by other users" in native_build.load().reason


def test_a_build_that_does_not_load_is_a_reason_not_a_crash(fresh, monkeypatch):
    monkeypatch.delitem(sys.modules, native_build.MODULE_NAME, raising=False)  # as in a process that never loaded it
    folder = native_build.build_dir()
    folder.mkdir(parents=True)
    (folder / f"{native_build.MODULE_NAME}.so").write_bytes(b"not a shared object")  # a truncated build, say
    loaded = native_build.load()
    assert not loaded.available and "does not load" in loaded.reason and f"delete {folder}" in loaded.reason


@pytest.mark.slow
def test_processes_starting_together_build_once_and_later_ones_load_the_build(tmp_path):
    """Two processes on an empty cache: one compiles while the other waits on the lock, both load it; a third
    loads the same file without building (its modification time is unchanged)."""
    if native_build._missing_tool():
        pytest.skip(f"no build here: {native_build._missing_tool()}")
    env = {**os.environ, "TORCHCTS_CACHE_DIR": str(tmp_path / "cache")}
    env.pop(native_build.SWITCH, None)
    program = ("from torchcts.testing import native_build\n"
               "loaded = native_build.load()\n"
               "print(loaded.available, loaded.reason, native_build.build_dir())\n")
    starting = [subprocess.Popen([sys.executable, "-c", program], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [process.communicate(timeout=600) for process in starting]
    assert all(process.returncode == 0 for process in starting), [err[-2000:] for _, err in outputs]
    assert all(out.startswith("True None ") for out, _ in outputs), outputs
    folder = Path(outputs[0][0].split(" ", 2)[2].strip())
    built = folder / f"{native_build.MODULE_NAME}.so"
    first = built.stat().st_mtime_ns
    again = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=600)
    assert again.stdout.startswith("True None ") and built.stat().st_mtime_ns == first
    assert list(folder.glob("*.so")) == [built]
