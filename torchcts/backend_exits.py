"""A backend's own exits while TorchCTS runs its code end one item (or probe), never the run.

Backend code -- a backend's kernels, a custom container decoder, a hook or optimizer step a suite
calls, a custom property -- can leave by Python's back doors: `sys.exit` (SystemExit), a
KeyboardInterrupt no signal raised, GeneratorExit, or ending its process: `os._exit`, a signal to
its own process (`os.kill(os.getpid(), SIGKILL)`, `os.killpg`, `signal.raise_signal`,
`signal.pthread_kill`). The first kind is caught where an item's check runs (`is_backend_exit`);
the second is intercepted while an item or probe runs (`guard()`): the call raises
`ProcessEndRequested` instead of ending the process (the run's own SIGTERM handler would take a
SIGTERM for the user's). Every message names the module and function that did it (`culprit`): the
innermost frame outside torch, TorchCTS, Hypothesis, pytest and Python's standard library.

The user's Ctrl-C, SIGTERM and SIGHUP still stop the run (`interrupts.from_signal` tells them from
a raised KeyboardInterrupt; once the user's signal arrived, every exit propagates: vendor code's
`except KeyboardInterrupt: sys.exit(130)` is the user's stop passing through, not the backend's exit).

Holes (outside isolation these still end the run, as a crash costs one item only where the item runs
isolated): a native crash (a segfault in C code, `os.abort`, a signal sent from C or via ctypes);
`os._exit` or a signal called through a reference taken before the guard began (`from os import _exit`
at import time: the guard replaces the functions of `os`, `posix`, `signal` and `_signal`, not copies
of them); another thread, including one the backend or a decoder starts (the guard holds in the thread
running the item); a timer (`signal.setitimer`, `signal.alarm`: SIGALRM's default action ends the
process when it fires); a child process signalling its parent.
"""

from __future__ import annotations

import _signal
import contextlib
import functools
import os
import posix
import signal
import site
import sys
import sysconfig
import threading
from types import FrameType, TracebackType
from typing import Any, Iterator

from torchcts import interrupts

# packages whose frames are never the culprit: TorchCTS itself, what runs it, and what it runs on
HARNESS_PACKAGES = frozenset({"torch", "torchgen", "functorch", "torchcts", "hypothesis", "_pytest", "pytest",
                              "pluggy", "xdist", "execnet", "attr", "attrs", "numpy", "sortedcontainers"})
# the default action of these ignores them: sending one to ourselves ends nothing
HARMLESS_SIGNALS = frozenset(getattr(signal, name) for name in ("SIGCHLD", "SIGURG", "SIGWINCH", "SIGCONT")
                             if hasattr(signal, name))


class ProcessEndRequested(BaseException):
    """Backend code asked to end the process running it (`how`: "os._exit(3)", "os.kill(own process, SIGKILL)",
    ...) at `culprit`; raised in place of the call while `guard()` is on. A BaseException: nothing that catches
    Exception swallows it on the way out."""

    def __init__(self, how: str, culprit: str, signal_name: str | None = None):
        super().__init__(f"{how} called in {culprit}")
        self.how, self.culprit, self.signal_name = how, culprit, signal_name


def is_backend_exit(exc: BaseException) -> bool:
    """Whether `exc` (not an Exception) is code leaving an item -- sys.exit, a KeyboardInterrupt no signal
    raised, GeneratorExit, `ProcessEndRequested`, pytest's skip or fail in a custom property -- rather than the
    user stopping the run (`interrupts.from_signal`), which must propagate."""
    if isinstance(exc, Exception) or _user_stopping():
        return False
    if isinstance(exc, BaseExceptionGroup):  # one of its exceptions the user's interrupt: the run stops
        return exc.subgroup(lambda inner: not isinstance(inner, BaseExceptionGroup)
                            and interrupts.from_signal(inner)) is None
    return not interrupts.from_signal(exc)


def _user_stopping() -> bool:
    """Whether the user's signal arrived in the run under way (`interrupts.handling()`): whatever leaves then is the
    stop passing through (a vendor's `except KeyboardInterrupt: sys.exit(130)`), never the backend's own exit."""
    return bool(interrupts._state["depth"]) and interrupts.requested() is not None


