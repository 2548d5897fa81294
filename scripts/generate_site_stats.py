"""Write docs/site-stats.md: TorchCTS's numbers, computed from this checkout and the installed torch.

Every count is computed here, never typed: the OpInfos of torch's op database, the registered
properties and their suites per capability (`torchcts.plan.registry`), the strategy modules, the
coverage inventory and audit (`torchcts.coverage`), the shipped target manifests, the curated
corpus, and the test functions of tests/ (counted statically from the source: collecting them with
pytest imports every test module and takes minutes; a parametrized test counts once). The page
says with which torch, Python, TorchCTS and Hypothesis it was made, and nothing else that varies
between runs (no date): the same checkout and versions give the same bytes, so a test
(tests/test_site_stats.py) regenerates it and fails when the committed page is stale.

    python scripts/generate_site_stats.py [--output docs/site-stats.md]
"""

from __future__ import annotations

import argparse
import ast
import json
import pkgutil
import platform
import sys
from collections import Counter
from pathlib import Path
from typing import Iterable

import attrs

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "docs" / "site-stats.md"


@attrs.frozen
class CapabilityRow:
    """One capability: how many properties prove it, from how many suite modules, at which levels."""

    capability: str
    properties: tuple[str, ...]
    suites: tuple[str, ...]
    levels: tuple[int, ...]


@attrs.frozen
class SiteStats:
    """Everything the page shows, computed by `collect`."""

    versions: dict[str, str]
    opinfos: int
    opinfo_names: int
    properties: int
    opinfo_properties: int
    scenario_properties: int
    suite_modules: int
    capabilities: tuple[CapabilityRow, ...]
    strategy_modules: tuple[str, ...]
    inventory: dict[str, int]
    audit: dict[str, int]
    targets: tuple[tuple[str, str], ...]  # (name, flags)
    corpus: dict[str, int]  # property -> cases
    tests: dict[str, int]  # tests/ folder -> test functions


def _registry_rows(properties: Iterable) -> tuple[CapabilityRow, ...]:  # noqa: ANN001 - PropertySpecs
    from torchcts.manifest.vocabulary import CAPABILITIES

    rows = []
    for capability in CAPABILITIES:
        specs = [p for p in properties if p.capability == capability]
        rows.append(CapabilityRow(capability, tuple(sorted(p.name for p in specs)),
                                  tuple(sorted({p.module.rsplit(".", 1)[-1] for p in specs})),
                                  tuple(sorted({p.level for p in specs}))))
    return tuple(rows)


def _strategy_modules() -> tuple[str, ...]:
    import torchcts.strategies

    return tuple(sorted(info.name for info in pkgutil.iter_modules(torchcts.strategies.__path__)))


def _corpus() -> dict[str, int]:
    """Curated corpus cases per property (each file read as data within the default limits)."""
    from torchcts.cases.files import CaseFileError, builtin_corpus, case_files, load_case

    counts: Counter[str] = Counter()
    for path in case_files([builtin_corpus()]):
        try:
            counts[load_case(path).property] += 1
        except CaseFileError:
            counts["(unreadable)"] += 1
    return dict(sorted(counts.items()))


