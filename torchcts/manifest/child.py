"""Run one function in a child process, so that nothing it does can end or change the caller.

Loading a manifest runs its code, and importing a backend runs the backend's. Either may call
`os._exit(0)`, kill its own process, hang, change signal handlers, the working folder, `sys.path`
or the environment, or print to stdout. In the caller, an exit would end `torchcts run` with
status 0 and no output, which CI reads as a pass. In a child, it is a child that ended: the
caller learns how (`Outcome.ended`) and reports it.

On Linux the child is a fork: it inherits torch already imported, so it costs ~20 ms. Where a
fork is unsafe (macOS, whose system frameworks do not survive one; a parent that has initialised
CUDA or XPU) or missing, the child is a fresh interpreter running the same function (~2 s:
it imports torch). Either way the child runs in its own process group with stdin from /dev/null
and its stdout and stderr captured; its answer comes back as JSON through a pipe; a child that
runs past the timeout is killed with everything it started.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import subprocess
import sys
import time
import warnings
from typing import Any, Callable

import attrs

from torchcts.parent_death import die_with_parent
from torchcts.core.fork_gc import frozen_child, pause_for_fork, resume_after_fork

TIMEOUT_ENV = "TORCHCTS_LOAD_TIMEOUT"
DEFAULT_TIMEOUT_S = 120.0
MAX_ANSWER_BYTES = 64 * 2**20
OUTPUT_KEPT_BYTES = 64 * 2**10  # the tail of what the child printed that is kept
_CHILD_FAILED = 70  # exit status of a child whose TorchCTS code (not the user's) failed
_exit = os._exit  # bound now: a manifest that replaces os._exit must not keep the child alive in the caller's code


@attrs.frozen
class Outcome:
    """How a child ended: its JSON answer, or a phrase saying why there is none; what it printed."""

    answer: Any = None
    ended: str | None = None  # "exited with status 3", "was killed by SIGTERM", "did not finish within 120 s"
    output: str = ""


def timeout_s() -> float:
    """Seconds a child may run: $TORCHCTS_LOAD_TIMEOUT, else 120; `ValueError` names a bad setting."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    from torchcts.ascii_numbers import NotAsciiNumber, ascii_float  # only when the variable is set

    try:
        value = ascii_float(text)  # not float(): it takes full-width digits and `1_0`
    except NotAsciiNumber:
        value = float("nan")
    if not 0 < value < 10**9:
        raise ValueError(f"{TIMEOUT_ENV} must be a positive number of seconds in ASCII digits, got {text[:40]!r}")
    return value


def run_in_child(function: Callable[[str], Any], argument: str, timeout: float | None = None,
                 fresh_interpreter: bool | None = None) -> Outcome:
    """`function(argument)` in a child process; it must be a module-level function returning JSON data.

    `fresh_interpreter` None chooses: a fork where one is safe, else a new interpreter."""
    timeout = timeout_s() if timeout is None else timeout
    if fresh_interpreter is None:
        fresh_interpreter = not _fork_is_safe()
    answer_read, answer_write = os.pipe()
    output_read, output_write = os.pipe()
    pid = None
    try:
        try:
            if fresh_interpreter:
                pid = _spawn(function, argument, answer_write, output_write)
            else:
                pid = _fork(function, argument, answer_write, output_write)
        except OSError as exc:  # out of processes or memory
            return Outcome(ended=f"could not be started ({type(exc).__name__}: {exc})")
        os.close(answer_write)
        os.close(output_write)
        answer_write = output_write = -1
        return _collect(pid, answer_read, output_read, time.monotonic() + timeout, timeout)
    finally:
        if pid is not None:
            _end_group(pid)
        for fd in (answer_read, output_read, answer_write, output_write):
            if fd >= 0:
                os.close(fd)


def _fork_is_safe() -> bool:
    if not hasattr(os, "fork") or sys.platform == "darwin":
        return False
    import torch

    for name in ("cuda", "xpu"):
        module = getattr(torch, name, None)
        initialised = getattr(module, "is_initialized", None)
        if initialised is not None and initialised():
            return False  # the child would inherit a device runtime that does not survive a fork
    return True