def users_stop(exc: BaseException) -> BaseException:
    """What to raise for an exit that is not the backend's: `exc`, or once the user's signal arrived, that signal's
    `interrupts.Interrupted` (the run's stop, whatever vendor code turned it into on the way: a SystemExit(130))."""
    if _user_stopping() and not isinstance(exc, KeyboardInterrupt):
        return interrupts.Interrupted(interrupts.requested())
    return exc


def describe(exc: BaseException) -> str:
    """One line naming what left and where: "SystemExit(4) raised in vendor.quant.decode (vendor/quant.py:12)"."""
    if isinstance(exc, ProcessEndRequested):
        return str(exc)
    what = f"{type(exc).__name__}({_brief_args(exc)})" if exc.args else type(exc).__name__
    origin = culprit_of_traceback(exc.__traceback__)
    return f"{what} raised in {origin}" if origin else f"{what} raised (no Python frame names where)"


def blames_backend(exc: BaseException) -> bool:
    """Whether a frame outside the harness raised `exc` (else TorchCTS's own code did: a harness error)."""
    return isinstance(exc, ProcessEndRequested) or _innermost(_traceback_frames(exc.__traceback__), False) is not None


def _brief_args(exc: BaseException) -> str:
    text = ", ".join(repr(arg) for arg in exc.args)
    return text if len(text) <= 80 else text[:77] + "..."


# -- where: the innermost frame outside the harness ------------------------------------------------

def culprit_of_traceback(tb: TracebackType | None) -> str | None:
    """`module.function (file:line)` of the innermost frame of `tb` outside the harness packages and the
    standard library; else the innermost frame at all; None for a traceback without frames."""
    return _innermost(_traceback_frames(tb), True)


def culprit_of_frame(frame: FrameType | None) -> str:
    """The same for a running call: `frame` and its callers, innermost first."""
    frames = []
    while frame is not None:
        frames.append((frame, frame.f_lineno))
        frame = frame.f_back
    return _innermost(list(reversed(frames)), True) or "an unknown caller"


def _traceback_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames  # outermost first


def _innermost(frames: list[tuple[FrameType, int]], fallback: bool) -> str | None:
    for frame, line in reversed(frames):
        if not _harness_frame(frame):
            return _where(frame, line)
    if fallback:
        for frame, line in reversed(frames):
            if frame.f_globals.get("__name__") != __name__:
                return _where(frame, line)
    return None


def _where(frame: FrameType, line: int) -> str:
    code = frame.f_code
    module = frame.f_globals.get("__name__") or "?"
    name = getattr(code, "co_qualname", code.co_name)
    return f"{module}.{name} ({code.co_filename}:{line})"


def _harness_frame(frame: FrameType) -> bool:
    module = str(frame.f_globals.get("__name__") or "")
    top = module.partition(".")[0]
    if top in HARNESS_PACKAGES or (top in sys.stdlib_module_names and top != "__main__"):
        return True
    filename = os.path.abspath(frame.f_code.co_filename)
    return filename.startswith("<frozen ") or any(filename.startswith(folder) for folder in _harness_folders()) \
        or in_stdlib(filename)


def _harness_folders() -> list[str]:
    """Folders whose files are the harness's whatever their modules are called (pytest may import a property
    file under another name): TorchCTS's packages (the suites and strategies live outside `torchcts/`), torch.
    Found when an exit is described, which is rare: nothing is cached."""
    return _package_folders("torchcts", "torchcts.properties", "torchcts.strategies", "torch")


def _package_folders(*names: str) -> list[str]:
    import importlib.util

    folders: set[str] = set()
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            folders.update(spec.submodule_search_locations)
    return [os.path.join(os.path.abspath(folder), "") for folder in folders]


def in_stdlib(filename: str) -> bool:
    """Whether `filename` is a file of Python's standard library: under its folder but not under a folder packages
    are installed in, which sits inside it for a Python outside a venv (pyenv, conda, a Docker image:
    `lib/python3.X/site-packages`): a vendor's package there is never the standard library."""
    filename = os.path.abspath(filename)
    stdlib, installed = _stdlib_and_site_folders()
    return any(filename.startswith(folder) for folder in stdlib) \
        and not any(filename.startswith(folder) for folder in installed)


