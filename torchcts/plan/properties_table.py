"""docs/properties.md's table of the suites, written from the registry and what each suite module says it proves.

One row per suite module (`torchcts.properties.suites.<area>`): its properties, their capabilities and
level come from the registry; what it proves is the module's `PROVES`; its items are the registry's kind
(`OpInfo`, `scenarios`, one per format a manifest key names) unless the module says more in `ITEMS`; its
docs are `docs/suites/<area>.md` unless the module names others in `DOCS`. The table sits between two
markers; `scripts/generate_registry_listings.py` rewrites it and tests/test_properties_doc.py fails when
the committed doc differs, so adding a suite adds its row.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Iterable

from torchcts.plan.suites import SUITES_PACKAGE

START = "<!-- properties-table:start (scripts/generate_registry_listings.py writes this table) -->"
END = "<!-- properties-table:end -->"
HEADER = ("| property | capability | level | items | what it proves | doc |", "| --- | --- | --- | --- | --- | --- |")


class TableError(Exception):
    """A suite module that does not say what the table needs (its `PROVES`, a doc that exists)."""


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _items(specs: list[Any]) -> str:
    """The registry's kind of items of a suite's properties: OpInfo, scenarios, or one per claimed format."""
    kinds = []
    for spec in specs:
        if not spec.scenario:
            kind = "OpInfo" if spec.draws else "OpInfo error inputs"
        elif spec.items.formats:
            kind = f"one per format in `{spec.items.formats}`"
        else:
            kind = "scenarios"
        if kind not in kinds:
            kinds.append(kind)
    return ", ".join(kinds)


def rows(specs: Iterable[Any], root: Path | None = None) -> list[str]:
    """The table's rows, one per suite module, by the level and order of its first property (the registry's)."""
    by_module: dict[str, list[Any]] = {}
    for spec in specs:
        by_module.setdefault(spec.module, []).append(spec)
    lines = []
    for module_name, suite in by_module.items():
        module = importlib.import_module(module_name)
        area = module_name.rpartition(".")[2]
        proves = getattr(module, "PROVES", None)
        if not isinstance(proves, str) or not proves.strip():
            raise TableError(f"{module_name}: set PROVES, what the suite proves (docs/properties.md's table)")
        docs = tuple(getattr(module, "DOCS", (f"docs/suites/{area}.md",)))
        missing = [doc for doc in docs if root is not None and not (root / doc).is_file()]
        if missing:
            raise TableError(f"{module_name}: its doc {missing[0]} does not exist (write it, or name others in DOCS)")
        names = ", ".join(f"`{spec.name}`" for spec in suite)
        capabilities = ", ".join(dict.fromkeys(spec.capability for spec in suite))
        levels = ", ".join(str(level) for level in dict.fromkeys(spec.level for spec in suite))
        items = getattr(module, "ITEMS", None) or _items(suite)
        lines.append(f"| {names} | {capabilities} | {levels} | {_cell(items)} | {_cell(proves)} | {', '.join(docs)} |")
    return lines


def table(specs: Iterable[Any], root: Path | None = None) -> str:
    """The whole table (header and rows) of the installed suites; custom suites are left out."""
    installed = [spec for spec in specs if spec.module.startswith(SUITES_PACKAGE + ".")]
    return "\n".join([*HEADER, *rows(installed, root)]) + "\n"


def refreshed(doc: str, specs: Iterable[Any], root: Path | None = None) -> str:
    """`doc` with the text between the markers replaced by the current table."""
    head, start, rest = doc.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise TableError(f"the doc has no {START!r} ... {END!r} markers")
    return f"{head}{START}\n{table(specs, root)}{END}{tail}"
