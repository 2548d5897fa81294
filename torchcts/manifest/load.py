"""Load a manifest file: run it in a child process, take its `manifest` dict as data, validate it.

A manifest is code, so it can fail like code. Every failure (missing file, syntax error, an
exception while it runs, `sys.exit`, `os._exit`, a signal, a hang, no `manifest` dict, a value
whose methods raise) becomes a `ManifestError` that names the file and line; a user never sees a
bare traceback, and a manifest can never end or change the process that loads it: it runs in a
child (`torchcts.manifest.child`), which sends back only plain data (`torchcts.manifest.plain`).
A `backend_import` module is code too: `import_backend` imports it in a child first, so one that
exits is an error naming it, not a silent end of the run.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

from torchcts.manifest import child, privateuse1
from torchcts.manifest.model import Manifest
from torchcts.manifest.parse import parse_manifest
from torchcts.manifest.plain import exception_text, from_json, to_json, to_plain
from torchcts.manifest.problems import ManifestError, Problem, ProblemLog
from torchcts.manifest.targets import install_hint

MAX_MESSAGE_CHARS = 1000


class BackendImportError(Exception):
    """A `backend_import` module that cannot be imported; the message says how it failed."""


def load_manifest(path: str | Path) -> tuple[Manifest, tuple[Problem, ...]]:
    """The validated `Manifest` in a file and its warnings; raises `ManifestError` on any error."""
    source = Path(path).resolve()
    raw = read_manifest_dict(source)
    return parse_manifest(raw, source)


def read_manifest_dict(source: Path) -> object:
    """Run a manifest file in a child process and return the value it binds to `manifest`, as plain data.

    What the manifest prints goes to stderr (stdout stays the command's own)."""
    if not source.is_file():
        hint = "create one with `torchcts init`" if source.name == "manifest.py" else "check the path"
        raise _file_error(source, f"manifest file not found ({hint})")
    try:
        limit = child.timeout_s()
    except ValueError as exc:
        raise _file_error(source, str(exc)) from None
    outcome = child.run_in_child(run_manifest_file, str(source), limit)
    _forward(outcome.output)
    if outcome.ended is not None:
        raise _file_error(source, _ended(outcome.ended))
    try:
        problems = [(tuple(from_json(path)), _one_line(message)) for path, message in outcome.answer["problems"]]
        raw = from_json(outcome.answer["manifest"]) if "manifest" in outcome.answer else None
    except (KeyError, TypeError, ValueError, RecursionError):
        raise _file_error(source, "the process running the manifest sent back a malformed answer (did the "
                                  "manifest write to file descriptors it does not own?)") from None
    if problems:
        log = ProblemLog()
        for path, message in problems:
            log.error(path, message)
        raise ManifestError(source, log.problems)
    return raw


def run_manifest_file(path: str) -> dict[str, Any]:
    """In the child: run the file, read `manifest` into plain data; the answer `read_manifest_dict` decodes."""
    source = Path(path)
    try:
        code = compile(source.read_bytes(), path, "exec")
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if isinstance(exc.lineno, int) else ""
        return _answer_problem(f"{where}syntax error: {exception_text(exc.msg)}")
    except OSError as exc:
        return _answer_problem(f"cannot read the file: {exception_text(exc)}")
    except (RecursionError, MemoryError) as exc:
        return _answer_problem(f"cannot compile the file: {type(exc).__name__} (an expression nested too deeply?)")
    except Exception as exc:  # noqa: BLE001 - e.g. ValueError for a null byte
        return _answer_problem(f"cannot compile the file: {type(exc).__name__}: {exception_text(exc)}")
    namespace = {"__name__": "torchcts_manifest", "__file__": path}
    sys.path.insert(0, str(source.parent))  # helper modules next to the manifest are importable
    recursion_limit = sys.getrecursionlimit()
    try:
        exec(code, namespace)
    except BaseException as exc:  # noqa: BLE001 - sys.exit(), KeyboardInterrupt, anything: report it
        return _answer_problem(_describe_exception(source, exc))
    finally:
        sys.setrecursionlimit(recursion_limit)  # reading the value must not fail on a limit the manifest set
    if "manifest" not in namespace:
        return _answer_problem("the file defines no `manifest` dict")
    plain, _ = to_plain(namespace["manifest"])  # unreadable parts carry their problem; validation reports them
    return {"manifest": to_json(plain), "problems": []}


def import_backend(name: str, device: str | None = None) -> None:
    """Import a `backend_import` module, once a child process has shown that importing it returns.

    The child costs a fork and one more import of the module; without it, a module that calls
    `os._exit(0)` or kills its process would end `torchcts run` with status 0 and no output.
    Raises `BackendImportError` naming how the import failed; where the failure is about PrivateUse1 and the
    slot was taken before it ran by another device than the manifest's `device` (another package's
    `torch.backends` entry point at `import torch`), the message leads with that cause."""
    if name in sys.modules:
        return
    taken_by = privateuse1.holder()  # before the import: the slot's holder is not this backend
    try:
        outcome = child.run_in_child(import_module_answer, name, child.timeout_s())
    except ValueError as exc:
        raise BackendImportError(str(exc)) from None
    if outcome.ended is not None:
        failure = _ended(outcome.ended, "importing it", "a backend module")
    elif isinstance(outcome.answer, dict):
        failure = outcome.answer.get("error")
    else:
        failure = "the process importing it sent back a malformed answer"
    if failure:
        _forward(outcome.output)  # what the module printed before it failed; on success it prints again below
        raise BackendImportError(_with_cause(str(failure), taken_by, device))
    try:
        importlib.import_module(name)
    except KeyboardInterrupt:
        raise  # it imported cleanly in the child: this is a real Ctrl-C
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are errors, not the end of the run
        raise BackendImportError(_with_cause(_exception_line(exc), taken_by, device)) from None


def _with_cause(failure: str, taken_by: str | None, device: str | None = None) -> str:
    """A backend's import failure in one line; when it is about PrivateUse1 (`privateuse1.blames_privateuse1`) and
    the slot was taken before the backend ran, who took it and how to turn that off. Not when the holder is the
    manifest's own device (a backend registering itself through its own entry point: turning autoload off would
    stop it registering) nor for any other failure (a missing config file is not the slot's fault)."""
    failure = _one_line(failure)
    own = device is not None and taken_by is not None and taken_by.lower() == device.split(":")[0].strip().lower()
    if taken_by is None or own or not privateuse1.blames_privateuse1(failure, taken_by):
        return failure
    return _one_line(f"{privateuse1.explain(taken_by)} ({failure})")


def import_module_answer(name: str) -> dict[str, Any]:
    """In the child: import the module; an answer naming the exception it raised, if any."""
    try:
        importlib.import_module(name)
    except BaseException as exc:  # noqa: BLE001
        return {"error": _exception_line(exc)}
    return {"error": None}


def environment_problems(manifest: Manifest) -> tuple[Problem, ...]:
    """Warnings about this Python environment: a `backend_import` that cannot be found here."""
    log = ProblemLog()
    if manifest.backend_import is not None:
        top = manifest.backend_import.split(".")[0]
        if importlib.util.find_spec(top) is None:
            hint = install_hint(top)
            log.warn(("backend_import",), f"module {top!r} is not installed in this Python environment "
                     f"({sys.executable})" + (f"; install it: {hint}" if hint else ""), manifest.backend_import)
    return tuple(log.problems)


def _ended(how: str, what: str = "the manifest", kind: str = "a manifest") -> str:
    """A child that ended without an answer, as a problem: who ended it and how."""
    if how.startswith(("exited", "was killed")):
        return (f"{what} ended the process running it ({how}) before TorchCTS could read the result; "
                f"{kind} must not exit or kill its process")
    if how.startswith("did not finish"):
        return f"{what} {how}"
    return f"the process running {what} {how}"


def _file_error(source: Path, message: str) -> ManifestError:
    log = ProblemLog()
    log.error((), message)
    return ManifestError(source, log.problems)


def _answer_problem(message: str) -> dict[str, Any]:
    return {"problems": [[to_json(()), message]]}


def _describe_exception(source: Path, exc: BaseException) -> str:
    """'line N: TypeError: ...', with the deepest line of the manifest file in the traceback."""
    line = None
    try:
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == str(source):
                line = frame.lineno
    except Exception:  # noqa: BLE001 - a traceback is a nicety here
        pass
    where = f"line {line}: " if line is not None else ""
    return f"{where}the manifest raised {_exception_line(exc)}"


def _exception_line(exc: BaseException) -> str:
    text = exception_text(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _one_line(message: str) -> str:
    text = " ".join(str(message).split())
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


def _forward(output: str) -> None:
    """Show what a child printed, on stderr: it is the manifest's (or module's) own output."""
    if not output:
        return
    try:
        sys.stderr.write(output if output.endswith("\n") else output + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # a closed or missing stderr: the output is only a nicety
        pass