@functools.lru_cache(maxsize=1)
def _stdlib_and_site_folders() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the standard library's folders, the folders packages are installed in): sysconfig's purelib and platlib,
    site's site-packages and the user's, and any site-packages or dist-packages folder inside the standard
    library's (a venv's sysconfig names its own, not its base Python's)."""
    paths = sysconfig.get_paths()
    stdlib = [paths[key] for key in ("stdlib", "platstdlib") if paths.get(key)]
    installed = [paths.get("purelib"), paths.get("platlib")]
    installed += [os.path.join(folder, name) for folder in stdlib for name in ("site-packages", "dist-packages")]
    with contextlib.suppress(AttributeError):  # missing in some embedded or old-virtualenv Pythons
        installed += list(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        installed.append(site.getusersitepackages())
    return tuple(_folder(f) for f in stdlib), tuple(_folder(f) for f in installed if f)


def _folder(path: str) -> str:
    return os.path.join(os.path.abspath(path), "")


# -- whose exception: certainly TorchCTS's, or code that reaches the device -------------------------

# packages that are TorchCTS's own or run it, whose frames never reach the device (torch does)
OWN_PACKAGES = frozenset({"torchcts", "hypothesis", "_pytest", "pytest", "pluggy", "xdist", "execnet", "attr",
                          "attrs", "sortedcontainers"})
DEVICE_PACKAGES = ("torchcts.testing",)  # the faulty test device: a backend under test, though TorchCTS ships it


def only_own_frames(tb: TracebackType | None) -> bool:
    """Whether every frame of `tb` is TorchCTS's own code (its suites and strategies included, its test device
    `torchcts.testing` not), its test runner's, or the standard library's: an exception raised there never came
    out of torch or backend code written in Python. A frame of torch, a backend, a user's module, or one that
    cannot be placed, makes it False."""
    frames = _traceback_frames(tb)
    own = _package_folders("torchcts", "torchcts.properties", "torchcts.strategies")
    device = _package_folders(*DEVICE_PACKAGES)
    return bool(frames) and all(_own_frame(frame, own, device) for frame, _ in frames)


def _own_frame(frame: FrameType, own: list[str], device: list[str]) -> bool:
    module = str(frame.f_globals.get("__name__") or "")
    filename = os.path.abspath(frame.f_code.co_filename)
    if any(module == name or module.startswith(name + ".") for name in DEVICE_PACKAGES) \
            or any(filename.startswith(folder) for folder in device):
        return False
    top = module.partition(".")[0]
    return top in OWN_PACKAGES or filename.startswith("<frozen ") or in_stdlib(filename) \
        or any(filename.startswith(folder) for folder in own)


# -- the guard: os._exit and signals to ourselves raise instead -------------------------------------

_guard: dict[str, Any] = {"pid": None, "threads": {}, "originals": None}  # threads: thread id -> nesting depth
_guard_lock = threading.Lock()


@contextlib.contextmanager
def guard() -> Iterator[None]:
    """While the block runs, `os._exit` and a terminating signal sent to this process from this thread raise
    `ProcessEndRequested` naming the caller (through `os`, `posix`, `signal` or `_signal`). Only in this process
    and in the threads inside a guard: a child forked inside the block (an isolated case, a decoder's own worker)
    and other threads exit and signal as ever; so does a reference to those functions taken before the block, and
    a timer (the module docstring lists the holes). Nests, and several threads may each hold one: the functions
    are replaced while any does, in whatever order they end."""
    me = threading.get_ident()
    with _guard_lock:
        if _guard["pid"] != os.getpid():  # none on, or one a forked child inherited with its parent's pid: afresh
            originals = _guard["originals"] or _replaceable()  # a child's inherited originals are the true ones
            _guard.update(pid=os.getpid(), threads={}, originals=originals)
            for (module, name) in originals:
                setattr(module, name, _REPLACEMENTS[name])
        _guard["threads"][me] = _guard["threads"].get(me, 0) + 1
    try:
        yield
    finally:
        with _guard_lock:
            threads = _guard["threads"]
            threads[me] -= 1
            if not threads[me]:
                del threads[me]
            if not threads:
                for (module, name), original in _guard["originals"].items():
                    setattr(module, name, original)
                _guard.update(pid=None, threads={}, originals=None)


def _replaceable() -> dict[tuple[Any, str], Any]:
    """(module, name) -> the function the guard replaces there: os's and signal's, and the same functions where the
    C modules behind them (`posix`, `_signal`) hold them, so `posix._exit(3)` is refused like `os._exit(3)`."""
    originals = {(module, name): getattr(module, name) for module, name in _REPLACED if hasattr(module, name)}
    for (module, name), twin in _TWINS.items():
        if (module, name) in originals and getattr(twin, name, None) is originals[(module, name)]:
            originals[(twin, name)] = originals[(module, name)]
    return originals


def _guarding() -> bool:
    return _guard["pid"] == os.getpid() and threading.get_ident() in _guard["threads"]


def _original(name: str) -> Any:
    """The function the guard replaced (`name` of os or signal); the module's own when no guard is on."""
    module = signal if name in ("raise_signal", "pthread_kill") else os
    originals = _guard["originals"]
    return originals[(module, name)] if originals is not None else getattr(module, name)


def _ends_process(signum: int) -> bool:
    """Whether delivering `signum` here ends (or stops) the process, or reads as the user's stop: its action is
    the default, a C handler (faulthandler's re-raises), or the run's interrupt handler; not when it is ignored,
    harmless by default, or handled by someone's own Python handler (then it is theirs to send). SIGINT, SIGTERM
    and SIGHUP count where an isolated child ignores them too: the code asked to stop, wherever it runs."""
    if signum == 0:  # "does the process exist": sends nothing
        return False
    if signum in (signal.SIGKILL, signal.SIGSTOP):
        return True
    try:
        handler = signal.getsignal(signum)
    except (ValueError, OSError):
        return False
    if handler is signal.SIG_IGN:
        return signum in interrupts.SIGNALS
    if handler is signal.SIG_DFL or handler is None:
        return signum not in HARMLESS_SIGNALS
    return handler is signal.default_int_handler or getattr(handler, "__module__", None) == interrupts.__name__


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _refuse(how: str, signum: int | None = None) -> None:
    culprit = culprit_of_frame(sys._getframe(2))  # the caller of the replaced function
    raise ProcessEndRequested(how, culprit, _signal_name(signum) if signum is not None else None)


def _exit(status: int) -> None:
    if _guarding():
        _refuse(f"os._exit({status!r})")
    _original("_exit")(status)


def _kill(pid: int, signum: int) -> None:
    own = pid in (os.getpid(), 0, -1) or (pid < -1 and -pid == os.getpgrp())
    if own and _guarding() and _ends_process(signum):
        _refuse(f"os.kill({'own process' if pid == os.getpid() else pid}, {_signal_name(signum)})", signum)
    _original("kill")(pid, signum)


def _killpg(pgid: int, signum: int) -> None:
    if pgid in (0, os.getpgrp()) and _guarding() and _ends_process(signum):
        _refuse(f"os.killpg(own process group, {_signal_name(signum)})", signum)
    _original("killpg")(pgid, signum)


def _raise_signal(signum: int) -> None:
    if _guarding() and _ends_process(signum):
        _refuse(f"signal.raise_signal({_signal_name(signum)})", signum)
    _original("raise_signal")(signum)


def _pthread_kill(thread_id: int, signum: int) -> None:
    if _guarding() and _ends_process(signum):
        _refuse(f"signal.pthread_kill(a thread of this process, {_signal_name(signum)})", signum)
    _original("pthread_kill")(thread_id, signum)


_REPLACED = ((os, "_exit"), (os, "kill"), (os, "killpg"), (signal, "raise_signal"), (signal, "pthread_kill"))
_TWINS = {(os, "_exit"): posix, (os, "kill"): posix, (os, "killpg"): posix, (signal, "raise_signal"): _signal,
          (signal, "pthread_kill"): _signal}
_REPLACEMENTS = {"_exit": _exit, "kill": _kill, "killpg": _killpg, "raise_signal": _raise_signal,
                 "pthread_kill": _pthread_kill}
