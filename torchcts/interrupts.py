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

A Python handler runs only when the main thread runs Python: a backend's native call that masks
signals or retries its wait on EINTR, or backend code that swallows KeyboardInterrupt in a loop,
would keep the command running forever. So `handling()` also keeps a watchdog thread that learns
of each signal from Python's wakeup fd (written by the C-level handler, whatever the main thread
does): a command still running STOP_GRACE_S after the first signal (AGAIN_GRACE_S after a later
one) is ended from there. It says so on stderr, lets the callbacks of `when_stuck` write what
the command must leave (run.json marked partial), kills its child processes and exits 128 + the
signal's number (`os._exit`: the main thread is stuck and cannot unwind). A native call that
holds the GIL stops the watchdog too; only SIGKILL ends that one.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
STOP_GRACE_S = 5.0  # a command still running this long after a signal is ended by the watchdog
AGAIN_GRACE_S = 2.0  # ... or this long after a second signal (Ctrl-C pressed again)
FINISH_GRACE_S = 60.0  # ... unless its main thread claimed its final write: it is finishing, not stuck
EXIT_GRACE_S = 5.0  # `exit_now`: exit handlers still running this long (a stuck child joined) are cut short

_received: list[int] = []  # signal numbers, in the order they arrived
_state: dict[str, Any] = {"depth": 0, "deferring": 0, "finishing_since": None}


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
        _state["finishing_since"] = None
    previous = {}
    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, _handler)
    watchdog = _Watchdog.start() if not _state["depth"] else None
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if watchdog is not None:
            watchdog.stop()


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


def exit_now(code: int) -> None:
    """End a command a signal stopped, once its files are written: the atexit handlers run (they stop worker
    processes) and the output is flushed, but the interpreter's teardown, seconds for torch and the op database's
    heap on a loaded machine, is skipped, so the process is gone within moments of its last write."""
    import atexit

    def cut_short() -> None:  # an exit handler waits on a stuck child: the files are written, end anyway
        kill_children()
        os._exit(code)

    timer = threading.Timer(EXIT_GRACE_S, cut_short)
    timer.daemon = True
    timer.start()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


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


# -- the watchdog: a command whose main thread does not stop is ended ---------------------------------

_stuck_callbacks: list[Callable[[], None]] = []


@contextlib.contextmanager
def when_stuck(write: Callable[[], None]) -> Iterator[None]:
    """Inside the block, `write()` runs in the watchdog's thread before it ends a command that did not stop
    (the main thread is stuck): what the command must leave behind (run.json marked partial). `write` must
    not wait for the main thread; `FinalWrite` keeps it from writing what the main thread is writing."""
    _stuck_callbacks.append(write)
    try:
        yield
    finally:
        _stuck_callbacks.remove(write)


