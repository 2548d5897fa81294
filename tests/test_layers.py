"""The import contract: the layer table below, asserted over the real import graph (scripts/import_graph.py).

The table is declared once, here; docs/architecture.md's "Dependency direction" shows it (a test keeps them
equal). Each run reads the graph from disk, so a moved or split module is checked where it now is. The same
checker is fed synthetic package trees, to show that it fails on each kind of violation.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_SPEC = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
import_graph = importlib.util.module_from_spec(_SPEC)
sys.modules["import_graph"] = import_graph  # dataclasses look their module up by name
_SPEC.loader.exec_module(import_graph)

T = "torchcts."


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, Path], list]:
    """The modules and import edges of this checkout, read from disk once for this module's tests."""
    return import_graph.load_graph(ROOT)

# Lowest first. A unit imports its own modules and the units of lower layers, never a peer or a higher layer.
LAYERS = import_graph.LayerTable(
    layers=(
        ("core", (T + "core",)),
        ("leaves", ("torchcts", T + "dtypes", T + "arguments", T + "ascii_numbers", T + "disk", T + "interrupts",
                    T + "hash_seed", T + "parent_death", T + "untrusted_paths", T + "testing", T + "testing.blocking",
                    T + "testing.compile_backends", T + "manifests", T + "corpus")),
        ("process guards", (T + "backend_exits", T + "testing.blocking_kernel")),
        ("result files", (T + "results",)),
        ("reports", (T + "report",)),
        ("manifest", (T + "manifest", T + "containers", T + "cases.bounds")),
        ("plan", (T + "plan",)),
        ("crash knowledge", (T + "crashes",)),
        ("strategies", (T + "strategies",)),
        ("cases", (T + "cases",)),
        ("isolation", (T + "isolation",)),
        ("engine", (T + "engine",)),
        ("coverage", (T + "coverage",)),
        ("suites", (T + "properties", T + "testing.faulty")),
        ("device registration", (T + "testing.faulty_autoload",)),
        ("run setup", (T + "run_setup",)),
        ("case export", (T + "cases.export*",)),
        ("tools over the engine", (T + "probe", T + "pathshapes", T + "triage")),
        ("front ends", (T + "plugin", T + "fuzz")),
        ("drivers", (T + "cases.replay", T + "testing.selftest*")),
        ("command line", (T + "cli",)),
        ("entry point", (T + "__main__",)),
    ),
    # Still open, each to be removed (the test fails when one no longer occurs): none
    exceptions={},
)

# Import cycles still open; the test fails when one is gone (none now: a new cycle fails).
OPEN_CYCLES: tuple[frozenset[str], ...] = ()


def test_every_module_in_a_unit_and_every_import_downward(graph) -> None:
    modules, edges = graph
    assert import_graph.layer_violations(LAYERS, modules, edges) == []


def test_no_import_cycle_counting_imports_inside_functions(graph) -> None:
    _, edges = graph
    found = {frozenset(cycle) for cycle in import_graph.cycles((edge.source, edge.target) for edge in edges)}
    assert found == set(OPEN_CYCLES)


def test_core_imports_no_torch_and_no_other_torchcts_package(graph) -> None:
    modules, edges = graph
    core = {name: path for name, path in modules.items() if name.startswith(T + "core")}
    outside = sorted(f"{edge.source}:{edge.line} imports {edge.target}" for edge in edges
                     if edge.source in core and not edge.target.startswith(T + "core"))
    assert outside == []
    third_party = {name: sorted(found - sys.stdlib_module_names - {"attrs"})
                   for name, found in import_graph.external_imports(core).items()}
    assert {name: found for name, found in third_party.items() if found} == {}


def test_every_import_inside_a_function_says_why(graph) -> None:
    _, edges = graph
    silent = sorted({f"{edge.source}:{edge.line} imports {edge.target}" for edge in edges
                     if edge.in_function and not edge.reason})
    assert silent == []


def test_the_architecture_page_shows_this_layer_table() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert import_graph.render_layers(LAYERS) in page


