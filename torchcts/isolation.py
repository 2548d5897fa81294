"""Run a piece of work in a forked child process, so a crash or a hang cannot take the caller down.

The child inherits everything the parent has imported and built (torch, the op database, the
plan, open result files), so isolating one item costs a fork, not a fresh interpreter. Its
stdout and stderr go to a file whose tail is kept as the crash's last output; its answer comes
back as JSON through a pipe. A child killed by a signal is `crashed` (with the signal's name),
one that overruns the timeout is killed and `timed_out`.

Forking needs a device that survives it: CPU, meta and devices implemented in Python (the faulty
device) do; CUDA initialised in the parent does not, so `fork_safe` says no for it and the
harness refuses isolation there rather than pretend.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import tempfile
import time
from typing import Any, Callable

import attrs

OUTPUT_TAIL_CHARS = 4000
FORK_UNSAFE_DEVICE_TYPES = ("cuda", "xpu", "mps", "hpu", "mtia")


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
    """`work()` in a forked child; its JSON-serialisable return value, or how the child ended."""
    import sys

    sys.stdout.flush()
    sys.stderr.flush()  # what the parent buffered must not be written again by the child
    output = tempfile.TemporaryFile(mode="w+b")
    read_end, write_end = os.pipe()
    started = time.monotonic()
    gc.freeze()  # the child's collector then leaves the parent's objects alone: no copy-on-write storm
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(work, write_end, output.fileno())
    gc.unfreeze()
    os.close(write_end)
    chunks: list[bytes] = []
    status = None
    deadline = started + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            return ForkResult("timed_out", output_tail=_tail(output), duration_s=time.monotonic() - started)
        ready, _, _ = select.select([read_end], [], [], min(remaining, 0.5))
        if ready:
            chunk = os.read(read_end, 1 << 16)
            if chunk:
                chunks.append(chunk)
                continue
            break  # the child closed the pipe: it finished or died
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
    if status is None:
        _, status = os.waitpid(pid, 0)
    os.close(read_end)
    duration = time.monotonic() - started
    data = b"".join(chunks)
    if os.WIFSIGNALED(status):
        return ForkResult("crashed", signal_name=signal.Signals(os.WTERMSIG(status)).name,
                          output_tail=_tail(output), duration_s=duration)
    code = os.WEXITSTATUS(status)
    if code != 0 or not data:
        return ForkResult("crashed", exit_code=code, output_tail=_tail(output), duration_s=duration)
    return ForkResult("finished", answer=json.loads(data), exit_code=0, output_tail=_tail(output),
                      duration_s=duration)


def _child(work: Callable[[], Any], answer_fd: int, output_fd: int) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the run
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        import faulthandler

        # its own descriptor: pytest's capture may move fd 2 later; a crash's Python stack still lands here
        faulthandler.enable(file=os.dup(output_fd), all_threads=False)
        payload = json.dumps(work(), default=str).encode()
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
            import sys

            sys.stdout.flush()
            sys.stderr.flush()
            os.close(answer_fd)
        finally:
            os._exit(code)


def _tail(output: Any) -> str:
    try:
        output.flush()
        output.seek(0)
        text = output.read().decode(errors="replace")
        fatal = text.rfind("Fatal Python error")  # the crash's own report, most recent frame first
        return text[fatal:fatal + OUTPUT_TAIL_CHARS] if fatal >= 0 else text[-OUTPUT_TAIL_CHARS:]
    except OSError:
        return ""
    finally:
        output.close()
