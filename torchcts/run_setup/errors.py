"""The two ways a run does not start: bad input (`SessionError`) and a known-crash audit that ran instead."""

from __future__ import annotations


class SessionError(Exception):
    """A run that cannot start: the message says what to fix."""


class AuditDone(Exception):
    """`--known-segfault-audit` ran instead of the run: its lines, and whether every rule matched."""

    def __init__(self, lines: list[str], ok: bool):
        super().__init__("known-crash audit")
        self.lines, self.ok = lines, ok
