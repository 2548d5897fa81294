"""How an item's run ends, from the TYPE of what its check raised: the engine's one classifier.

A check that returns passed. The context raises `NotRun(outcome, reason)` when no case said
anything about the backend (every case rejected by the CPU oracle, or none able to run on the
target). Everything else is an exception type: `AssertionError` is a `failed` comparison,
`BackendError` an `error`, `CaseCrashed` a `crashed` case, `CaseFileError` a corpus case that
cannot be replayed, anything else a harness `error` (also when a case's child raised it: `CaseError`
stands for it in the parent). No message text is parsed.
"""

from __future__ import annotations

import traceback

import attrs

from torchcts.cases.files import CaseFileError
from torchcts.outcomes import NOT_RUN, Outcome

ERROR_CHARS = 4000  # an error summary or traceback in a record is at most this long


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
    """An item's outcome, why, and the error text a record carries (None unless it failed)."""

    outcome: Outcome
    reason: str = ""
    error: str | None = None


PASSED = Verdict(Outcome.PASSED)


def classify(exc: BaseException, *, show_traceback: bool = False) -> Verdict:
    """The verdict for an exception a check raised (interrupts are never classified: re-raise them first)."""
    from torchcts.engine.context import BackendError, CaseCrashed

    if isinstance(exc, NotRun):
        return Verdict(exc.outcome, exc.reason)
    error = error_text(exc, show_traceback)
    if isinstance(exc, CaseFileError):
        return Verdict(Outcome.ERROR, "the corpus case cannot be replayed", error)
    if isinstance(exc, CaseCrashed):
        return Verdict(Outcome.CRASHED, "a case crashed the process running it", error)
    if isinstance(exc, BackendError):
        return Verdict(Outcome.ERROR, "the backend raised where the CPU oracle did not", error)
    if isinstance(exc, AssertionError):
        return Verdict(Outcome.FAILED, "the backend's result differs from the CPU oracle's", error)
    return Verdict(Outcome.ERROR, "harness: unexpected exception (a TorchCTS bug, or a backend crash in Python)", error)


def setup_failure(exc: BaseException, *, show_traceback: bool = False) -> Verdict:
    """The verdict when the item's context could not even be built (its op, its case file)."""
    if isinstance(exc, CaseFileError):
        return classify(exc, show_traceback=show_traceback)
    return Verdict(Outcome.ERROR, "harness: the item failed during setup", error_text(exc, show_traceback))


def error_text(exc: BaseException, show_traceback: bool = False) -> str:
    """`Type: message` and the exception's notes, or with `show_traceback` its whole traceback (its last
    ERROR_CHARS characters: the exception itself is at the end). A case child's `CaseError` names the
    child's exception type, as the same exception raised in one process would."""
    from torchcts.engine.case_fork import CaseError

    if show_traceback:
        return "".join(traceback.format_exception(exc))[-ERROR_CHARS:]
    text = str(exc) if isinstance(exc, CaseError) else f"{type(exc).__name__}: {exc}"
    notes = getattr(exc, "__notes__", None)
    if notes:
        text += "\n" + "\n".join(str(n) for n in notes)
    return text[:ERROR_CHARS]
