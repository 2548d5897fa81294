"""The `torchcts` command runs with Python's hash seed fixed (PYTHONHASHSEED=0).

Python picks a random hash seed per process, and the order in which a set of strings iterates
follows it. OpInfo sample functions iterate such sets (torch 2.13: `meshgrid` builds its samples
from `{'xy', 'ij'}`), so without a fixed seed two derandomized runs draw different cases for
those ops. The seed is set when the interpreter starts and cannot change afterwards, so the
command re-executes itself once with it (same interpreter, same arguments, same process id on
POSIX, so signals and exit codes are unchanged).
"""

from __future__ import annotations

import os
import subprocess
import sys

HASH_SEED = "0"


def run_with_fixed_hash_seed() -> None:
    """Return if PYTHONHASHSEED is already HASH_SEED; otherwise re-run this command with it."""
    if os.environ.get("PYTHONHASHSEED") == HASH_SEED:
        return
    env = dict(os.environ, PYTHONHASHSEED=HASH_SEED)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "nt":  # no exec that keeps the process: run it as a child and pass its exit code on
        sys.exit(subprocess.call(sys.orig_argv, executable=sys.executable, env=env))
    os.execve(sys.executable, sys.orig_argv, env)