def count_tests(folder: Path) -> dict[str, int]:
    """Test functions (`test_*` functions and methods of `Test*` classes) per top folder of tests/, from the source."""
    counts: Counter[str] = Counter()
    for path in sorted(folder.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        part = path.relative_to(folder).parts
        where = part[0] if len(part) > 1 else "(top level)"
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                counts[where] += 1
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                counts[where] += sum(1 for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                     and n.name.startswith("test_"))
    return dict(sorted(counts.items()))


def collect(root: Path = ROOT) -> SiteStats:
    """Compute every number of the page (imports torch, its op database and the property suites: about a minute)."""
    import hypothesis
    import torch

    import torchcts
    from torchcts.coverage.audit import STATUSES, run_audit
    from torchcts.coverage.inventory import inventory_metadata
    from torchcts.manifest.targets import TARGETS
    from torchcts.plan import catalog, registry

    properties = registry.load()
    ops = catalog.all_ops()
    audit, unmapped = run_audit(root)
    statuses = Counter(entry["status"] for entry in audit["entries"])
    inventory = inventory_metadata()["counts"]
    return SiteStats(
        versions={"torch": torch.__version__, "python": platform.python_version(), "torchcts": torchcts.__version__,
                  "hypothesis": hypothesis.__version__},
        opinfos=len(ops), opinfo_names=len({op.name for op in ops}),
        properties=len(properties), opinfo_properties=sum(not p.scenario for p in properties),
        scenario_properties=sum(p.scenario for p in properties),
        suite_modules=len({p.module for p in properties}),
        capabilities=_registry_rows(properties),
        strategy_modules=_strategy_modules(),
        inventory={key: inventory[key] for key in ("overloads", "relevant", "not_relevant", "decomposition",
                                                   "torchscript_only")},
        audit={"relevant": len(audit["entries"]), **{status: statuses.get(status, 0) for status in STATUSES},
               "unmapped_opinfos": len(unmapped)},
        targets=tuple((t.name, t.flags()) for t in TARGETS),
        corpus=_corpus(),
        tests=count_tests(root / "tests"),
    )


def render(stats: SiteStats) -> str:
    """The Markdown page."""
    v = stats.versions
    lines = [
        "# Site statistics",
        "",
        f"Generated by `python scripts/generate_site_stats.py` with torch {v['torch']}, "
        f"Python {v['python']}, TorchCTS {v['torchcts']} and Hypothesis {v['hypothesis']}. Every number is computed "
        "from the checkout and the installed torch; regenerate the page rather than editing it.",
        "",
        "## OpInfos",
        "",
        f"torch's op database (`op_db`) holds **{stats.opinfos}** OpInfos ({stats.opinfo_names} distinct op names; "
        "the rest are variants such as `div.floor_rounding`). Each OpInfo property makes one item per OpInfo, "
        "variant and dtype it applies to.",
        "",
        "## Properties and suites per capability",
        "",
        f"**{stats.properties}** registered properties ({stats.opinfo_properties} over OpInfo items, "
        f"{stats.scenario_properties} over scenarios a suite defines) in **{stats.suite_modules}** suite modules "
        "of `torchcts.properties.suites`.",
        "",
        "| capability | properties | suites | levels | property names |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in stats.capabilities:
        lines.append(f"| `{row.capability}` | {len(row.properties)} | {len(row.suites)} | "
                     f"{', '.join(map(str, row.levels)) or '-'} | {', '.join(row.properties) or '-'} |")
    untested = [row.capability for row in stats.capabilities if not row.properties]
    lines += ["", f"Capabilities no property tests yet: {', '.join(untested) if untested else 'none'}.", "",
              "## Strategies", "",
              f"**{len(stats.strategy_modules)}** modules in `torchcts.strategies`: "
              f"{', '.join(f'`{m}`' for m in stats.strategy_modules)}.", "",
              "## Coverage inventory and audit", "",
              "`torchcts coverage inventory` and `torchcts coverage audit` over the installed torch "
              "(docs/coverage/audit.md):", "",
              "| inventory | overloads |", "| --- | --- |"]
    lines += [f"| {key.replace('_', ' ')} | {value} |" for key, value in stats.inventory.items()]
    lines += ["", "| audit status | relevant overloads |", "| --- | --- |"]
    lines += [f"| {key.replace('_', ' ')} | {value} |" for key, value in stats.audit.items()]
    lines += ["", "## Shipped target manifests", "",
              f"**{len(stats.targets)}** reviewed manifests in `manifests/targets/`, used when a command gets no "
              "`--manifest` and finds no `./manifest.py`:", "",
              "| target | picked by |", "| --- | --- |"]
    lines += [f"| `{name}` | `{flags}` |" for name, flags in stats.targets]
    lines += ["", "## Curated corpus", "",
              f"**{sum(stats.corpus.values())}** reviewed counterexamples shipped as `torchcts.corpus`:", "",
              "| property | cases |", "| --- | --- |"]
    lines += [f"| `{prop}` | {count} |" for prop, count in stats.corpus.items()]
    lines += ["", "## Tests", "",
              f"**{sum(stats.tests.values())}** test functions in `tests/` (counted from the source; a parametrized "
              "test counts once):", "", "| folder | test functions |", "| --- | --- |"]
    lines += [f"| `{folder}` | {count} |" for folder, count in stats.tests.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="Where to write the page "
                        "(default: docs/site-stats.md of this checkout).")
    parser.add_argument("--json", action="store_true", help="Also print the numbers as JSON on stdout.")
    args = parser.parse_args(argv)
    if args.output.is_dir() or not args.output.parent.is_dir():
        print(f"--output {args.output}: not a file in an existing folder", file=sys.stderr)
        return 2
    stats = collect()
    args.output.write_text(render(stats), encoding="utf-8")
    if args.json:
        print(json.dumps(attrs.asdict(stats), indent=1))
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
