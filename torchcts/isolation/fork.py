"""Run a piece of work in a forked child process, so a crash or a hang cannot take the caller down.

The child inherits everything the parent has imported and built (torch, the op database, the
plan, open result files), so isolating one item costs a fork, not a fresh interpreter. Its
stdout and stderr go to a file whose tail is kept as the crash's last output; its answer comes
back as JSON through a pipe. A child killed by a signal is `crashed` (with the signal's name),
one that overruns the timeout is killed and `timed_out`. Ctrl-C, SIGTERM and SIGHUP are the
parent's: the child ignores them, the interrupted parent kills it, and on Linux the kernel kills
it when the parent dies, so no child outlives its run.

Forking needs a device that survives it: CPU, meta and devices implemented in Python (the faulty
device) do; CUDA initialised in the parent does not, so `fork_safe` says no for it and isolated
items run in a pool of spawned worker interpreters instead (`isolation.spawn`), which shares
`detach_from_run`, `crash_tail` and the faulty device's trace with this module.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import tempfile
import time
from typing import Any, Callable

import attrs

from torchcts import interrupts
from torchcts.parent_death import die_with_parent
from torchcts.core.fork_gc import frozen_child, pause_for_fork, resume_after_fork

OUTPUT_TAIL_CHARS = 4000
FORK_UNSAFE_DEVICE_TYPES = ("cuda", "xpu", "mps", "hpu", "mtia")
# torch's refusal to run autograd in a child forked after the parent started autograd's device threads (its error
# text): a limit of forking, not of the device or the oracle
AUTOGRAD_AFTER_FORK = "autograd's threading in combination with fork"


@attrs.frozen
class ForkResult:
    status: str  # "finished", "crashed", "timed_out"
    answer: Any = None  # what the child's function returned (JSON), when finished
    signal_name: str = ""
    exit_code: int | None = None
    output_tail: str = ""
    duration_s: float = 0.0

    def describe(self) -> str:
        if self.status == "crashed":
            how = f"killed by {self.signal_name}" if self.signal_name else f"exited with code {self.exit_code}"
            return f"the process running it died ({how})"
        if self.status == "timed_out":
            return f"still running after {self.duration_s:.0f} s; killed"
        return "finished"


def fork_safe(device_type: str) -> bool:
    return device_type not in FORK_UNSAFE_DEVICE_TYPES


def run_forked(work: Callable[[], Any], timeout_s: float) -> ForkResult:
    """`work()` in a forked child; its JSON-serialisable return value, or how the child ended.

    Interrupted (Ctrl-C, SIGTERM) while the child runs, the parent kills the child and re-raises."""
    sys.stdout.flush()
    sys.stderr.flush()  # what the parent buffered must not be written again by the child
    output = tempfile.TemporaryFile(mode="w+b")
    read_end, write_end = os.pipe()
    started = time.monotonic()
    parent = os.getpid()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, interrupts.SIGNALS)  # none lands before the child ignores them
    collecting = pause_for_fork()
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        resume_after_fork(collecting)
        raise
    if pid == 0:  # the child: never returns
        frozen_child(collecting)
        os.close(read_end)
        _child(work, write_end, output.fileno(), parent, mask)
    resume_after_fork(collecting)
    os.close(write_end)
    chunks: list[bytes] = []
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a signal that came during the fork is raised here
        status = _wait(pid, read_end, chunks, started + timeout_s)
    except BaseException:  # Ctrl-C or SIGTERM in the parent: the child must not outlive the run
        _kill(pid)
        output.close()
        raise
    finally:
        os.close(read_end)
    interrupts.check()  # a child that died with the run's interruption is no crash of its item
    duration = time.monotonic() - started
    if status is None:
        return ForkResult("timed_out", output_tail=_tail(output), duration_s=duration)
    data = b"".join(chunks)
    if os.WIFSIGNALED(status):
        return ForkResult("crashed", signal_name=signal.Signals(os.WTERMSIG(status)).name,
                          output_tail=_tail(output), duration_s=duration)
    code = os.WEXITSTATUS(status)
    if code != 0 or not data:
        return ForkResult("crashed", exit_code=code, output_tail=_tail(output), duration_s=duration)
    decoded = json.loads(data)
    merge_device_trace(decoded.get("device_ops", ()))
    return ForkResult("finished", answer=decoded["answer"], exit_code=0, output_tail=_tail(output),
                      duration_s=duration)


def _faulty_device() -> Any:
    """The faulty test device's module when this process registered it (else None: nothing to trace)."""
    return sys.modules.get("torchcts.testing.faulty.device")


