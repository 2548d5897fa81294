"""How the blocking test kernel blocks, with no side effect on import: tests import these names in their own process
(pytest-xdist workers included) without replacing any kernel there; `torchcts.testing.blocking_kernel`, imported
as a run's `backend_import` in a subprocess, is what replaces CPU's `aten::logaddexp`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

STARTED_ENV = "TORCHCTS_TEST_BLOCK_STARTED"
HOW_ENV = "TORCHCTS_TEST_BLOCK_HOW"
HOWS = ("sleep", "masked", "swallow", "wrong")
BLOCK_S = 3600.0
OP = "logaddexp"
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


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
