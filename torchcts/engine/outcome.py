"""How an item's run ends, from the TYPE of what its check raised: the engine's one classifier.

A check that returns passed. The context raises `NotRun(outcome, reason)` when no case said
anything about the backend (every case rejected by the CPU oracle, or none able to run on the
target). Everything else is an exception type: `AssertionError` is a `failed` comparison,
`BackendError` an `error`, `CaseCrashed` a `crashed` case, `CaseFileError` a corpus case that
cannot be replayed. Anything else is an `error` whose kind says whose it is: `harness` only where it is
certainly TorchCTS's (a `HarnessDefect`; on the CPU validation target, where no backend runs; an exception
other than a RuntimeError whose every frame is TorchCTS's own code, its runner's or the standard library's,
`backend_exits.only_own_frames`), else `backend`: an exception whose traceback passes through torch or
backend code (or that cannot be told apart, like a case child's `CaseError`) is the backend's until shown
otherwise, so a backend crashing in Python still fails a replay. No message text decides an outcome
(`missing_kernels` reads it only to name a missing kernel, a `MissingKernelError` the context raised by type).

An `error` verdict says its kind (`error_kind`: missing_kernel, backend, harness, setup, case_file),
and every verdict with an error has an `error_line`: what a console prints (`first_line`). Where the
device's exception behind a failure or error came through torch.compile's wrappers
(`torchcts.engine.error_cause`), the verdict names them (`error_wrappers`, outermost first).
"""

from __future__ import annotations

import re
import sys
import traceback
from typing import Any

import attrs

from torchcts import backend_exits
from torchcts.cases.files import CaseFileError
from torchcts.engine import device_findings
from torchcts.engine.case_errors import BackendError, CaseCrashed, CaseError, HarnessDefect, MissingKernelError
from torchcts.engine.error_cause import find_cause
from torchcts.core.outcomes import NOT_RUN, Outcome

ERROR_CHARS = 4000  # an error summary or traceback in a record is at most this long
LINE_CHARS = 300  # an error_line is at most this long
ERROR_KINDS = ("missing_kernel", "backend", "harness", "setup", "case_file")


class NotRun(Exception):
    """The item executed no case that says anything about the backend: `outcome` (a not-run
    outcome: cpu_contract or runtime_unavailable) with its reason."""

    def __init__(self, outcome: Outcome, reason: str):
        if outcome not in NOT_RUN:
            raise ValueError(f"NotRun needs a not-run outcome, got {outcome!r}")
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason


@attrs.frozen
class Verdict:
    """An item's outcome, why, and the error text a record carries (None unless it failed): in full
    (bounded), as one line, its kind for an `error`, and the missing kernel it names (`MissingKernel`)."""

    outcome: Outcome
    reason: str = ""
    error: str | None = None
    error_kind: str | None = None
    error_line: str | None = None
    missing_kernel: Any = None
    error_wrappers: tuple[str, ...] = ()
    finding: str | None = None  # the device finding (`device_findings`) the error is a symptom of

    def record_fields(self) -> dict[str, Any]:
        """The record's fields about the error (none for a verdict without one)."""
        fields: dict[str, Any] = {}
        if self.error_kind is not None:
            fields["error_kind"] = self.error_kind
        if self.error_line is not None:
            fields["error_line"] = self.error_line
        if self.missing_kernel is not None:
            fields["missing_kernel"] = self.missing_kernel.as_json()
        if self.error_wrappers:
            fields["error_wrappers"] = list(self.error_wrappers)
        if self.finding is not None:
            fields["finding"] = self.finding
        return fields


PASSED = Verdict(Outcome.PASSED)


def classify(exc: BaseException, *, show_traceback: bool = False, device_type: str = "cpu") -> Verdict:
    """The verdict for an exception a check raised on `device_type` (interrupts are never classified: re-raise them
    first), naming the torch.compile wrappers of the device's exception it was raised from."""
    verdict = _classify(exc, show_traceback, device_type)
    wrappers = compile_wrappers(exc)
    if wrappers and verdict.error is not None:
        verdict = attrs.evolve(verdict, error_wrappers=wrappers)
    finding = device_findings.explaining(exc) if verdict.error is not None else None
    return attrs.evolve(verdict, finding=finding) if finding is not None else verdict


