"""Python warnings raised while an item runs: kept for its record, not shown on the terminal.

Ops warn (UserWarnings about deprecated arguments, TORCH_WARN from C++), and so may Hypothesis or
torch while cases are drawn; a run of hundreds of items would bury its findings under them. The
engine runs each item inside `capture()`, which records every warning (filter "always": each one
counts, whatever ran before in the process) and lets none through to pytest's warnings summary or
stderr. The record gets `warnings: {count, messages}`: how many were raised and the distinct
messages (`Category: text`), at most MAX_MESSAGES of at most MAX_CHARS characters each.

A case run in a forked child (`case_fork`) captures its own warnings and sends its log back; the
parent `merge`s it into the log of the item being captured, so they count where the item runs.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator

import attrs

MAX_MESSAGES = 20
MAX_CHARS = 500


@attrs.define
class WarningLog:
    """The warnings one item raised: how many, and the distinct messages (bounded)."""

    count: int = 0
    messages: list[str] = attrs.field(factory=list)

    def add(self, message: str, count: int = 1) -> None:
        self.count += count
        message = message[:MAX_CHARS]
        if len(self.messages) < MAX_MESSAGES and message not in self.messages:
            self.messages.append(message)

    def as_json(self) -> dict[str, Any]:
        return {"count": self.count, "messages": list(self.messages)}

    def record_fields(self) -> dict[str, Any]:
        """`{"warnings": {...}}` for a record, or nothing when no warning was raised."""
        return {"warnings": self.as_json()} if self.count else {}


_active: list[WarningLog] = []  # the logs of the captures in progress, innermost last


@contextlib.contextmanager
def capture() -> Iterator[WarningLog]:
    """Record every warning raised inside the block in the log it yields; none reaches the terminal
    (the block's own `warnings.catch_warnings` or filters still apply inside it)."""
    log = WarningLog()

    def keep(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        log.add(f"{category.__name__}: {message}")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = keep  # the documented hook; catch_warnings restores the previous one
        _active.append(log)
        try:
            yield log
        finally:
            _active.remove(log)


def merge(data: Any) -> None:
    """Add a log sent back from a case's forked child (`WarningLog.as_json`) to the innermost capture."""
    if not _active or not isinstance(data, dict) or not data.get("count"):
        return
    messages = [m for m in data.get("messages", ()) if isinstance(m, str)]
    log = _active[-1]
    count = int(data["count"])
    for message in messages:
        log.add(message, 0)
    log.count += count