class FinalWrite:
    """A command's last write (run.json), done once: by the main thread as it stops, or by the watchdog when
    the main thread is stuck; never both. `claim()` is True for the first caller only; a later caller that
    must not end before the write is whole waits (`wait`) for `done()`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()

    def claim(self) -> bool:
        """Whether this caller writes. The main thread's claim tells the watchdog the command is finishing, not
        stuck: it waits FINISH_GRACE_S for it (the records recounted, the report), unless a signal comes again."""
        claimed = self._lock.acquire(blocking=False)
        if claimed and threading.current_thread() is threading.main_thread() and _state["finishing_since"] is None:
            _state["finishing_since"] = time.monotonic()
        return claimed

    def done(self) -> None:
        self._done.set()

    def wait(self, timeout_s: float = AGAIN_GRACE_S) -> None:
        self._done.wait(timeout_s)


class _Watchdog:
    """The thread that ends a command still running STOP_GRACE_S after a signal (see the module's doc)."""

    def __init__(self, read_fd: int, write_fd: int, previous_fd: int, stderr_fd: int):
        self.read_fd, self.write_fd, self.previous_fd = read_fd, write_fd, previous_fd
        self.stderr_fd = stderr_fd  # stderr as it was when the watchdog started: pytest's capture may own fd 2 now
        self.stopped = False

    @classmethod
    def start(cls) -> "_Watchdog | None":
        """A watchdog watching this process's signals, or None where it cannot (no pipe, not the main thread)."""
        try:
            read_fd, write_fd = os.pipe()
        except OSError:  # out of file descriptors: the signals still stop the command, unwatched
            return None
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        try:
            previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except (ValueError, OSError):  # not the main thread of the main interpreter
            os.close(read_fd)
            os.close(write_fd)
            return None
        try:
            stderr = os.dup(2)
        except OSError:
            stderr = -1
        watchdog = cls(read_fd, write_fd, previous, stderr)
        threading.Thread(target=watchdog.watch, name="torchcts-interrupt-watchdog", daemon=True).start()
        return watchdog

    def stop(self) -> None:
        """The command stopped (or ran to its end): the watchdog ends too; the previous wakeup fd is back."""
        signal.set_wakeup_fd(self.previous_fd)  # no signal writes to our pipe from here on
        self.stopped = True
        try:
            os.write(self.write_fd, b"\0")  # wakes the thread, which closes its ends
        except OSError:
            pass
        os.close(self.write_fd)

    def watch(self) -> None:
        first, first_at, deadline, count, extended = None, 0.0, None, 0, False
        try:
            while not self.stopped:
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select([self.read_fd], [], [], timeout)
                if self.stopped:
                    return
                if not ready:  # the deadline passed and the command still runs
                    finishing = _state["finishing_since"]
                    if finishing is not None and count == 1 and not extended:  # writing its results: let it end
                        deadline, extended = max(deadline, finishing + FINISH_GRACE_S), True
                        continue
                    _end_stuck_command(first, count, self.stderr_fd, time.monotonic() - first_at)
                    return
                try:
                    data = os.read(self.read_fd, 512)
                except BlockingIOError:
                    continue
                for number in data:
                    if number not in SIGNALS:
                        continue
                    now, count = time.monotonic(), count + 1
                    if first is None:
                        first, first_at, deadline = number, now, now + STOP_GRACE_S
                    else:
                        deadline = min(deadline, now + AGAIN_GRACE_S)
        finally:
            for fd in (self.read_fd, self.stderr_fd):
                if fd >= 0:
                    os.close(fd)


def _end_stuck_command(signum: int, signals: int, stderr_fd: int, waited_s: float) -> None:
    """From the watchdog's thread: say why, write what must be left (`when_stuck`), kill the child processes and
    exit 128 + the signal's number without unwinding the stuck main thread."""
    if not _received:  # its Python handler never ran (the main thread is stuck in native code): remember it now
        _received.append(signum)
    name = signal.Signals(signum).name
    waited = f"{waited_s:.0f} s after {name}" if signals == 1 else f"after {signals} signals ({name} first)"
    _say(stderr_fd, f"torchcts: still running {waited} (stuck in a call that does not return to Python, such as "
                    f"a backend's native code, or in code that catches KeyboardInterrupt); ending it now\n")
    for write in list(_stuck_callbacks):
        try:
            write()
        except BaseException as exc:  # noqa: BLE001 - the command ends anyway; say what was not written
            _say(stderr_fd, f"torchcts: could not finish writing the results: {type(exc).__name__}: {exc}\n")
    kill_children()
    os._exit(exit_code(signum))


def _say(fd: int, text: str) -> None:
    try:
        os.write(fd if fd >= 0 else 2, text.encode(errors="replace"))  # not sys.stderr: the stuck thread may hold its lock
    except OSError:
        pass


def kill_children() -> None:
    """SIGKILL this process's descendants (Linux: /proc), its children's children too (a compile worker's pool, a
    spawned worker's helpers): all are found first, then killed, since a killed parent's children move to init
    and could no longer be found. Elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    for pid in _descendants(os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _descendants(root: int, limit: int = 10_000) -> list[int]:
    """The process ids below `root`, parents before their children (at most `limit`: a fork bomb stops the walk)."""
    found: list[int] = []
    seen = {root}
    waiting = [root]
    while waiting and len(found) < limit:
        parent = waiting.pop()
        for listing in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                children = [int(pid) for pid in listing.read_text().split()]
            except (OSError, ValueError):
                continue
            new = [pid for pid in children if pid not in seen]
            seen.update(new)
            found += new
            waiting += new
    return found[:limit]