def _fork(function: Callable[[str], Any], argument: str, answer_fd: int, output_fd: int) -> int:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # what the parent buffered must not be written again by the child
        except Exception:  # noqa: BLE001
            pass
    collecting = pause_for_fork()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: "fork() in a multi-threaded process"
            pid = os.fork()
        if pid == 0:
            frozen_child(collecting)
            _child(lambda: function(argument), answer_fd, output_fd)  # never returns
        try:
            os.setpgid(pid, pid)  # as the child does: whichever runs first, the group exists before any kill
        except OSError:
            pass
        return pid
    finally:
        resume_after_fork(collecting)


def _spawn(function: Callable[[str], Any], argument: str, answer_fd: int, output_fd: int) -> int:
    code = "import sys; from torchcts.manifest.child import spawned; spawned(sys.argv[1:])"
    args = [sys.executable, "-c", code, function.__module__, function.__qualname__, argument, str(answer_fd),
            json.dumps([entry for entry in sys.path if isinstance(entry, str)])]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=output_fd, stderr=output_fd,
                            pass_fds=(answer_fd,), start_new_session=True)
    proc.returncode = 0  # reaped by `_end_group`, not by Popen: keep Popen from waiting for it again
    return proc.pid


def spawned(argv: list[str]) -> None:
    """Entry point of a fresh-interpreter child: import the function, run it, answer."""
    module, qualname, argument, answer_fd, path = argv
    sys.path[:] = json.loads(path)  # the parent's import path, so the same modules are found
    function = importlib.import_module(module)
    for part in qualname.split("."):
        function = getattr(function, part)
    _child(lambda: function(argument), int(answer_fd), 1)


def _child(work: Callable[[], Any], answer_fd: int, output_fd: int) -> None:
    """The child's whole life: a clean process state, the work, the answer, `_exit`."""
    code = 0
    me = os.getpid()
    try:
        try:
            os.setpgid(0, 0)  # its own group: Ctrl-C goes to the parent, which ends the child
        except OSError:
            pass
        die_with_parent(os.getppid())  # a caller killed outright (SIGKILL) takes a hanging manifest along
        for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if signum is not None:
                _restore(signum, signal.SIG_DFL)  # the parent's handlers (interruptions) are not the child's
        _restore(signal.SIGINT, signal.default_int_handler)
        import faulthandler

        faulthandler.disable()  # it may write to the parent's terminal (pytest's dup of stderr); the status says it all
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = sys.stderr = open(1, "w", encoding="utf-8", errors="backslashreplace",  # noqa: SIM115
                                       buffering=1, closefd=False)
        answer = work()
        if os.getpid() != me:
            _exit(0)  # a process the work forked returned here: the answer is not its to give
        payload = memoryview(json.dumps(answer).encode())
        while payload:
            payload = payload[os.write(answer_fd, payload):]
    except BaseException:  # noqa: BLE001 - a TorchCTS bug; the parent reports the exit status and output
        if os.getpid() != me:
            _exit(0)
        import traceback

        traceback.print_exc()
        code = _CHILD_FAILED
    finally:
        try:
            sys.stdout.flush()
        finally:
            _exit(code)


def _restore(signum: int, handler: Any) -> None:
    """Replace a Python handler the parent installed; a signal the process ignores (nohup) stays ignored."""
    try:
        if callable(signal.getsignal(signum)):
            signal.signal(signum, handler)
    except (ValueError, OSError):  # not the main thread: it keeps what it inherited
        pass


