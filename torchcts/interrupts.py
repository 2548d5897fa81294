"""Ctrl-C, SIGTERM and SIGHUP stop a command the same way: cleanly, with what it found kept.

CI timeouts, `timeout` and container stops send SIGTERM; a closed terminal sends SIGHUP. Inside
`handling()` each of them raises `Interrupted` (a KeyboardInterrupt, so pytest and Hypothesis
stop as they do for Ctrl-C) and is also remembered. The memory matters: Python drops an
exception raised in a gc callback, a `__del__` or a generator being finalized ("Exception
ignored in ..."), so a signal that lands there is lost as an exception; the run asks
`check()` between items and between cases and stops anyway. `deferred()` holds the exception
back while a few lines that must not be cut in half run (a record and its count, run.json).

A command stopped by a signal exits with 128 + the signal's number, as a shell reports a process
the signal killed: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP. A signal the process was
started ignoring (`nohup` ignores SIGHUP) stays ignored.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Iterator

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

_received: list[int] = []  # signal numbers, in the order they arrived
_state = {"depth": 0, "deferring": 0}


class Interrupted(KeyboardInterrupt):
    """A signal asked the process to stop (raised by the handler, or by `check()`)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _handler(signum: int, frame: Any) -> None:
    _received.append(signum)
    if not _state["deferring"]:
        raise Interrupted(signum)


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into `Interrupted` inside the block; the previous handlers after.

    Nests (the outermost block forgets earlier signals); outside the main thread it does nothing,
    since only the main thread can set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if not _state["depth"]:
        _received.clear()
    previous = {}
    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, _handler)
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def requested() -> int | None:
    """The first signal that asked to stop since the outermost `handling()` began, or None."""
    return _received[0] if _received else None


def signal_name() -> str | None:
    signum = requested()
    return signal.Signals(signum).name if signum is not None else None


def check() -> None:
    """Inside `handling()`: raise `Interrupted` if a signal asked to stop, even if its exception was
    swallowed on the way. Outside it nothing (a signal of a run that has ended stops nothing more)."""
    signum = requested()
    if signum is not None and _state["depth"] and not _state["deferring"]:
        raise Interrupted(signum)


@contextlib.contextmanager
def deferred(raise_at_end: bool = True) -> Iterator[None]:
    """Signals inside the block are remembered, not raised; one that arrived is raised at its end
    (with `raise_at_end`; else the caller, already stopping, asks `requested()`)."""
    before = len(_received)
    _state["deferring"] += 1
    try:
        yield
    finally:
        _state["deferring"] -= 1
    if raise_at_end and len(_received) > before and not _state["deferring"]:
        raise Interrupted(_received[before])


def exit_code(signum: int) -> int:
    """128 + the signal's number: what a shell reports for a process that signal stopped."""
    return 128 + int(signum)


def from_signal(exc: BaseException) -> bool:
    """Whether `exc` is a stop a signal asked for (the user's Ctrl-C, SIGTERM, SIGHUP), not code that raised a
    KeyboardInterrupt itself (`backend_exits`): `Interrupted`, or a KeyboardInterrupt when a signal arrived or
    when SIGINT's handler raises one without remembering it (Python's default, or someone else's). Where SIGINT
    is ignored (isolated children, spawned workers) or is ours with no signal received, no signal raised it."""
    if not isinstance(exc, KeyboardInterrupt):
        return False
    if isinstance(exc, Interrupted) or (_state["depth"] and requested() is not None):
        return True
    handler = signal.getsignal(signal.SIGINT)
    return handler is not _handler and handler not in (signal.SIG_IGN, signal.SIG_DFL)
