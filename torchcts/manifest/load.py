"""Load a manifest file: run it as Python, take its `manifest` dict, validate it.

A manifest is code, so it can fail like code. Every failure (missing file, syntax error, an
exception while it runs, no `manifest` dict) becomes a `ManifestError` that names the file and
line; a user never sees a bare traceback.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from torchcts.manifest.model import Manifest
from torchcts.manifest.parse import parse_manifest
from torchcts.manifest.problems import ManifestError, Problem, ProblemLog


def load_manifest(path: str | Path) -> tuple[Manifest, tuple[Problem, ...]]:
    """The validated `Manifest` in a file and its warnings; raises `ManifestError` on any error."""
    source = Path(path).resolve()
    raw = read_manifest_dict(source)
    return parse_manifest(raw, source)


def read_manifest_dict(source: Path) -> object:
    """Execute a manifest file and return the value it binds to `manifest`."""
    if not source.is_file():
        hint = "create one with `torchcts init`" if source.name == "manifest.py" else "check the path"
        raise _file_error(source, f"manifest file not found ({hint})")
    try:
        code = compile(source.read_bytes(), str(source), "exec")
    except SyntaxError as exc:
        raise _file_error(source, f"line {exc.lineno}: syntax error: {exc.msg}") from None
    except (OSError, ValueError) as exc:
        raise _file_error(source, f"cannot read the file: {exc}") from None
    namespace = {"__name__": "torchcts_manifest", "__file__": str(source)}
    with _importable_siblings(source.parent):
        try:
            exec(code, namespace)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a manifest may even call sys.exit(); report it, do not die
            raise _file_error(source, _describe_exception(source, exc)) from None
    if "manifest" not in namespace:
        raise _file_error(source, "the file defines no `manifest` dict")
    return namespace["manifest"]


def environment_problems(manifest: Manifest) -> tuple[Problem, ...]:
    """Warnings about this Python environment: a `backend_import` that cannot be found here."""
    log = ProblemLog()
    if manifest.backend_import is not None:
        top = manifest.backend_import.split(".")[0]
        if importlib.util.find_spec(top) is None:
            log.warn(("backend_import",), f"module {top!r} is not installed in this Python environment "
                     f"({sys.executable})", manifest.backend_import)
    return tuple(log.problems)


def _file_error(source: Path, message: str) -> ManifestError:
    log = ProblemLog()
    log.error((), message)
    return ManifestError(source, log.problems)


def _describe_exception(source: Path, exc: BaseException) -> str:
    """'line N: TypeError: ...', with the deepest line of the manifest file in the traceback."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename) == source:
            line = frame.lineno
    where = f"line {line}: " if line is not None else ""
    return f"{where}the manifest raised {type(exc).__name__}: {exc}"


@contextmanager
def _importable_siblings(folder: Path) -> Iterator[None]:
    """Let a manifest import helper modules that sit next to it."""
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        try:
            sys.path.remove(str(folder))
        except ValueError:
            pass
