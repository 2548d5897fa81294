"""scripts/generate_site_stats.py writes docs/site-stats.md: it runs, every section is there, and its counts are
the registry's, the op database's and the shipped targets' (computed, never typed)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "generate_site_stats.py"
SECTIONS = ("# Site statistics", "## OpInfos", "## Properties and suites per capability", "## Strategies",
            "## Coverage inventory and audit", "## Shipped target manifests", "## Curated corpus", "## Tests")


def _script():
    spec = importlib.util.spec_from_file_location("generate_site_stats", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[str, dict]:
    output = tmp_path_factory.mktemp("site") / "site-stats.md"
    result = subprocess.run([sys.executable, str(SCRIPT), "--output", str(output), "--json"], capture_output=True,
                            text=True, timeout=900, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return output.read_text(), json.loads(result.stdout)


def test_the_page_has_every_section_the_date_and_versions(generated):
    import torch

    import torchcts

    text, stats = generated
    positions = [text.index(section) for section in SECTIONS]
    assert positions == sorted(positions)
    assert re.search(r"on \d{4}-\d\d-\d\d \d\d:\d\d UTC with torch ", text)
    assert f"torch {torch.__version__}" in text and f"TorchCTS {torchcts.__version__}" in text
    assert f"Python {stats['versions']['python']}" in text


def test_the_counts_are_the_registry_s_and_the_op_database_s(generated):
    from torchcts.manifest.targets import TARGETS
    from torchcts.manifest.vocabulary import CAPABILITIES
    from torchcts.plan import catalog, registry

    text, stats = generated
    properties = registry.load()
    assert stats["properties"] == len(properties)
    assert f"**{len(properties)}** registered properties" in text
    assert stats["opinfos"] == len(catalog.all_ops()) and f"**{len(catalog.all_ops())}** OpInfos" in text
    rows = {row["capability"]: row for row in stats["capabilities"]}
    assert list(rows) == list(CAPABILITIES)
    for capability in CAPABILITIES:
        names = sorted(p.name for p in properties if p.capability == capability)
        assert list(rows[capability]["properties"]) == names
        assert f"| `{capability}` | {len(names)} |" in text
    assert [name for name, _ in stats["targets"]] == [t.name for t in TARGETS]
    assert stats["audit"]["relevant"] == sum(stats["audit"][s] for s in
                                             ("opinfo", "suite", "generated", "backend-pack", "excluded", "unknown"))
    assert sum(stats["corpus"].values()) == len(list((ROOT / "corpus").glob("*.json")))
    assert sum(stats["tests"].values()) > 0


def test_tests_are_counted_from_the_source(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "test_a.py").write_text("def test_one():\n    pass\n\ndef helper():\n    pass\n")
    (tmp_path / "sub" / "test_b.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('x', [1, 2])\ndef test_two(x):\n    pass\n\n"
        "class TestThing:\n    def test_three(self):\n        pass\n\n    def other(self):\n        pass\n")
    (tmp_path / "sub" / "helpers.py").write_text("def test_not_a_test_module():\n    pass\n")
    assert _script().count_tests(tmp_path) == {"(top level)": 1, "sub": 2}


def test_a_bad_output_is_exit_2(tmp_path):
    assert _script().main(["--output", str(tmp_path)]) == 2
    assert _script().main(["--output", str(tmp_path / "missing" / "x.md")]) == 2
