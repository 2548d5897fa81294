"""What a user types, checked before anything runs: output folders, input files, seeds, example counts.

A run that would fail an hour in, when it first writes a counterexample into a folder it cannot
create, fails at once instead, with one line that the caller prefixes with the option's name.
Import-light (no torch), so the command line checks its options before it loads anything.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

MAX_SEED = 2**64 - 1  # --seed: a run's seed is mixed into item seeds; a bounded int repeats anywhere
MAX_EXAMPLES = 1_000_000  # --max-examples: Hypothesis examples per item; more is a typo, not a plan


def shown(value: object, limit: int = 60) -> str:
    """`repr` of a value a user typed, cut to `limit` characters so that an error stays one short line."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 4] + "...'"


def output_folder_problem(path: Path | str) -> str | None:
    """Why `path` cannot be a folder a command writes into (created if missing), or None.

    What is missing of the path is created, a probe file is written and removed, and the folders
    the check created are removed again, so the check leaves the disk as it found it. Running as
    root, permission bits do not stop a write; a read-only mount, a file in the way or a path
    under /proc still do, and the probe sees them all."""
    if str(path) == "":  # an unset shell variable, not the current folder
        return "an empty path; name a folder"
    path = Path(path)
    created: list[Path] = []
    try:
        missing = []
        for folder in (path, *path.parents):
            if os.path.lexists(folder):
                if not folder.is_dir():
                    return f"{folder} is a file, not a folder" if folder.is_file() else f"{folder} is not a folder"
                break
            missing.append(folder)
        for folder in reversed(missing):
            try:
                os.mkdir(folder)
            except FileExistsError:
                if folder.is_dir():  # `a/..` exists once `a` does
                    continue
                return f"cannot create {folder}: a file is in the way"
            except OSError as exc:
                return f"cannot create {folder}: {exc.strerror or exc}"
            created.append(folder)
        try:
            fd, probe = tempfile.mkstemp(dir=path, prefix=".torchcts-probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            return f"cannot write into {path}: {exc.strerror or exc}"
        return None
    except (OSError, ValueError) as exc:  # a path the OS rejects outright (too long, a stat that fails)
        return f"cannot use {path}: {getattr(exc, 'strerror', None) or exc}"
    finally:
        for folder in reversed(created):
            try:
                os.rmdir(folder)
            except OSError:
                pass


def output_file_problem(path: Path | str, replaced: bool = False) -> str | None:
    """Why a file cannot be written at `path` (its folder checked as above), or None.

    A file that is `replaced` (written beside and renamed over) must be a regular file if it exists:
    renaming over /dev/null or a FIFO is never what was meant."""
    if str(path) == "":
        return "an empty path; name a file"
    path = Path(path)
    try:
        if os.path.isdir(path):
            return f"{path} is a folder, not a file"
        if replaced and os.path.lexists(path) and not stat.S_ISREG(os.stat(path).st_mode):
            return f"{path} exists and is not a regular file"
    except (OSError, ValueError) as exc:
        return f"cannot use {path}: {getattr(exc, 'strerror', None) or exc}"
    return output_folder_problem(path.parent)


def input_file_problem(path: Path | str) -> str | None:
    """Why an existing `path` cannot be read as a file, or None (a missing file is the reader's to report).

    A folder fails to open; a FIFO, a terminal or a device such as /dev/zero would block or never
    end, so only regular files are read."""
    if str(path) == "":
        return "an empty path; name a file"
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
    if stat.S_ISDIR(mode):
        return f"{path} is a folder, not a file"
    if not stat.S_ISREG(mode):
        return f"{path} is not a regular file (a FIFO, socket or device cannot be read as one)"
    return None
