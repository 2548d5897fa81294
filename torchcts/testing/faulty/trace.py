"""The faulty device's trace: which aten overloads (and named steps that are no overload: saving, streams, pinned
memory, autocast, a seeded bug firing) ran on the device since `start_trace`. The run records it per item
(`device_ops`), and the selftest learns from it which items reach which bugs.

Apart from the device's generic path (`device.run_on_cpu` notes each overload here) so that the device's parts note
their steps without importing the device.
"""

from __future__ import annotations

from typing import Any

_traced: set[str] | None = None


def start_trace() -> None:
    """Start (or restart) recording which aten overloads run on the device."""
    global _traced
    _traced = set()


def tracing() -> bool:
    """Whether the trace is recording (`start_trace`)."""
    return _traced is not None


def take_trace() -> list[str]:
    """The overloads run since `start_trace` (sorted), and restart the record."""
    global _traced
    found, _traced = sorted(_traced or ()), set()
    return found


def note_step(name: str) -> None:
    """Record a step of the device that is no aten overload (`bug_model.SAVE_STEP`, ...) in the trace, as
    `run_on_cpu` records overloads: the selftest learns from the trace which items reach which bugs."""
    if _traced is not None:
        _traced.add(name)


def note_overload(func: Any) -> None:
    """Record an aten overload run on the device (`run_on_cpu`'s every call)."""
    if _traced is not None:
        _traced.add(str(func))
