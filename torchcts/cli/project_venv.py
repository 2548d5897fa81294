"""Opt-in switch into a project `.venv` (TORCHCTS_USE_PROJECT_VENV=1).

TorchCTS tests the torch build of the Python environment it runs in, so by default the CLI stays
where it was started. A developer working on TorchCTS itself can ask it to re-run inside the
`.venv` of the current folder (or of the nearest parent that has one).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENV_SWITCH = "TORCHCTS_USE_PROJECT_VENV"
_ALREADY_SWITCHED = "TORCHCTS_IN_PROJECT_VENV"


def find_project_python(start: Path) -> Path | None:
    """The interpreter of the nearest `.venv` at or above `start`."""
    for folder in (start, *start.parents):
        for candidate in (folder / ".venv" / "bin" / "python", folder / ".venv" / "Scripts" / "python.exe"):
            if candidate.is_file():
                return candidate
    return None


def maybe_switch_to_project_venv(argv: list[str]) -> None:
    """Re-execute `python -m torchcts argv` in the project `.venv` when asked to; otherwise return."""
    if os.environ.get(ENV_SWITCH) != "1" or os.environ.get(_ALREADY_SWITCHED) == "1":
        return
    python = find_project_python(Path.cwd())
    if python is None:
        print(f"torchcts: {ENV_SWITCH}=1 but no .venv found at or above {Path.cwd()}; "
              f"staying in {sys.prefix}", file=sys.stderr)
        return
    venv = python.parent.parent.resolve()
    if Path(sys.prefix).resolve() == venv:
        return
    env = dict(os.environ, **{_ALREADY_SWITCHED: "1"})
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(str(python), [str(python), "-m", "torchcts", *argv], env)
