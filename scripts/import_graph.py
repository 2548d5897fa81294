"""The import graph of the torchcts packages, read from the source with ast (nothing is imported).

Every `import` and `from ... import` between torchcts modules is an edge: those at module level and those
inside functions alike (a function-level import still ties the two modules together, it only hides the tie
from a start-up cycle), but not those under `if TYPE_CHECKING:` (they never run). An import of
`torchcts.a.b` from outside the package `torchcts.a` also runs `torchcts/a/__init__.py`, so it is an edge to
`torchcts.a` too, unless that `__init__` imports no torchcts module (then it ties nothing together). The modules come from disk on every call, through the `package-dir` map of
pyproject.toml (`strategies/` is `torchcts.strategies`), so the graph follows moved and split modules.

The layer contract (`tests/test_layers.py`, docs/architecture.md) is checked over this graph by
`layer_violations`; run the script to print the measurements:

    python scripts/import_graph.py [--detail]
"""

from __future__ import annotations

import argparse
import ast
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Import:
    """One import statement's edge: `source` imports `target` at `line`."""

    source: str
    target: str
    line: int
    in_function: bool
    reason: str  # the comment on the import's lines or the comment line above it; "" when none


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """The installed package name of each source folder, from pyproject.toml's setuptools `package-dir`."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {package: root / folder for package, folder in mapping.items()}


def discover_modules(packages: Mapping[str, Path]) -> dict[str, Path]:
    """Every module under the package folders: dotted name -> file (a package is its `__init__.py`)."""
    modules: dict[str, Path] = {}
    for package, folder in packages.items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder).with_suffix("")
            parts = [part for part in relative.parts if part != "__init__"]
            if any(not part.isidentifier() for part in parts):
                continue  # not importable (a template folder, a data folder)
            name = ".".join([package, *parts])
            # A nested package of the map (torchcts.strategies inside torchcts/) is found from its own folder.
            if name not in modules or path.parent == folder:
                modules.setdefault(name, path)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST) -> Iterable[tuple[ast.stmt, bool]]:
    """Every import statement that can run, with whether it sits inside a function."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend((child, in_function) for child in node.orelse)
            continue
        nested = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        stack.extend((child, nested) for child in ast.iter_child_nodes(node))


