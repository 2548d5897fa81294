"""Isolation without fork: a pool of spawned worker interpreters, each started with an entry point and a payload.

A device that does not survive a fork once initialised (CUDA, XPU, MPS, HPU, MTIA) cannot isolate work
in a forked child, so it runs in a worker interpreter started fresh (`python -u -m
torchcts.isolation.spawn_worker`). What the worker does is its caller's: a `WorkerStart` names an entry
point (`module:function`) and a JSON payload; the worker calls the function with the payload once (the
expensive imports happen there) and gets back the handler that answers each request, one JSON line in,
one JSON line out. The spawned-item worker (`engine.spawned_items`: torch, the backend, the suites and the
op database once, then item after item) is one user. A worker that dies while it serves a request makes
the result `crashed` (the signal, and the worker's output since the request: faulthandler's Python stack
for a native crash); one past the request's timeout is killed and the result is `timed_out`; either way
the worker is replaced when the next request needs one. The timeout counts from when the worker is ready:
a slow start (torch's import, the op database) is never a hang. `--isolation-start spawn` forces this path
where forking works too (tests, the faulty device).

Why a subprocess and not multiprocessing's spawn context: the worker's stdout and stderr are a file
from its first instruction (a native crash's last words, faulthandler's report), the messages are JSON
lines on two pipes of our own (no pickle, no `__main__` re-import, no resource tracker), and the
worker's start is asynchronous (it imports while the parent waits on its pipe, with a deadline).

Signals: the parent blocks Ctrl-C, SIGTERM and SIGHUP while it starts a worker, which ignores them and
dies with its parent (`fork.detach_from_run`); an interrupted parent kills the worker that was running
its request and re-raises. `close_pools()` stops every worker: at the end of a run (its session's end),
and at exit as a safety net. Nothing outlives the run.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

import attrs

from torchcts import interrupts
from torchcts.isolation.fork import ForkResult, crash_tail

STARTUP_TIMEOUT_S = 600.0  # at least this long to become ready (torch, the backend, the op database); never a hang
OUTPUT_READ_BYTES = 1 << 20  # of a request's output, at most the last MiB is read for its result
POLL_S = 0.5
STOP_WAIT_S = 5.0


class SpawnError(Exception):
    """A worker that could not start or serve (not a crash of what it served): the caller says so as a harness error."""


@attrs.frozen
class WorkerStart:
    """What a spawned worker starts from: the entry point its work comes from, the payload it is called with
    once, the variables its environment adds to the parent's, and the parent's `sys.path` (the entry point and
    what it imports come from there). Equal starts share a pool (`pool_for`)."""

    entry: str  # "package.module:function": function(payload) returns the handler of each request
    payload: str  # JSON text (hashable; `of` writes it)
    environment_changes: tuple[tuple[str, str], ...] = ()
    sys_path: tuple[str, ...] = attrs.field(factory=lambda: tuple(sys.path))

    @classmethod
    def of(cls, entry: str, payload: dict[str, Any], environment: dict[str, str] | None = None) -> "WorkerStart":
        return cls(entry, json.dumps(payload, sort_keys=True), tuple(sorted((environment or {}).items())))

    def first_line(self) -> dict[str, Any]:
        """The worker's first request line: what `spawn_worker` starts from."""
        return {"entry": self.entry, "payload": json.loads(self.payload), "sys_path": list(self.sys_path)}

    def environment(self) -> dict[str, str]:
        """The worker's environment variables: the parent's, with its hash seed (derandomized draws of OpInfo
        samples that iterate sets depend on it) and the start's own changes."""
        env = dict(os.environ)
        if "PYTHONHASHSEED" not in env and not sys.flags.hash_randomization:
            env["PYTHONHASHSEED"] = "0"
        env.update(self.environment_changes)
        return env


@attrs.define
class Worker:
    """One spawned interpreter: its process, the parent's ends of its two pipes, its output file."""

    process: subprocess.Popen
    requests: int  # the parent writes request lines here
    answers: int  # and reads answer lines here
    output: Any  # the worker's stdout and stderr (O_APPEND), emptied before each request
    buffer: bytearray = attrs.field(factory=bytearray)
    ready: bool = False
    startup_s: float | None = None
    served: int = 0  # requests served

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None