# -- the checker itself, on synthetic package trees ------------------------------------------------------------------

def _tree(root: Path, files: dict[str, str]) -> tuple[dict[str, Path], list]:
    (root / "pyproject.toml").write_text('[tool.setuptools]\npackage-dir = {"pkg" = "pkg"}\n')
    for name, text in {"pkg/__init__.py": "", "pkg/low/__init__.py": "", "pkg/high/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return import_graph.load_graph(root)


SYNTHETIC = import_graph.LayerTable(layers=(("low", ("pkg.low",)), ("high", ("pkg.high",)), ("top", ("pkg",))),
                                    exceptions={})


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    modules, edges = _tree(tmp_path, {"pkg/low/a.py": "import os\n", "pkg/high/b.py": "from pkg.low import a\n"})
    assert import_graph.layer_violations(SYNTHETIC, modules, edges) == []
    assert [(edge.source, edge.target, edge.in_function) for edge in edges] == [("pkg.high.b", "pkg.low.a", False)]


@pytest.mark.parametrize("text", ["from pkg.high import b\n", "def f():\n    from pkg.high.b import g  # why\n",
                                  "def f():\n    import pkg.high.b\n", "from ..high import b\n"])
def test_an_import_up_a_layer_fails_at_module_level_or_inside_a_function(tmp_path: Path, text: str) -> None:
    modules, edges = _tree(tmp_path, {"pkg/low/a.py": text, "pkg/high/b.py": "def g():\n    pass\n"})
    problems = import_graph.layer_violations(SYNTHETIC, modules, edges)
    assert problems and all("pkg.low may not import pkg.high (a higher layer)" in line for line in problems)


def test_a_peer_a_module_in_no_unit_and_a_stale_exception_fail(tmp_path: Path) -> None:
    table = import_graph.LayerTable(layers=(("low", ("pkg.low", "pkg.high")), ("top", ("pkg",))),
                                    exceptions={("pkg.high", "pkg"): "stale"})
    modules, edges = _tree(tmp_path, {"pkg/low/a.py": "from pkg.high import b\n", "pkg/high/b.py": "",
                                      "pkg/stray/c.py": ""})
    problems = import_graph.layer_violations(table, modules, edges)
    assert "pkg.low.a:1 imports pkg.high.b at module level: pkg.low may not import pkg.high (a peer)" in problems
    assert "pkg.stray.c: in no unit of the layer table" in problems
    assert "exception pkg.high -> pkg no longer occurs: remove it from the layer table" in problems


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    _, edges = _tree(tmp_path, {"pkg/low/a.py": "from pkg.low import b\n",
                                "pkg/low/b.py": "def f():\n    from pkg.low import a\n"})
    assert import_graph.cycles((edge.source, edge.target) for edge in edges) == [["pkg.low.a", "pkg.low.b"]]


def test_type_checking_imports_are_no_edge_and_reasons_are_read(tmp_path: Path) -> None:
    modules, edges = _tree(tmp_path, {
        "pkg/low/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.high import b\n",
        "pkg/high/b.py": "def f():\n    from pkg.low import a  # torch: not at start-up\n\n\n"
                         "def g():\n    # a comment line above says why too\n    from pkg.low import a\n\n\n"
                         "def h():\n    from pkg.low import a\n"})
    assert import_graph.layer_violations(SYNTHETIC, modules, edges) == []
    assert sorted((edge.source, edge.line, edge.reason) for edge in edges) == [
        ("pkg.high.b", 2, "torch: not at start-up"), ("pkg.high.b", 7, "a comment line above says why too"),
        ("pkg.high.b", 11, "")]


def test_a_torch_import_in_core_is_seen(tmp_path: Path) -> None:
    modules, _ = _tree(tmp_path, {"pkg/low/a.py": "import re\ndef f():\n    import torch.nn\n"})
    assert import_graph.external_imports(modules)["pkg.low.a"] == {"re", "torch"}