def take_device_trace() -> list[str]:
    """The overloads and steps the faulty device ran in this child, when its trace is on (the selftest learns from
    the trace which items reach which seeded bugs: a suite's own child, such as guard_alloc's, counts too)."""
    device = _faulty_device()
    return device.take_trace() if device is not None and device.tracing() else []


def merge_device_trace(names: Any) -> None:
    device = _faulty_device()
    if device is not None and isinstance(names, list):
        for name in names:
            if isinstance(name, str):
                device.note_step(name)


def _wait(pid: int, read_end: int, chunks: list[bytes], deadline: float) -> int | None:
    """Collect the child's answer until it exits; its wait status, or None when it ran past the deadline (killed)."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _kill(pid)
            return None
        ready, _, _ = select.select([read_end], [], [], min(remaining, 0.5))
        if ready:
            chunk = os.read(read_end, 1 << 16)
            if chunk:
                chunks.append(chunk)
                continue
            break  # the child closed the pipe: it finished or died
        done, status = os.waitpid(pid, os.WNOHANG)  # (0, 0) while it runs: not its status
        if done:
            return status
    return os.waitpid(pid, 0)[1]


def _kill(pid: int) -> None:
    """SIGKILL the child and reap it, unless it is reaped already; a second Ctrl-C waits until it is gone."""
    with interrupts.deferred():
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)  # ChildProcessError once reaped: its pid may be another's now
            if not done:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _child(work: Callable[[], Any], answer_fd: int, output_fd: int, parent: int, mask: Any) -> None:
    code = 0
    try:
        detach_from_run(parent, mask)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        import faulthandler

        # its own descriptor: pytest's capture may move fd 2 later; a crash's Python stack still lands here
        faulthandler.enable(file=os.dup(output_fd), all_threads=False)
        answer = work()
        payload = json.dumps({"answer": answer, "device_ops": take_device_trace()}, default=str).encode()
        view = memoryview(payload)
        while view:
            written = os.write(answer_fd, view)
            view = view[written:]
    except BaseException:  # noqa: BLE001 - the parent sees the exit code and the output tail
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            os.close(answer_fd)
        finally:
            os._exit(code)


def detach_from_run(parent: int, mask: Any = None) -> None:
    """In a child or worker process: Ctrl-C, SIGTERM and SIGHUP are the parent's (it stops the run and kills
    us), so ignore them, then restore the signal mask (`mask`, or unblock them: the parent blocked them
    while it started us, so none lands before they are ignored); die when the parent dies."""
    for sig in interrupts.SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    try:
        signal.set_wakeup_fd(-1)  # a forked child's signals are not the parent's watchdog's (`interrupts`)
    except ValueError:  # not the main thread
        pass
    if mask is None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, interrupts.SIGNALS)
    else:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    die_with_parent(parent)


def crash_tail(text: str) -> str:
    """What of a dead process's output a record keeps: from the crash's own report on (faulthandler's "Fatal
    Python error", most recent frame first) when there is one, else the last OUTPUT_TAIL_CHARS characters."""
    fatal = text.rfind("Fatal Python error")
    return text[fatal:fatal + OUTPUT_TAIL_CHARS] if fatal >= 0 else text[-OUTPUT_TAIL_CHARS:]


def _tail(output: Any) -> str:
    try:
        output.flush()
        output.seek(0)
        return crash_tail(output.read().decode(errors="replace"))
    except OSError:
        return ""
    finally:
        output.close()
