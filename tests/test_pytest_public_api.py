"""TorchCTS uses pytest through its public API only: no module imports pytest's private `_pytest` package, whose
layout changes between pytest releases (the console's session clock and `RunStopped` are built on public names)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("torchcts", "properties", "strategies")


def private_pytest_imports(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`path:line` of every import of `_pytest` (or a module under it) in the packages' Python files."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                if any(name == "_pytest" or name.startswith("_pytest.") for name in names):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_module_imports_pytests_private_package() -> None:
    assert private_pytest_imports(ROOT) == []


def test_the_check_sees_both_import_forms(tmp_path: Path) -> None:
    (tmp_path / "torchcts").mkdir()
    (tmp_path / "torchcts" / "a.py").write_text("import pytest\nfrom _pytest import timing\n")
    (tmp_path / "torchcts" / "b.py").write_text("def f():\n    import _pytest.outcomes\n")
    (tmp_path / "torchcts" / "c.py").write_text("NAMES = {'_pytest'}\nfrom ._pytest import x\n")  # a string, relative
    assert private_pytest_imports(tmp_path, ("torchcts",)) == ["torchcts/a.py:2", "torchcts/b.py:2"]
