"""Rewrite docs/corpus.md's table of the bounds of stored scenario values from the registry (run after a suite
changes what it draws): `python scripts/generate_bounds_table.py`."""

from __future__ import annotations

from pathlib import Path

from torchcts.cases.bounds_table import refresh
from torchcts.plan import registry

DOC = Path(__file__).resolve().parents[1] / "docs" / "corpus.md"

if __name__ == "__main__":
    changed = refresh(DOC, registry.load())
    print(f"{DOC}: {'rewritten' if changed else 'already current'}")