def _collect(pid: int, answer_fd: int, output_fd: int, deadline: float, timeout: float) -> Outcome:
    """Read the child's answer and output until it ends or the deadline passes."""
    answer, output = _Buffer(MAX_ANSWER_BYTES), _Buffer(OUTPUT_KEPT_BYTES, keep_tail=True)
    streams = _Streams({answer_fd: answer, output_fd: output})
    while True:
        if _exited(pid):
            streams.drain()  # what it wrote before it ended
            ended = _status(pid)
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            ended = (f"did not finish within {timeout:g} s (an endless loop, or waiting for something?); "
                     f"{TIMEOUT_ENV} sets the limit")
            break
        streams.read(min(remaining, 0.05))
        if answer.overflowed:
            ended = f"sent more than {MAX_ANSWER_BYTES // 2**20} MiB back"
            break
    text = output.text()
    if ended in ("exited with status 0", _UNKNOWN_STATUS) and answer.data:
        try:
            return Outcome(answer=json.loads(answer.data), output=text)
        except (ValueError, RecursionError):
            ended = "sent back an answer that is not JSON"
    return Outcome(ended=ended, output=text)


class _Streams:
    """The child's pipes, read as data arrives (poll: any fd number, unlike select)."""

    def __init__(self, buffers: dict[int, "_Buffer"]):
        self.buffers = buffers
        self.poll = select.poll()
        for fd in buffers:
            self.poll.register(fd, select.POLLIN)

    def read(self, wait_s: float) -> bool:
        """Read what arrives within `wait_s`; whether anything did."""
        if not self.buffers:
            time.sleep(min(wait_s, 0.01))  # both pipes closed, the child not yet gone
            return False
        events = self.poll.poll(wait_s * 1000)
        for fd, _ in events:
            if not self.buffers[fd].read(fd):
                self.poll.unregister(fd)
                del self.buffers[fd]
        return bool(events)

    def drain(self, budget_s: float = 1.0) -> None:
        """What is left in the pipes (a process the child forked may hold them open: bounded time)."""
        stop = time.monotonic() + budget_s
        while self.buffers and time.monotonic() < stop and self.read(0):
            pass


class _Buffer:
    def __init__(self, limit: int, keep_tail: bool = False):
        self.limit, self.keep_tail = limit, keep_tail
        self.chunks: list[bytes] = []
        self.size = self.dropped = 0
        self.overflowed = False

    def read(self, fd: int) -> bool:
        """Read what is there; False at end of file."""
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return False
        self.chunks.append(chunk)
        self.size += len(chunk)
        if self.size > self.limit:
            if not self.keep_tail:
                self.overflowed = True
            else:
                data = b"".join(self.chunks)
                self.dropped += len(data) - self.limit
                self.chunks, self.size = [data[-self.limit:]], self.limit
        return True

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)

    def text(self) -> str:
        text = self.data.decode(errors="replace")
        return f"[... {self.dropped} bytes of output left out ...]\n{text}" if self.dropped else text


_reaped: dict[int, int | None] = {}  # children reaped early (no os.waitid: macOS), None: by someone else
_UNKNOWN_STATUS = "ended (its exit status was collected elsewhere)"


def _exited(pid: int) -> bool:
    """Whether the child has ended; where possible without reaping it, so its group id stays valid to kill."""
    try:
        if hasattr(os, "waitid"):
            return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # a SIGCHLD handler of the application reaped it
        done, status = pid, None
    if done:
        _reaped[pid] = status
    return bool(done)


def _status(pid: int) -> str:
    """How an ended child ended: 'exited with status N' or 'was killed by SIGNAME'."""
    if pid in _reaped:
        status = _reaped[pid]
        if status is None:
            return _UNKNOWN_STATUS
        exited, number = os.WIFEXITED(status), os.WEXITSTATUS(status) if os.WIFEXITED(status) else os.WTERMSIG(status)
    else:
        result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        exited, number = result.si_code == os.CLD_EXITED, result.si_status
    if exited:
        return f"exited with status {number}"
    try:
        return f"was killed by {signal.Signals(number).name}"
    except ValueError:
        return f"was killed by signal {number}"


def _end_group(pid: int) -> None:
    """Kill the child and whatever it started in its group, then reap the child."""
    try:
        os.killpg(pid, signal.SIGKILL)  # while the child is unreaped its group id cannot have been reused
    except OSError:
        pass
    if pid in _reaped:
        del _reaped[pid]
        return
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
