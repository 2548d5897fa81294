"""docs/corpus.md's table of what each scenario case may store, written from the suites' declarations.

The table sits between two markers in the doc; `scripts/generate_bounds_table.py` rewrites it, and a test
(tests/cases/test_case_bounds.py) fails when the committed doc differs from what the registry declares.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

START = "<!-- bounds-table:start (scripts/generate_bounds_table.py writes this table) -->"
END = "<!-- bounds-table:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(specs: Iterable[Any]) -> str:
    """Rows per stored value of each scenario property; scenarios that store the same values share their rows."""
    lines = ["| property | scenarios | stored value | bound |", "|---|---|---|---|"]
    for spec in specs:
        if not spec.scenario:
            continue
        groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
        for scenario in spec.items.scenarios:
            params = spec.items.case_params(scenario)
            rows = params.describe() if params is not None else [("(undeclared)", "tensors only")]
            groups.setdefault(tuple(rows) or (("(nothing)", "the placeholder tensor only"),), []).append(scenario)
        for rows, scenarios in groups.items():
            named = _scenarios(scenarios, len(spec.items.scenarios))
            for name, bound in rows:
                lines.append(f"| `{spec.name}` | {named} | {_cell(name)} | {_cell(bound)} |")
    return "\n".join(lines) + "\n"


def _scenarios(names: list[str], total: int) -> str:
    if len(names) == total and total > 1:
        return f"all {total}"
    if len(names) > 6:
        return f"{len(names)}: " + ", ".join(f"`{n}`" for n in names[:4]) + ", ..."
    return ", ".join(f"`{n}`" for n in names)


def refreshed(doc: str, specs: Iterable[Any]) -> str:
    """`doc` with the text between the markers replaced by the current table."""
    head, start, rest = doc.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"the doc has no {START!r} ... {END!r} markers")
    return f"{head}{START}\n{table(specs)}{END}{tail}"


def refresh(path: Path, specs: Iterable[Any]) -> bool:
    """Rewrite the table in the doc at `path`; whether it changed."""
    old = path.read_text()
    new = refreshed(old, specs)
    if new != old:
        path.write_text(new)
    return new != old
