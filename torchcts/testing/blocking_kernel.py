"""A backend kernel that never returns, for tests of how Ctrl-C and SIGTERM end a run.

Importing this module (as a manifest's `backend_import`) replaces CPU's `aten::logaddexp` kernel with one
that blocks for an hour, as a deadlocked kernel would. Once the calling thread is asleep in the blocking
call (Linux: its /proc state; elsewhere as it begins), a thread creates the file named by
$TORCHCTS_TEST_BLOCK_STARTED (when set), so a test knows the run is inside the kernel and sends its signal
then, never after a fixed sleep. (A signal that came before the call would run its Python handler at the
next bytecode, masked or not: the process-wide flag is checked by the main thread.)
$TORCHCTS_TEST_BLOCK_HOW chooses how it blocks:

- `sleep` (the default): `time.sleep`, which a signal's Python handler interrupts at once.
- `masked`: with SIGINT, SIGTERM and SIGHUP blocked in the calling thread, as a native call that masks
  signals (or retries its wait on EINTR) does: the process's Python handlers cannot run until it returns.
- `swallow`: catches every exception (KeyboardInterrupt included) and goes on sleeping, as backend code
  with a bare `except:` around a retry loop does.

With $TORCHCTS_TEST_BLOCK_HOW=`wrong` it blocks nothing: every second call answers one more than it should,
so the device's call and the oracle's of a case disagree, a run finds a failure and stores its case (the case a
test then replays with a blocking kernel).

Only `logaddexp` changes (select it with `--ops ^logaddexp$`); CPU is the run's device and its oracle
alike, so whichever of them calls it first blocks.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

import torch

STARTED_ENV = "TORCHCTS_TEST_BLOCK_STARTED"
HOW_ENV = "TORCHCTS_TEST_BLOCK_HOW"
HOWS = ("sleep", "masked", "swallow", "wrong")
BLOCK_S = 3600.0
OP = "logaddexp"
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _logaddexp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """What CPU's kernel computes, without calling it (it is this one now)."""
    high = torch.maximum(a, b)
    return torch.where(torch.isinf(high) & (a == b), high, high + torch.log1p(torch.exp(-torch.abs(a - b))))


def _announce_once_asleep(path: Path, thread_id: int) -> None:
    """Create `path` once thread `thread_id` sleeps (its state S with a sleep in its wait channel, twice in a row)."""
    task = Path(f"/proc/self/task/{thread_id}")
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 2 and time.monotonic() < deadline and sys.platform.startswith("linux"):
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = (task / "wchan").read_text()
        except (OSError, IndexError):
            break
        seen = seen + 1 if state == "S" and ("sleep" in wchan or wchan in ("", "0")) else 0
        time.sleep(0.01)
    path.touch()


def block() -> None:
    """Block the chosen way for BLOCK_S; the started file says when the thread is asleep in it."""
    started = os.environ.get(STARTED_ENV)
    if started:
        threading.Thread(target=_announce_once_asleep, args=(Path(started), threading.get_native_id()),
                         daemon=True).start()
    how = os.environ.get(HOW_ENV, "sleep")
    until = time.monotonic() + BLOCK_S
    if how == "masked":
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        time.sleep(BLOCK_S)
    elif how == "swallow":
        while time.monotonic() < until:
            try:
                time.sleep(until - time.monotonic())
            except BaseException:  # noqa: BLE001 - the point: backend code that swallows Ctrl-C
                pass
    else:
        time.sleep(BLOCK_S)


_calls = [0]


def blocking_logaddexp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if os.environ.get(HOW_ENV) == "wrong":
        _calls[0] += 1
        return _logaddexp(a, b) + _calls[0] % 2
    block()
    return _logaddexp(a, b)


_library = torch.library.Library("aten", "IMPL")  # kept alive for the life of the process
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": the point of this module
    _library.impl("logaddexp", blocking_logaddexp, "CPU")
