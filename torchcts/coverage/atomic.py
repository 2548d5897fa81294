"""Atomic file writes for the coverage artifacts (audit.json, the inventory, evidence.json).

A CI step or a concurrent `coverage report` may read these files while they are written: each is
written to a temporary file in the same folder, flushed to disk, and renamed over the target, so a
reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file renamed over it (created folders included)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
    return path
