"""A child process that dies with its parent, so no worker, isolated item or manifest load outlives
the command that started it, even one killed outright (SIGKILL, out of memory)."""

from __future__ import annotations

import os
import signal
import sys


def die_with_parent(parent: int) -> None:
    """Linux: have the kernel SIGKILL this process when its parent dies, even by SIGKILL, so a
    worker or isolated child never outlives the run that started it. Elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
