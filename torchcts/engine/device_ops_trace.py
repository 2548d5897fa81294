"""The trace of the aten overloads a device ran during an item (`device_ops` in its record), where the device keeps one.

A device that records what runs on it (the faulty test device, `torchcts.testing.faulty`) hands its trace's start
and take functions in when it registers; the engine starts the trace before a traced item and takes it after,
without importing any device (the selftest reads the records to learn which items reach which seeded bugs).
"""

from __future__ import annotations

from typing import Callable

_start: Callable[[], None] | None = None
_take: Callable[[], list[str]] | None = None


def provide(start: Callable[[], None], take: Callable[[], list[str]]) -> None:
    """The device's trace: `start` (re)starts recording, `take` returns what ran since (sorted) and restarts."""
    global _start, _take
    _start, _take = start, take


def start() -> None:
    """Start the device's trace (nothing when no device keeps one)."""
    if _start is not None:
        _start()


def take() -> list[str]:
    """The overloads the device ran since `start`, or [] when no device keeps a trace."""
    return _take() if _take is not None else []