class SpawnPool:
    """A worker interpreter started from `start` when a request first needs one; replaced after it dies."""

    def __init__(self, start: WorkerStart):
        self.start = start
        self.workers: list[Worker] = []
        self.started = 0  # workers started so far (a replacement counts)
        self.owner = os.getpid()  # a forked child of the run inherits the pool; only its owner stops workers

    def run(self, request: dict[str, Any], timeout_s: float) -> ForkResult:
        """Serve one request in a ready worker; a finished result's answer is the handler's, else how the worker
        ended.

        SpawnError when no worker could start, or the handler raised; KeyboardInterrupt kills the worker and
        propagates."""
        worker = self._ready_worker()
        os.ftruncate(worker.output.fileno(), 0)  # the output since this request started
        started = time.monotonic()
        try:
            _write_line(worker.requests, request)
            line = _read_line(worker, started + timeout_s)
        except BrokenPipeError:
            line = None  # it died before it read the request: its exit status says how
        except BaseException:  # Ctrl-C or SIGTERM in the parent: the worker must not outlive the run
            self._drop(worker)
            raise
        duration = time.monotonic() - started
        worker.served += 1
        if line is not None:
            answer = json.loads(line)
            if "raised" in answer:
                raise SpawnError(f"the spawned worker raised outside the item's check:\n{answer['raised']}")
            return ForkResult("finished", answer=answer, exit_code=0, duration_s=duration)
        timed_out = worker.alive()
        self._drop(worker)  # killed when still running: replaced when the next request needs a worker
        tail = _output_tail(worker)
        worker.output.close()
        interrupts.check()  # a worker that died with the run's interruption is no crash of what it served
        if timed_out:
            return ForkResult("timed_out", output_tail=tail, duration_s=duration)
        code = worker.process.returncode
        if code is not None and code < 0:
            return ForkResult("crashed", signal_name=_signal_name(-code), output_tail=tail, duration_s=duration)
        return ForkResult("crashed", exit_code=code, output_tail=tail, duration_s=duration)

    def _ready_worker(self) -> Worker:
        """A live worker that has said it is ready; a dead one is replaced, a missing one started. SpawnError when
        the one waited for dies or hangs while starting."""
        for worker in [w for w in self.workers if not w.alive()]:  # died while idle (the OOM killer, ...)
            self._drop(worker)
            worker.output.close()
        if not self.workers:
            self.workers.append(self._start())
        worker = self.workers[0]
        if worker.ready:
            return worker
        try:
            line = _read_line(worker, time.monotonic() + STARTUP_TIMEOUT_S)
        except BaseException:
            self._drop(worker)
            raise
        if line is None or "ready" not in (message := json.loads(line)):
            self._drop(worker)
            tail = _output_tail(worker)
            worker.output.close()
            how = "did not become ready" if worker.process.returncode == -signal.SIGKILL else \
                f"ended with status {worker.process.returncode} while starting"
            raise SpawnError(f"the spawned isolation worker {how}: {tail.strip()[-2000:] or 'no output'}")
        worker.ready, worker.startup_s = True, float(message.get("startup_s") or 0.0)
        return worker

    def _start(self) -> Worker:
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        output = tempfile.TemporaryFile(mode="w+b")
        flags = fcntl.fcntl(output.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(output.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)  # writes land at the end after a truncate
        command = [sys.executable, "-u", "-m", "torchcts.isolation.spawn_worker", str(requests_read),
                   str(answers_write), str(os.getpid())]
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, interrupts.SIGNALS)  # the worker starts deaf to them
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                       pass_fds=(requests_read, answers_write), env=self.start.environment())
        except BaseException:
            for fd in (requests_read, requests_write, answers_read, answers_write):
                os.close(fd)
            output.close()
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(requests_read)
        os.close(answers_write)  # the worker holds the only writer: its death reads as the pipe's end here
        self.started += 1
        worker = Worker(process, requests_write, answers_read, output)
        try:
            _write_line(worker.requests, self.start.first_line())
        except BrokenPipeError:  # it died at once: waiting for it to be ready says how
            pass
        return worker

    def _drop(self, worker: Worker) -> None:
        """Kill the worker (unless it is gone already), reap it, close its pipes; its output stays readable."""
        with interrupts.deferred():
            if worker.process.poll() is None:
                worker.process.kill()
            worker.process.wait()
            for fd in (worker.requests, worker.answers):
                try:
                    os.close(fd)
                except OSError:
                    pass
            if worker in self.workers:
                self.workers.remove(worker)

    def close(self) -> None:
        """Stop every worker: an idle one is asked to end (an empty line), and killed if it does not."""
        if os.getpid() != self.owner:
            return
        for worker in list(self.workers):
            try:
                os.write(worker.requests, b"\n")
                worker.process.wait(timeout=STOP_WAIT_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self._drop(worker)
            worker.output.close()


_pools: dict[WorkerStart, SpawnPool] = {}


def pool_for(start: WorkerStart) -> SpawnPool:
    """The pool whose workers start from `start`; a run has one (another start closes it)."""
    pool = _pools.get(start)
    if pool is None:
        close_pools()
        pool = _pools[start] = SpawnPool(start)
    return pool


def close_pools() -> None:
    """Stop every worker of every pool (the end of a run; idempotent)."""
    while _pools:
        _, pool = _pools.popitem()
        pool.close()


atexit.register(close_pools)


def _write_line(fd: int, message: dict[str, Any]) -> None:
    view = memoryview((json.dumps(message) + "\n").encode())
    while view:
        view = view[os.write(fd, view):]


def _read_line(worker: Worker, deadline: float) -> str | None:
    """The worker's next answer line; None when it died (its pipe ended) or ran past `deadline` (it is
    still alive then: the caller kills it)."""
    while b"\n" not in worker.buffer:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        ready, _, _ = select.select([worker.answers], [], [], min(remaining, POLL_S))
        if not ready:
            continue
        chunk = os.read(worker.answers, 1 << 16)
        if not chunk:  # the pipe ended: the worker is gone, or going
            try:
                worker.process.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:  # it closed its answer pipe and lives on: of no more use
                worker.process.kill()
                worker.process.wait()
            return None
        worker.buffer += chunk
    line, _, rest = bytes(worker.buffer).partition(b"\n")
    worker.buffer[:] = rest
    return line.decode()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _output_tail(worker: Worker) -> str:
    """The end of what the worker wrote since its request started (from faulthandler's report on, if any)."""
    try:
        fd = worker.output.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - OUTPUT_READ_BYTES)
        return crash_tail(os.pread(fd, size - start, start).decode(errors="replace"))
    except (OSError, ValueError):
        return ""