def _resolve(node: ast.stmt, module: str, is_package: bool, modules: Mapping[str, Path]) -> list[str]:
    """The torchcts modules one import statement loads (the deepest existing module of each name)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        base = node.module or ""
        if node.level:
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    targets = []
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name:
            targets.append(name)
    return list(dict.fromkeys(targets))


def _reason(lines: list[str], node: ast.stmt) -> str:
    """The comment that says why an import is where it is: on its own lines, or the comment line just above."""
    for number in range(node.lineno, (node.end_lineno or node.lineno) + 1):
        if "#" in lines[number - 1]:
            return lines[number - 1].split("#", 1)[1].strip()
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    return above[1:].strip() if above.startswith("#") else ""


MODULE_REASON = "# imports inside functions:"  # a module-level comment giving the reason of all of a module's ones


def _module_reason(lines: list[str]) -> str:
    """The reason a module gives once for its function-level imports (`MODULE_REASON` at column 0), or ""."""
    found = next((line for line in lines if line.startswith(MODULE_REASON)), "")
    return found[len(MODULE_REASON):].strip()


def read_imports(modules: Mapping[str, Path]) -> list[Import]:
    """Every import edge between the modules (module level and function level; TYPE_CHECKING left out)."""
    trees = {module: ast.parse(path.read_text(), str(path)) for module, path in modules.items()}
    # a package whose __init__ imports no torchcts module ties nothing together: no edge to it is implied
    inert = {module for module, path in modules.items() if path.name == "__init__.py" and not any(
        _resolve(node, module, True, modules) for node, _ in _statements(trees[module]))}
    edges: list[Import] = []
    for module, path in modules.items():
        source = path.read_text()
        lines = source.splitlines()
        is_package = path.name == "__init__.py"
        own_packages = {module.rsplit(".", depth)[0] for depth in range(module.count(".") + 1)}
        for node, in_function in _statements(trees[module]):
            reason = (_reason(lines, node) or _module_reason(lines)) if in_function else ""
            for target in _resolve(node, module, is_package, modules):
                # importing torchcts.a.b runs the __init__ of each package above it that the importer is not in
                parts = target.split(".")
                implied = [".".join(parts[:depth]) for depth in range(1, len(parts))]
                implied = [name for name in implied if name not in inert]
                for name in [*implied, target]:
                    if name in modules and name != module and name not in own_packages:
                        edges.append(Import(module, name, node.lineno, in_function, reason))
    return edges


def load_graph(root: Path = ROOT) -> tuple[dict[str, Path], list[Import]]:
    """The modules and import edges of the checkout at `root`, read from disk now."""
    modules = discover_modules(package_dirs(root))
    return modules, read_imports(modules)


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one node (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        if source != target:
            graph.setdefault(source, set()).add(target)
            graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def external_imports(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """The top-level names of the non-torchcts modules each module imports (TYPE_CHECKING left out)."""
    found: dict[str, set[str]] = {}
    for module, path in modules.items():
        names = found.setdefault(module, set())
        for node, _ in _statements(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
        names.discard("torchcts")
    return found


def unit_of(module: str, units: Iterable[str]) -> str | None:
    """The declared unit (package or module) a module belongs to: the longest declared name it is, or is under
    (the root package `torchcts` names only its own `__init__`; `name*` names every module whose name starts so)."""
    matches = [unit for unit in units if module == unit or ("." in unit and module.startswith(unit + "."))
               or (unit.endswith("*") and module.startswith(unit[:-1]))]
    return max(matches, key=len) if matches else None


@dataclass(frozen=True)
class LayerTable:
    """Units (packages, or modules where a package straddles layers) in layers, lowest first.

    A unit may import its own modules and the units of lower layers; units of one layer are peers that do
    not import each other. `exceptions` are the edges still open, (source unit, target unit) -> why, each to
    be removed; the checker fails on one that no longer occurs, so the list only shrinks.
    """

    layers: tuple[tuple[str, tuple[str, ...]], ...]
    exceptions: Mapping[tuple[str, str], str]

    def layer_of(self) -> dict[str, int]:
        return {unit: rank for rank, (_, units) in enumerate(self.layers) for unit in units}


def layer_violations(table: LayerTable, modules: Mapping[str, Path], edges: Iterable[Import]) -> list[str]:
    """One line per broken rule: a module in no declared unit, an import that runs up or sideways, a stale exception."""
    rank = table.layer_of()
    problems = [f"{module}: in no unit of the layer table" for module in sorted(modules) if unit_of(module, rank) is None]
    used: set[tuple[str, str]] = set()
    for edge in edges:
        source, target = unit_of(edge.source, rank), unit_of(edge.target, rank)
        if source is None or target is None or source == target or rank[source] > rank[target]:
            continue
        if (source, target) in table.exceptions:
            used.add((source, target))
            continue
        where = "inside a function" if edge.in_function else "at module level"
        direction = "a peer" if rank[source] == rank[target] else "a higher layer"
        problems.append(f"{edge.source}:{edge.line} imports {edge.target} {where}: {source} may not import "
                        f"{target} ({direction})")
    problems += [f"exception {source} -> {target} no longer occurs: remove it from the layer table"
                 for source, target in sorted(set(table.exceptions) - used)]
    return list(dict.fromkeys(problems))


def render_layers(table: LayerTable, prefix: str = "torchcts.") -> str:
    """The layer table as docs/architecture.md shows it: highest layer first, one line each."""
    width = max(len(name) for name, _ in table.layers)
    lines = [f"{name:<{width}}  " + ", ".join(unit.removeprefix(prefix) for unit in units)
             for name, units in reversed(table.layers)]
    return "\n".join(lines)


def mutual_pairs(edges: Iterable[Import], units: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of units that import each other."""
    units = list(units)
    pairs = {(unit_of(edge.source, units), unit_of(edge.target, units)) for edge in edges}
    return sorted((a, b) for a, b in pairs if a and b and a < b and (b, a) in pairs)


def measure(root: Path = ROOT, units: Iterable[str] | None = None) -> dict[str, object]:
    """The numbers issue 42 counts: modules, import statements, those inside functions, cycles, mutual pairs."""
    modules, edges = load_graph(root)
    statements = {(edge.source, edge.line) for edge in edges}
    in_function = {(edge.source, edge.line) for edge in edges if edge.in_function}
    unreasoned = {(edge.source, edge.line) for edge in edges if edge.in_function and not edge.reason}
    if units is None:  # the packages under torchcts, and testing's faulty device and selftest apart
        units = {".".join(module.split(".")[: 3 if module.startswith("torchcts.testing.") else 2]) for module in modules}
    return {
        "modules": len(modules),
        "internal import statements": len(statements),
        "inside functions": len(in_function),
        "inside functions without a reason comment": len(unreasoned),
        "module cycles": cycles((edge.source, edge.target) for edge in edges),
        "module cycles at module level only": cycles((edge.source, edge.target) for edge in edges if not edge.in_function),
        "mutual pairs": mutual_pairs(edges, units),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detail", action="store_true", help="list the cycles and pairs, not only count them")
    args = parser.parse_args()
    for name, value in measure().items():
        count = len(value) if isinstance(value, list) else value
        print(f"{name}: {count}")
        if args.detail and isinstance(value, list):
            for entry in value:
                print("    " + " <-> ".join(entry) if isinstance(entry, tuple) else "    " + ", ".join(entry))


if __name__ == "__main__":
    main()
