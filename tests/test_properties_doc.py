"""docs/properties.md says what the registry and the faulty device hold: each property's capability and level, the
suites without seeded bugs, and which suites a level-4 manifest does not reach."""

from __future__ import annotations

import re
from pathlib import Path

from torchcts.plan import registry
from torchcts.testing.faulty.bugs import BUGS

DOC = Path(__file__).resolve().parents[1] / "docs" / "properties.md"


def _table() -> dict[str, tuple[set[str], int]]:
    """property -> (the capabilities its row names, its level), from the doc's table."""
    rows = {}
    for line in DOC.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[2].isdigit():
            continue
        for name in re.findall(r"`(\w+)`", cells[0]):
            assert name not in rows, f"{name} has two rows"
            rows[name] = ({c.strip() for c in cells[1].split(",")}, int(cells[2]))
    return rows


def test_the_table_is_what_the_registry_and_the_suite_modules_say():
    from torchcts.plan.properties_table import refreshed

    doc = DOC.read_text()
    assert doc == refreshed(doc, registry.load(), DOC.parents[1]), "run: python scripts/generate_registry_listings.py"


def test_every_property_has_a_row_with_its_capability_and_level():
    specs = registry.load()
    rows = _table()
    assert set(rows) == {spec.name for spec in specs}
    for spec in specs:
        capabilities, level = rows[spec.name]
        assert spec.capability in capabilities and level == spec.level, (spec.name, rows[spec.name])


def _suite(spec) -> str:
    return spec.module.rpartition(".")[2].removeprefix("test_")


def test_every_suite_has_seeded_bugs_as_the_doc_says():
    suites = {_suite(spec) for spec in registry.load() if spec.scenario}
    assert suites - {bug.suite for bug in BUGS.values()} == set()
    assert "Every suite has seeded bugs" in DOC.read_text()


def test_the_suites_the_doc_places_past_level_4_are_those_above_it():
    text = " ".join(DOC.read_text().split())
    deeper = text[text.index("The other suites sit deeper"):]
    named = set(re.findall(r"`(\w+)`", deeper[:deeper.index("run them all")]))
    above = {spec.name for spec in registry.load() if spec.level > 4}
    quantized = {name for name in above if "quantiz" in name}
    assert above - quantized <= named, sorted(above - quantized - named)  # quantization is named as a group
    assert not named & {spec.name for spec in registry.load() if spec.level <= 4}
