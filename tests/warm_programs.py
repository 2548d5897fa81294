"""`python -m torchcts` for the tests, forked from a warm interpreter instead of started cold.

A test that runs `python -m torchcts ...` pays ~3 s of CPU before the command does anything (Python, torch, the
op database, TorchDynamo, click, pytest, Hypothesis, the report's templates), and the suite starts hundreds (issue
42). `run(command, **kwargs)` takes subprocess.run's arguments; for a `[sys.executable, "-m", MODULE, ...]` command
(MODULE in MODULES) it asks this test process's zygote (one interpreter per pytest-xdist worker that did all of that
once, started with this process's environment) to fork a child that becomes the command: the test's environment (in
place of the zygote's), working folder, `sys.path` as `python -m` builds it, argv, stdin/stdout/stderr,
TORCHCTS_FAULTY's autoload, Hypothesis's folder, the temporary folder and fresh random generators; then the module run
as `__main__` (runpy, as `python -m` does), its exit code and the atexit handlers as at a program's end. It returns the same CompletedProcess.

What the child does not re-do is the interpreter's start: a command whose environment changes that (PYTHON*
variables but PYTHONPATH, a PYTHONPATH folder holding installed distributions, whose entry points load when torch
starts, thread-pool and allocator settings, torch's import-time switches) starts as a real program, as does any other
command. Tests of the start itself (the hash-seed re-execution, the project venv, signals to a process group, import
contracts) call subprocess directly. TORCHCTS_TESTS_WARM=0 turns the zygote off.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parent.parent
_SWITCH = "TORCHCTS_TESTS_WARM"
# `python -m MODULE ...` commands the zygote can become. Not pytest: importing the op database loads PyTorch's "dev"
# Hypothesis profile (torch.testing._internal.common_utils), and a plain pytest run of the suites imports it after
# its `--hypothesis-profile` is loaded, the zygote before: the profile in force differs (a derandomized pytest run drew
# 10 cases where the program drew 5, tests/engine/test_hypothesis_settings.py, under make test only).
MODULES = ("torchcts",)
AUDIT_EVENT = "tests.warm_program"  # tests/conftest.py's fast-tier guard counts it as a program start
# Variables read when an interpreter or torch starts: a command whose value differs from the zygote's starts cold.
_START_PREFIXES = ("PYTHON", "OMP_", "MKL_", "KMP_", "GOMP_", "TORCH", "PYTORCH", "LD_", "CUDA", "HYPOTHESIS",
                   "MALLOC", "TORCHINDUCTOR", "NUMEXPR", "OPENBLAS")
_APPLIED_IN_CHILD = {"PYTHONPATH", "PYTHONHASHSEED", "TORCH_DEVICE_BACKEND_AUTOLOAD", "PYTHONDONTWRITEBYTECODE"}

_ZYGOTE_CODE = r'''
import atexit, json, os, socket, sys, threading, traceback, importlib
sock = socket.socket(fileno=int(sys.argv[1]))
base_path = [p for p in sys.path if p not in ("", os.getcwd())]
env_paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
base_path = [p for p in base_path if p not in env_paths]
import torch, click, pytest, hypothesis, numpy, jinja2
import torch._dynamo
import torchcts.plugin, torchcts.plan.catalog, torchcts.testing.faulty_autoload
import runpy
import torchcts.report.render as report_render
try:  # the report's templates, compiled once (a cold program compiles them at its first report)
    report_render._MARKDOWN.get_template("scorecard.md.jinja")
    for name in ("report.html.jinja", "junit.xml.jinja"):
        report_render._TEMPLATES.get_template(name)
except Exception:
    pass
torchcts.plan.catalog.all_ops()
from _pytest.assertion.rewrite import AssertionRewritingHook
WARM = frozenset(sys.modules)
_warn_already_imported = AssertionRewritingHook._warn_already_imported

def _warn_unless_warm(self, name):
    # a cold program imports Hypothesis after pytest starts, so pytest rewrites its plugin's modules and says nothing
    if name not in WARM:
        _warn_already_imported(self, name)

AssertionRewritingHook._warn_already_imported = _warn_unless_warm

def become(request, fds):
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
    for fd in fds:
        os.close(fd)
    sock.close()
    env = request["env"]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(request["cwd"])
    import tempfile, random, numpy
    tempfile.tempdir = None  # found again from TMPDIR and the like, as a program's first call does
    random.seed()  # fresh entropy, as each program has: every child inherits the zygote's generator state
    numpy.random.seed()
    import hypothesis.configuration, pathlib  # Hypothesis's folder (its example database) is the one it was imported
    setattr(hypothesis.configuration, "__hypothesis_home_directory_default", pathlib.Path.cwd() / ".hypothesis")
    hypothesis.configuration.set_hypothesis_home_dir(None)  # in, as in a program started in the command's folder
    extra = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *extra, *base_path]
    importlib.invalidate_caches()
    sys.argv = [request["module"], *request["args"]]  # runpy puts the module's file first, as `python -m` does
    sys.orig_argv = [sys.executable, "-m", request["module"], *request["args"]]
    import torchcts.testing.faulty_autoload as faulty_autoload
    if env.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "0" and faulty_autoload.requested_by_environment():
        faulty_autoload.autoload()  # what torch's backend autoload does at `import torch` under TORCHCTS_FAULTY=1
    code = 0
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as done:
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code
        else:
            print(done.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        code = -2
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        if code == -2:
            import signal
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        os._exit(code & 0xFF)

sock.sendall(b"ready\n")
while True:
    try:
        message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
    except OSError:
        break
    if not message:
        break
    request = json.loads(message)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        become(request, fds)
    for fd in fds:
        os.close(fd)
    sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    sock.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
'''


class _Zygote:
    """One warm interpreter and the socket to it; requests one at a time."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.environ = dict(os.environ)
        self.process = subprocess.Popen([sys.executable, "-c", _ZYGOTE_CODE, str(theirs.fileno())],
                                        pass_fds=(theirs.fileno(),), cwd=_REPO, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        theirs.close()
        self.socket = ours
        if self._message(timeout=600) != b"ready\n":
            raise OSError("the warm interpreter did not start")

    def _message(self, timeout: float | None) -> bytes:
        self.socket.settimeout(timeout)
        try:
            return self.socket.recv(1 << 16)
        finally:
            self.socket.settimeout(None)

    def fork(self, module: str, args: list[str], env: dict[str, str], cwd: str, fds: list[int],
             timeout: float | None) -> int:
        """The command's exit code as subprocess gives it (-N: killed by signal N); TimeoutExpired kills it."""
        socket.send_fds(self.socket, [json.dumps({"module": module, "args": args, "env": env, "cwd": cwd}).encode()],
                        fds)
        pid = json.loads(self._message(timeout=120))["pid"]
        try:
            answer = self._message(timeout=timeout)
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            self._message(timeout=120)
            raise
        if not answer:
            raise OSError("the warm interpreter ended")
        return int(json.loads(answer)["status"])

    def close(self) -> None:
        self.socket.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


_zygote: _Zygote | None = None
_lock = threading.Lock()


@atexit.register
def _close_zygote() -> None:
    """End the zygote with this process and wait for it: its CPU (and its children's) counts as this process's."""
    if _zygote is not None:
        _zygote.close()


def _warm_zygote() -> _Zygote | None:
    global _zygote
    if os.environ.get(_SWITCH) == "0":
        return None
    if _zygote is None or _zygote.process.poll() is not None:
        _zygote = _Zygote()
    return _zygote


def _forkable(command: Any, env: dict[str, str]) -> bool:
    """A `python -m MODULE` command (MODULES) whose environment starts an interpreter as the zygote's did."""
    if not isinstance(command, (list, tuple)) or [str(a) for a in command[:2]] != [sys.executable, "-m"] or \
            len(command) < 3 or str(command[2]) not in MODULES:
        return False
    zygote_env = _zygote.environ if _zygote is not None else os.environ
    if env.get("PYTHONPATH", "") != zygote_env.get("PYTHONPATH", "") and _carries_distributions(env["PYTHONPATH"]):
        return False  # its entry points (a torch backend, a pytest plugin) load when torch or pytest starts
    for key in set(env) | set(zygote_env):
        starting = key.startswith(_START_PREFIXES) and not key.startswith("TORCHCTS_")  # TorchCTS reads its own late
        if starting and key not in _APPLIED_IN_CHILD and env.get(key) != zygote_env.get(key):
            return False
    return True


def _carries_distributions(pythonpath: str) -> bool:
    """Whether a folder of PYTHONPATH holds installed distributions (`*.dist-info`, `*.egg-info`) or `.pth` files."""
    for folder in filter(None, pythonpath.split(os.pathsep)):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        if any(name.endswith((".dist-info", ".egg-info", ".pth")) for name in names):
            return True
    return False


def run(command: Any, *, cwd: Any = None, env: dict[str, str] | None = None, capture_output: bool = False,
        text: bool = False, stdout: Any = None, stderr: Any = None, input: Any = None, timeout: float | None = None,
        check: bool = False, encoding: str | None = None, **rest: Any) -> subprocess.CompletedProcess:
    """subprocess.run; a `python -m MODULE` command (MODULES) is forked from the warm interpreter where that is the
    same."""
    environ = dict(os.environ if env is None else env)
    if rest or not _forkable(command, environ):
        return subprocess.run(command, cwd=cwd, env=env, capture_output=capture_output, text=text, stdout=stdout,
                              stderr=stderr, input=input, timeout=timeout, check=check, encoding=encoding, **rest)
    sys.audit(AUDIT_EVENT, command[0], list(command))
    global _zygote
    with _lock:
        zygote = _warm_zygote()
        if zygote is None:
            return subprocess.run(command, cwd=cwd, env=env, capture_output=capture_output, text=text, stdout=stdout,
                                  stderr=stderr, input=input, timeout=timeout, check=check, encoding=encoding)
        try:
            return _run_forked(zygote, command, os.path.abspath(cwd or os.getcwd()), environ, capture_output, text,
                               stdout, stderr, input, timeout, check, encoding)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
            raise
        except BaseException:  # an interrupt or a broken zygote: the conversation is lost, the next run starts anew
            zygote.process.kill()
            zygote.close()
            _zygote = None
            raise


def _run_forked(zygote: _Zygote, command: Any, cwd: str, environ: dict[str, str], capture_output: bool, text: bool,
                stdout: Any, stderr: Any, input: Any, timeout: float | None, check: bool,
                encoding: str | None) -> subprocess.CompletedProcess:
    if capture_output:
        stdout = stderr = subprocess.PIPE
    decode = text or encoding is not None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as given, \
            open(os.devnull, "rb") as nothing:
        if input is not None:
            given.write(input.encode(encoding or "utf-8") if isinstance(input, str) else input)
            given.seek(0)
        stdin_fd = given.fileno() if input is not None else nothing.fileno()
        opened: list[int] = []
        stdout_fd = _target_fd(stdout, out, sys.stdout, opened)
        stderr_fd = stdout_fd if stderr == subprocess.STDOUT else _target_fd(stderr, err, sys.stderr, opened)
        args = [str(a) for a in command[3:]]
        try:
            code = zygote.fork(str(command[2]), args, environ, cwd, [stdin_fd, stdout_fd, stderr_fd], timeout)
        except TimeoutError:
            raise subprocess.TimeoutExpired(list(command), timeout, _read(out, stdout, decode, encoding),
                                            _read(err, stderr, decode, encoding)) from None
        finally:
            for fd in opened:
                os.close(fd)
        captured_out = _read(out, stdout, decode, encoding)
        captured_err = _read(err, stderr, decode, encoding)
    done = subprocess.CompletedProcess(list(command), code, captured_out, captured_err)
    if check:
        done.check_returncode()
    return done


def _target_fd(where: Any, capture: Any, default: Any, opened: list[int]) -> int:
    """The descriptor a stream of the command writes to: the capture file, DEVNULL, a file given, or ours."""
    if where == subprocess.PIPE:
        return capture.fileno()
    if where == subprocess.DEVNULL:
        opened.append(os.open(os.devnull, os.O_WRONLY))
        return opened[-1]
    if where is None:
        try:
            return default.fileno()
        except (AttributeError, OSError, ValueError):  # pytest's capture replaced the stream: the capture file
            return capture.fileno()
    return where if isinstance(where, int) else where.fileno()


def _read(capture: Any, where: Any, decode: bool, encoding: str | None) -> Any:
    if where != subprocess.PIPE:
        return None
    capture.seek(0)
    data = capture.read()
    return data.decode(encoding or "utf-8", errors="replace" if encoding is None else "strict") if decode else data
