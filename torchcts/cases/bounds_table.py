"""docs/corpus.md's table of what each scenario case may store, written from the suites' declarations.

The table sits between two markers in the doc; `scripts/generate_bounds_table.py` rewrites it, and a test
(tests/cases/test_case_bounds.py) fails when the committed doc differs from what the registry declares.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from torchcts.disk import write_atomic

START = "<!-- bounds-table:start (scripts/generate_bounds_table.py writes this table) -->"
END = "<!-- bounds-table:end -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(specs: Iterable[Any]) -> str:
    """A row per distinct (stored value, bound) of each scenario property, naming the scenarios it holds for (a
    suite whose scenarios store the same values has a row per value, not per scenario)."""
    lines = ["| property | stored value | bound | scenarios |", "|---|---|---|---|"]
    for spec in specs:
        if not spec.scenario:
            continue
        rows: dict[tuple[str, str], list[str]] = {}
        for scenario in spec.items.scenarios:
            params = spec.items.case_params(scenario)
            described = params.describe() if params is not None else [("(undeclared)", "tensors only")]
            for row in described or [("(nothing)", "the placeholder tensor only")]:
                rows.setdefault(row, []).append(scenario)
        for (name, bound), scenarios in rows.items():
            named = _scenarios(scenarios, len(spec.items.scenarios))
            lines.append(f"| `{spec.name}` | {_cell(name)} | {_cell(bound)} | {named} |")
    return "\n".join(lines) + "\n"


def _scenarios(names: list[str], total: int) -> str:
    if len(names) == total:
        return "all" if total > 1 else f"`{names[0]}`"
    if len(names) > 4:
        return f"{len(names)} of {total}: " + ", ".join(f"`{n}`" for n in names[:3]) + ", ..."
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
        write_atomic(path, new)  # a full disk leaves the doc as it was
    return new != old
