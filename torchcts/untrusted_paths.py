"""Paths and ids read from untrusted files stay inside the folders they belong to.

Records, run.json, evidence stores and ledgers travel between teams. A path one of them names (a
record's `counterexample.path`) is opened only when, links resolved, it lies inside one of the
folders it may belong to (the run folder, its results folder, the folder the run was started in,
a corpus folder the user named); an id (a run id) is used only when it is a plain name that cannot
step out of a folder. Anything else is refused with one line naming the value and what is allowed.
No torch.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

MAX_PATH_CHARS = 4096
# A run id, shard or store entry name: letters, digits, '_', '-', '.', '+' and ':', not starting with a dot
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+:\-]{0,199}", re.ASCII)
SAFE_ID_FORM = "a name of letters, digits, '_', '-', '.', '+' or ':' (at most 200, not starting with '.', no '..')"


class OutsideFolders(ValueError):
    """A path from an untrusted file that points outside the folders it may belong to."""


def id_problem(value: object) -> str | None:
    """Why `value` (an id read from a file or a flag) is not a safe id, or None."""
    if isinstance(value, str) and SAFE_ID.fullmatch(value) and ".." not in value:
        return None
    return f"{shown(value)} is not {SAFE_ID_FORM}"


def resolve_inside(written: object, roots: Iterable[Path | str | None]) -> Path | None:
    """The file `written` names (relative to a root, or absolute), links resolved, when it lies inside one of
    `roots`; None when it names nothing there; OutsideFolders when it is not a plain path or leads out of every
    root (an absolute path elsewhere, a '..' part, a link out)."""
    if not isinstance(written, str) or not written or "\x00" in written:
        raise OutsideFolders(f"{shown(written)} is not a path")
    if len(written) > MAX_PATH_CHARS:
        return None  # no file has so long a name
    path = Path(written)
    if ".." in path.parts:
        raise OutsideFolders(f"{shown(written)} steps out of its folder ('..')")
    bases = [Path(os.path.realpath(root)) for root in roots if root is not None and str(root) != ""]
    candidates = [path] if path.is_absolute() else [base / path for base in bases]
    for candidate in candidates:
        try:
            if not os.path.lexists(candidate) and not path.is_absolute():
                continue  # not under this root; an absolute path is checked even when missing
            real = Path(os.path.realpath(candidate))
        except (OSError, ValueError):
            continue
        if not any(real == base or base in real.parents for base in bases):
            raise OutsideFolders(f"{shown(written)} is outside the folders it may name"
                                 + (" (a link leads out)" if real != candidate else ""))
        try:
            if real.is_file():
                return real
        except OSError:
            continue
    return None


def shown(value: object, limit: int = 80) -> str:
    """`repr` of an untrusted value cut to `limit` characters: one short line."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 4] + "...'"
