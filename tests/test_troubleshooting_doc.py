"""docs/troubleshooting.md lists each diagnostic of issue 41 with what the user sees, what it means and what to do;
its index names every section, and the messages it quotes are the ones the code writes."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "troubleshooting.md"
SOURCES = "\n".join(p.read_text() for folder in ("torchcts", "properties")
                    for p in sorted((ROOT / folder).rglob("*.py")))

# a fragment of each diagnostic's message as the doc quotes it, and as the code writes it
MESSAGES = {
    "declares no bounds for what its": "declares no bounds for what its",
    "outside its declared bounds": "TorchCTS defect: ",
    "cannot be written": ": cannot be written: ",
    "is already taken by": "is already taken by",
    "structured kernels don't support multi-device outputs": "structured kernels don't support multi-device outputs",
    "ending it now": "ending it now",
    "the CPU oracle rejected all": "the CPU oracle rejected all",
    "is outside the folders it may name": "is outside the folders it may name",
    "not an integer in ASCII digits": "not an integer in ASCII digits",
    "TorchCTS could not replay the case": "TorchCTS could not replay the case",
    "TORCH_DEVICE_BACKEND_AUTOLOAD=0": "TORCH_DEVICE_BACKEND_AUTOLOAD=0",
}


def _sections() -> list[tuple[str, str]]:
    text = DOC.read_text()
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2]))


def test_every_section_says_what_the_user_sees_what_it_means_and_what_to_do():
    sections = _sections()
    assert len(sections) >= 14
    for title, body in sections:
        for part in ("What you see", "What it means", "What to do"):
            assert part in body, f"{title!r} lacks {part!r}"


def test_the_index_names_every_section():
    text = DOC.read_text()
    index = text[:text.index("\n## ")]
    rows = [line.rsplit("|", 2)[1].strip() for line in index.splitlines() if line.startswith("| `") or
            line.startswith("| ") and "section" not in line and "---" not in line]
    assert len(rows) == len(_sections()), rows


def test_the_messages_the_doc_quotes_are_written_by_the_code():
    text = DOC.read_text()
    for quoted, written in MESSAGES.items():
        assert quoted in text, quoted
        assert written in SOURCES, written
