"""docs/properties.md's table is written from the registry and each suite module's PROVES, ITEMS and DOCS: a row per
suite module, and a suite that does not say what it proves, or names a doc that is not there, is refused by name."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from torchcts.plan import registry
from torchcts.plan.properties_table import END, START, TableError, refreshed, table
from torchcts.plan.registry import OpInfoItems, PropertySpec, ScenarioItems

ROOT = Path(__file__).resolve().parents[2]
MODULE = "torchcts.properties.suites.made_up_area"


def _check(cts):
    return None


def _suite(monkeypatch, **attributes) -> list[PropertySpec]:
    """Two properties of a made-up suite module holding `attributes` (PROVES, ITEMS, DOCS)."""
    module = types.ModuleType(MODULE)
    for name, value in attributes.items():
        setattr(module, name, value)
    monkeypatch.setitem(sys.modules, MODULE, module)
    return [PropertySpec("made_up", "inference", 2, OpInfoItems(), _check, module=MODULE),
            PropertySpec("made_up_scenarios", "sparse", 2, ScenarioItems(["one"], ["float32"]), _check,
                         module=MODULE)]


def test_a_suite_is_one_row_from_the_registry_and_its_module(monkeypatch):
    specs = _suite(monkeypatch, PROVES="what it\nproves | all", DOCS=("docs/properties.md",))
    rows = table(specs, ROOT).splitlines()
    assert rows[2:] == ["| `made_up`, `made_up_scenarios` | inference, sparse | 2 | OpInfo, scenarios | "
                        "what it proves \\| all | docs/properties.md |"]
    specs = _suite(monkeypatch, PROVES="x", ITEMS="one per made-up thing", DOCS=("docs/properties.md",))
    assert "| one per made-up thing | x |" in table(specs, ROOT)


@pytest.mark.parametrize(("attributes", "message"), [
    ({}, f"{MODULE}: set PROVES"),
    ({"PROVES": "  "}, f"{MODULE}: set PROVES"),
    ({"PROVES": "x"}, f"{MODULE}: its doc docs/suites/made_up_area.md does not exist"),
    ({"PROVES": "x", "DOCS": ("docs/nowhere.md",)}, f"{MODULE}: its doc docs/nowhere.md does not exist"),
])
def test_a_suite_that_does_not_say_what_the_table_needs_is_refused_by_name(monkeypatch, attributes, message):
    with pytest.raises(TableError, match=f"^{message}"):
        table(_suite(monkeypatch, **attributes), ROOT)


def test_custom_suites_have_no_row_and_the_doc_needs_its_markers():
    custom = PropertySpec("custom", "inference", 1, OpInfoItems(), _check, module="torchcts_custom_properties.d1.x")
    assert table([custom]).count("\n") == 2  # the header only
    with pytest.raises(TableError, match="markers"):
        refreshed("no table here", [])
    assert refreshed(f"a\n{START}\nold\n{END}\nb", []).startswith(f"a\n{START}\n| property |")


def test_every_installed_suite_module_says_what_it_proves():
    specs = registry.load()
    modules = {spec.module for spec in specs if spec.module.startswith(registry.SUITES_PACKAGE + ".")}
    assert modules == set(registry.suite_modules())
    assert len(table(specs, ROOT).splitlines()) == 2 + len(modules)
