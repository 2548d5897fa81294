"""Paths and ids read from untrusted files stay inside the folders they belong to.

Records, run.json, evidence stores and ledgers travel between teams. A path one of them names (a
record's `counterexample.path`) is opened only when, links resolved, it lies inside one of the
folders it may belong to (the run folder, its results folder, the default corpus folders, a corpus
folder the user named; never `/`, the home folder or a folder above it); an id (a run id) is used
only when it is a plain name that cannot step out of a folder. Anything else is refused with one
line naming the value and what is allowed.
No torch.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

MAX_PATH_CHARS = 4096
# A run id, shard or store entry name: letters, digits, '_', '-', '.' and '+', not starting with a dot. No ':'
# (`C:x` is drive-relative on Windows); TorchCTS's own ids (20261207T080124Z-62c3e6, merged-..., fuzz-...) need none
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+\-]{0,199}", re.ASCII)
SAFE_ID_FORM = "a name of letters, digits, '_', '-', '.' or '+' (at most 200, not starting with '.', no '..')"


class OutsideFolders(ValueError):
    """A path from an untrusted file that points outside the folders it may belong to."""


def id_problem(value: object) -> str | None:
    """Why `value` (an id read from a file or a flag) is not a safe id, or None."""
    if isinstance(value, str) and SAFE_ID.fullmatch(value) and ".." not in value:
        return None
    return f"{shown(value)} is not {SAFE_ID_FORM}"


def resolve_inside(written: object, roots: Iterable[Path | str | None],
                   bases: Iterable[Path | str | None] | None = None) -> Path | None:
    """The file `written` names (absolute, or relative to one of `bases`, default `roots`), links resolved, when it
    lies inside one of `roots`; None when it names no file there; OutsideFolders when it is not a plain path or
    every file it names leads out of every root (an absolute path elsewhere, a '..' part, a link out)."""
    if not isinstance(written, str) or not written or "\x00" in written:
        raise OutsideFolders(f"{shown(written)} is not a path")
    if len(written) > MAX_PATH_CHARS:
        return None  # no file has so long a name
    path = Path(written)
    if ".." in path.parts:
        raise OutsideFolders(f"{shown(written)} steps out of its folder ('..')")
    inside = _real_folders(roots)
    candidates = [path] if path.is_absolute() else [
        Path(os.path.abspath(base)) / path for base in (roots if bases is None else bases) if base not in (None, "")]
    outside: OutsideFolders | None = None
    for candidate in candidates:
        try:
            if not os.path.lexists(candidate) and not path.is_absolute():
                continue  # not under this base; an absolute path is checked even when missing
            real = Path(os.path.realpath(candidate))
        except (OSError, ValueError):
            continue
        if not any(real == root or root in real.parents for root in inside):
            outside = outside or OutsideFolders(f"{shown(written)} is outside the folders it may name"
                                                + (" (a link leads out)" if real != candidate else ""))
            continue
        try:
            if real.is_file():
                return real
        except OSError:
            continue
    if outside is not None:
        raise outside
    return None


def case_folders(run_folder: Path | str, corpus_dir: Path | str | None = None,
                 cwd: Path | str | None = None) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(roots, bases) for a record's `counterexample.path`: it may lead into the run folder, its results folder,
    the default corpus folders (`<cwd>/corpus`, `<folder holding the results folder>/corpus`) and a corpus folder
    the user named, links resolved (a symlinked ./corpus counts where it leads); it is read relative to the
    working folder, the folder holding the results folder, the results folder, the run folder or the named
    corpus. A root that is `/`, the home folder or a folder above it is dropped: it would allow everything."""
    folder = Path(os.path.abspath(run_folder))
    here = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    wanted = [folder, folder.parent, here / "corpus", folder.parent.parent / "corpus"]
    if corpus_dir is not None and str(corpus_dir) != "":
        wanted.append(Path(os.path.abspath(corpus_dir)))
    too_wide = _too_wide()
    roots = tuple(dict.fromkeys(p for p in wanted if Path(os.path.realpath(p)) not in too_wide))
    bases = (here, folder.parent.parent, folder.parent, folder) + ((Path(corpus_dir),) if corpus_dir else ())
    return roots, tuple(dict.fromkeys(Path(os.path.abspath(b)) for b in bases))


def _too_wide() -> set[Path]:
    """`/`, the home folder and the folders above it: no path from a file may be allowed anywhere under them."""
    wide = {Path(os.path.realpath(os.sep))}
    try:
        home = os.path.expanduser("~")
    except (OSError, RuntimeError, KeyError):
        return wide
    if not os.path.isabs(home):  # no HOME and no password entry: "~" stays as it is
        return wide
    real = Path(os.path.realpath(home))
    return wide | {real, *real.parents}


def _real_folders(folders: Iterable[Path | str | None]) -> list[Path]:
    """Each folder with links resolved."""
    return [Path(os.path.realpath(f)) for f in folders if f is not None and str(f) != ""]


def shown(value: object, limit: int = 80) -> str:
    """`repr` of an untrusted value cut to `limit` characters: one short line."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 4] + "...'"