def compile_wrappers(exc: BaseException) -> tuple[str, ...]:
    """The torch.compile wrappers (outermost first) of the exception `exc` was raised from (its `__cause__`: the
    device's exception a check compared), or of `exc` itself; () when none, or when no compiled call ran."""
    if "torch._dynamo.exc" not in sys.modules:  # no compiled call in this process: no wrapper to find
        return ()
    for candidate in (exc.__cause__, exc):
        if candidate is not None:
            wrappers = find_cause(candidate).wrappers
            if wrappers:
                return wrappers
    return ()


def _classify(exc: BaseException, show_traceback: bool, device_type: str) -> Verdict:
    if isinstance(exc, NotRun):
        return Verdict(exc.outcome, exc.reason)
    error = error_text(exc, show_traceback)
    line = first_line(error_text(exc))
    if isinstance(exc, (BackendError, AssertionError, CaseCrashed)):  # their own messages say what happened
        line = first_line(str(exc)) or line
    if isinstance(exc, CaseFileError):
        return Verdict(Outcome.ERROR, "the corpus case cannot be replayed", error, "case_file", line)
    if isinstance(exc, CaseCrashed):
        return Verdict(Outcome.CRASHED, "a case crashed the process running it", error, error_line=line)
    if isinstance(exc, MissingKernelError):
        return Verdict(Outcome.ERROR, f"the backend has no kernel for {exc.kernel.overload} "
                                      f"({exc.kernel.dispatch_key})", error, "missing_kernel",
                       exc.kernel.describe(), exc.kernel)
    if isinstance(exc, BackendError):
        return Verdict(Outcome.ERROR, "the backend raised where the CPU oracle did not", error, "backend", line)
    if isinstance(exc, AssertionError):
        return Verdict(Outcome.FAILED, "the backend's result differs from the CPU oracle's", error, error_line=line)
    if certainly_torchcts(exc, device_type):
        return Verdict(Outcome.ERROR, "harness: unexpected exception in TorchCTS's own code (a TorchCTS bug)", error,
                       "harness", line)
    return Verdict(Outcome.ERROR, "unexpected exception in code that reaches the device (a backend crash in Python, "
                                  "unless a TorchCTS bug the traceback shows)", error, "backend", line)


def certainly_torchcts(exc: BaseException, device_type: str) -> bool:
    """Whether an unexpected exception is certainly TorchCTS's own: a `HarnessDefect`; anything on the CPU validation
    target (CPU is the reference there, no backend runs); an exception raised with only TorchCTS's, its runner's and
    the standard library's frames on the way (`backend_exits.only_own_frames`) that is no RuntimeError (what torch's
    C++ raises for a device's failure, from whichever Python frame called it) nor a case child's stand-in."""
    if isinstance(exc, HarnessDefect) or device_type.partition(":")[0] == "cpu":
        return True
    return not isinstance(exc, RuntimeError) and backend_exits.only_own_frames(exc.__traceback__)


def setup_failure(exc: BaseException, *, show_traceback: bool = False) -> Verdict:
    """The verdict when the item's context could not even be built (its op, its case file)."""
    if isinstance(exc, CaseFileError):
        return classify(exc, show_traceback=show_traceback)
    return Verdict(Outcome.ERROR, "harness: the item failed during setup", error_text(exc, show_traceback), "setup",
                   first_line(error_text(exc)))


def error_text(exc: BaseException, show_traceback: bool = False) -> str:
    """`Type: message` and the exception's notes, or with `show_traceback` its whole traceback (its last
    ERROR_CHARS characters: the exception itself is at the end). A case child's `CaseError` names the
    child's exception type, as the same exception raised in one process would."""
    if show_traceback:
        return "".join(traceback.format_exception(exc))[-ERROR_CHARS:]
    text = str(exc) if isinstance(exc, CaseError) else f"{type(exc).__name__}: {exc}"
    notes = getattr(exc, "__notes__", None)
    if notes:
        text += "\n" + "\n".join(str(n) for n in notes)
    return text[:ERROR_CHARS]


# Where a long first line stops saying anything new: the dispatcher's explanation after "Could not run
# 'aten::X' with arguments from the 'K' backend." (its backend list and "registered at" lines follow).
_FILLER = re.compile(r"(?<=\.) (This could be because the operator doesn't exist|If you are a Facebook employee)")


def first_line(text: str | None) -> str | None:
    """The first meaningful line of an error text, at most LINE_CHARS characters: the first non-blank line,
    cut where the dispatcher's explanation starts; for a Python traceback, its last line (the exception)."""
    if not text:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    filler = _FILLER.search(line)
    if filler is not None:
        line = line[:filler.start()]
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 3] + "..."
