"""docs/results.md's table of record fields is the one the typed record's rows render (torchcts.core.record_doc),
and those rows name every field of the record (torchcts.core.record) exactly once: a field cannot be added,
renamed or dropped without its documentation, as docs/manifest.md is tied to the manifest schema."""

from __future__ import annotations

import collections
import re
from pathlib import Path

from torchcts.core import record, record_doc

DOC = (Path(__file__).resolve().parents[2] / "docs" / "results.md").read_text(encoding="utf-8")
SECTION = DOC.split("\n## `records.jsonl`\n", 1)[1].split("\n## ", 1)[0]


def test_the_doc_holds_the_table_the_record_renders():
    table = record_doc.render_table()
    assert table in SECTION, f"docs/results.md is out of date; its record-field table should read:\n\n{table}\n"


def test_the_section_has_no_other_field_table():
    assert SECTION.count("| field | in | meaning |") == 1


def test_the_rows_name_every_record_field_exactly_once():
    documented = record_doc.documented_fields()
    twice = [name for name, n in collections.Counter(documented).items() if n > 1]
    assert not twice, f"documented twice: {twice}"
    assert set(documented) == set(record.field_names())


def test_a_field_named_in_the_rows_is_a_field_of_the_record_even_when_misspelt():
    """The check is not vacuous: a row naming a field the record lacks is seen."""
    rows = [*record_doc.ROWS, record_doc.Row(("isolatd",), "x", "y")]
    assert {name for row in rows for name in row.fields} - set(record.field_names()) == {"isolatd"}


def test_the_rendered_rows_quote_each_field_as_code():
    for line in record_doc.render_table().splitlines()[2:]:
        assert re.match(r"^\| `[a-z_]+`(, `[a-z_]+`)* \| ", line), line
