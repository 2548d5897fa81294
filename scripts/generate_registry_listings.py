"""Rewrite what the registry lists elsewhere (run after adding or changing a suite):
`python scripts/generate_registry_listings.py`.

- torchcts/cli/completion_names.py: the names a Tab completes (`torchcts.cli.completion_listing`);
- docs/properties.md: the table of suites (`torchcts.plan.properties_table`).

tests/cli/test_completion.py and tests/test_properties_doc.py fail when either is stale.
"""

from __future__ import annotations

from pathlib import Path

from torchcts.cli.completion_listing import TARGET, render
from torchcts.disk import write_atomic
from torchcts.plan import registry
from torchcts.plan.properties_table import refreshed

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "properties.md"


def _write(path: Path, text: str) -> None:
    changed = path.read_text() != text
    if changed:
        write_atomic(path, text)  # a full disk leaves the file as it was
    print(f"{path.relative_to(ROOT)}: {'rewritten' if changed else 'already current'}")


if __name__ == "__main__":
    _write(TARGET, render())
    _write(DOC, refreshed(DOC.read_text(), registry.load(), ROOT))
