"""The faulty device's compiled part: built with `torch.utils.cpp_extension` at first use, cached on disk.

Some of what a real C++ backend implements has no Python hook in torch (the PrivateUse1 hooks interface with
its generator factory: `torch.Generator(device="faulty")`), so the device compiles a small extension
(`faulty/native/faulty_runtime.cpp`). The build is cached in `<cache>/faulty-native/torch-<version>-<hash>/`
(`torchcts.core.cache_folder`): a new torch or a changed source builds anew, anything else loads
the shared object directly (milliseconds, no compiler run). Builders take a file lock, so pytest-xdist workers and
selftest runs starting together build once; a failed build is remembered there too, so each later process does
not spend a compile to fail again.

A shared object is loaded only if it, and the folders up to the cache folder, are the user's and not writable by every
user: loading it runs its code. A machine without a C++ compiler or ninja, or TORCHCTS_FAULTY_NATIVE=0, still runs
everything else: `load()` returns the reason the part is missing, and what needs it (device generators) says it.

Outside the `faulty` package, so that building it (tests/conftest.py does, before any test runs) does not register
the device.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import attrs
import torch

from torchcts.core.cache_folder import cache_dir, safe_part

SOURCE = Path(__file__).parent / "faulty" / "native" / "faulty_runtime.cpp"
MODULE_NAME = "torchcts_faulty_runtime"
SWITCH = "TORCHCTS_FAULTY_NATIVE"  # "0": do not build or load it (as a machine without a compiler)
FAILED_MARK = "build-failed.txt"
REASON_CHARS = 400


@attrs.frozen
class Native:
    """The loaded extension, or None and why not."""

    module: ModuleType | None
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.module is not None


_loaded: Native | None = None


def build_dir() -> Path:
    """Where this torch's build of this source lives (a new torch or source: a new folder)."""
    digest = hashlib.sha256(SOURCE.read_bytes() + torch.__version__.encode()).hexdigest()[:16]
    return cache_dir() / "faulty-native" / f"torch-{safe_part(torch.__version__)}-{digest}"


def load() -> Native:
    """The compiled part, built first if this torch has no build of this source yet (once per process)."""
    global _loaded
    if _loaded is None:
        _loaded = _load()
    return _loaded


def _load() -> Native:
    if os.environ.get(SWITCH, "1") == "0":
        return Native(None, f"the faulty device's compiled part is switched off ({SWITCH}=0)")
    folder = build_dir()
    built = folder / f"{MODULE_NAME}.so"
    if not built.is_file():
        missing = _missing_tool()
        if missing:
            return Native(None, f"the faulty device's compiled part cannot be built: {missing}")
        try:
            folder.mkdir(mode=0o755, parents=True, exist_ok=True)  # no group write, whatever the umask
        except OSError as exc:
            return Native(None, f"the faulty device's compiled part cannot be built: {folder}: {exc.strerror}")
        failure = _build(folder, built)
        if failure:
            return Native(None, f"the faulty device's compiled part did not build ({folder}): {failure}")
    untrusted = _untrusted(built, folder.parent.parent)
    if untrusted:
        return Native(None, f"the faulty device's compiled part is not loaded: {untrusted}")
    try:
        return Native(_import(built))
    except ImportError as exc:  # built against another build of this torch version (its symbols differ)
        return Native(None, f"the faulty device's compiled part does not load ({built}): {exc}; delete {folder} "
                            f"to build it again")


def _untrusted(built: Path, cache: Path) -> str | None:
    """Why loading `built` could run someone else's code, or None: it and the folders up to the cache folder must be
    this user's and not writable by every user (a cache under /tmp is shared with every user of the machine)."""
    for path in (built, *built.parents):
        info = path.stat()
        if info.st_uid != os.getuid():
            return f"{path} belongs to another user"
        if info.st_mode & 0o002:
            return f"{path} is writable by other users"
        if path == cache:
            return None
    return None


def _missing_tool() -> str | None:
    """What the build lacks, looked up on PATH (starting no program): the C++ compiler, ninja."""
    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        return f"no C++ compiler ({compiler!r} is not on PATH; CXX names another)"
    if shutil.which("ninja") is None:
        return "ninja is not on PATH (pip install ninja)"
    return None


def _build(folder: Path, built: Path) -> str | None:
    """Build into `folder` under its lock (others wait, then find it built); the failure's text, or None."""
    with _locked(folder / "build.lock"):
        if built.is_file():
            return None  # another process built it while we waited
        mark = folder / FAILED_MARK
        if mark.is_file():
            with open(mark, encoding="utf-8", errors="replace") as text:
                return text.read(REASON_CHARS)  # bounded: the folder may hold anything
        with contextlib.suppress(FileNotFoundError):
            (folder / "lock").unlink()  # cpp_extension's own lock, left by a builder that was killed: we hold ours
        from torch.utils import cpp_extension

        try:
            cpp_extension.load(MODULE_NAME, [str(SOURCE)], build_directory=str(folder), verbose=False)
        except Exception as exc:  # noqa: BLE001 -- any build failure leaves the device without its compiled part
            reason = _last_line(str(exc)) or type(exc).__name__
            mark.write_text(reason, encoding="utf-8")
            return reason
        return None if built.is_file() else "the build wrote no shared object"


def _import(built: Path) -> ModuleType:
    if MODULE_NAME in sys.modules:  # cpp_extension.load imported it in this process
        return sys.modules[MODULE_NAME]
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(built))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, str(built), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[MODULE_NAME] = module
    return module


@contextlib.contextmanager
def _locked(path: Path):
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the process dies, unlike a lock file
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:REASON_CHARS] if lines else ""
