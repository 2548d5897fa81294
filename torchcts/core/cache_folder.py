"""TorchCTS's cache folder on this machine: the OpInfo metadata cache and the faulty device's compiled part live there.

$TORCHCTS_CACHE_DIR, else $XDG_CACHE_HOME/torchcts, else ~/.cache/torchcts. What is cached is named by the versions
it was made for (`safe_part`), so several torch or TorchCTS versions keep their own files side by side.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

CACHE_DIR_VARIABLE = "TORCHCTS_CACHE_DIR"


def cache_dir() -> Path:
    """$TORCHCTS_CACHE_DIR, else $XDG_CACHE_HOME/torchcts, else ~/.cache/torchcts."""
    chosen = os.environ.get(CACHE_DIR_VARIABLE)
    if chosen:
        return Path(chosen).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "torchcts"


def safe_part(text: str) -> str:
    """A version as a file-name part: characters other than letters, digits and `.+_-` become `_`."""
    return re.sub(r"[^0-9A-Za-z.+_-]", "_", text)[:80]
