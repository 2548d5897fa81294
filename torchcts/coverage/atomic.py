"""Atomic file writes for the coverage artifacts (audit.json, the inventory, evidence.json).

A CI step or a concurrent `coverage report` may read these files while they are written: each is
written to a temporary file in the same folder, flushed to disk, and renamed over the target, so a
reader sees the old file or the new one, never half of one. A full disk is a `torchcts.disk.WriteError`
naming the file (the command line's one line, exit 2), the old file left as it was.
"""

from __future__ import annotations

from pathlib import Path

from torchcts import disk


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temporary file flushed and renamed over it (created folders included)."""
    return disk.write_atomic(path, text, durable=True)
