"""Expensive test inputs built once per test session, shared by every pytest-xdist worker.

A module-scoped fixture is built once per worker, and `--dist worksteal` spreads a module's tests over all of them:
a run that three workers each start costs three times. `shared_folder` builds a folder once per session, in the
first worker that asks; the others wait on a file lock and read what it wrote. A build that failed or was cut off
leaves no completion mark, so the next asker builds it again (and fails the same way, in its own test).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Callable

_DONE = ".shared-build-complete"


def session_root(tmp_path_factory) -> Path:
    """The temporary folder all workers of this test session share (each worker's base is one level below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_folder(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder `name`, filled by `build(folder)` once per session; every later asker waits for it and reuses it.

    Readers must not change the folder: copy it first when a test writes into a run folder."""
    root = session_root(tmp_path_factory)
    folder = root / f"shared-{name}"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when this worker dies
        if not (folder / _DONE).exists():
            shutil.rmtree(folder, ignore_errors=True)  # an earlier build that failed or was killed
            folder.mkdir()
            build(folder)
            (folder / _DONE).write_text("")
    return folder
