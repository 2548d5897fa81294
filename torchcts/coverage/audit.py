"""The audit: one status for every backend-relevant overload, and the artifacts that show it.

Status, the first that applies: `opinfo` (an OpInfo property reaches it by name, `mapping`, or its
samples dispatched it, `opinfo_trace`: the entry's `opinfo_basis` says which),
`suite` (a built-in suite declares it), `generated` (the `dispatch` property generates cases for it),
`backend-pack` (a property of the manifest's `custom_test_dirs` declares it), `excluded` (a reviewed
exclusion, with its reason and source), `unknown`. Every entry also lists all the sources that cover
it, so `non-unique-audit` can tell where coverage overlaps. With an evidence store, each entry says
whether a traced run reached it. Artifacts: audit.json, unknowns.json, unmapped-tests.json, summary.md.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
from pathlib import Path
from typing import Any, Iterable

import attrs

from torchcts.coverage import mapping
from torchcts.coverage.atomic import write_atomic
from torchcts.coverage.evidence import load_evidence
from torchcts.coverage.exclusions import PACKAGED, PACKAGED_SOURCE, PROJECT_FILE, load_exclusions
from torchcts.coverage.generated import generated_overloads
from torchcts.coverage.inventory import inventory_metadata, load_inventory

# imports inside functions: torch and what loads it (plan, strategies, manifest): reading an audit runs without it

STATUSES = ("opinfo", "suite", "generated", "backend-pack", "excluded", "unknown")
SCHEMA_VERSION = 1
GENERATED_PROPERTY = "dispatch"  # the property that runs generated cases: its reach is the `generated` status


@attrs.frozen
class Sources:
    """What the audit knows besides the inventory: the tests' reach, generation, exclusions, evidence."""

    opinfo: tuple[Any, ...]  # mapping.OpInfoReach per OpInfo
    properties: tuple[Any, ...]  # registered PropertySpecs (built-in and the manifest's custom ones)
    generated: dict[str, str]  # overload -> "generated" or why not (generated.generated_overloads())
    exclusions: Any  # exclusions.Exclusions: .match(name), .problems
    reached: frozenset[str] | None = None  # overloads a traced run dispatched (evidence store), or None


def exclusion_files(project_dir: Path) -> list[dict[str, str]]:
    """The exclusion files the audit read, each with its sha256 (packaged first, then the project's)."""
    files = []
    for label, path in ((PACKAGED_SOURCE, PACKAGED), (f"./{PROJECT_FILE}", Path(project_dir) / PROJECT_FILE)):
        if path.is_file():
            files.append({"path": label, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
    return files


def build_audit(inventory: Iterable[Any], sources: Sources, metadata: dict[str, Any]) -> dict[str, Any]:
    """audit.json's content: metadata, one entry per relevant overload, counts, warnings."""
    inventory = tuple(inventory)
    packets = mapping.Packets.of(inventory)
    levels = {spec.name: spec.level for spec in sources.properties}
    opinfos: dict[str, set[str]] = {}
    opinfo_properties: dict[str, set[str]] = {}
    by_name: set[str] = set()  # overloads some OpInfo reaches by name (the others only by its samples' trace)
    for reach in sources.opinfo:
        for prop, found in reach.by_property.items():
            for name in found:
                opinfos.setdefault(name, set()).add(reach.op_id)
                opinfo_properties.setdefault(name, set()).add(prop)
                if name not in reach.by_trace_only:
                    by_name.add(name)
    builtin = [s for s in sources.properties if mapping.is_builtin(s) and s.name != GENERATED_PROPERTY]
    packs = [s for s in sources.properties if not mapping.is_builtin(s)]
    suites, missing = mapping.declared_reach(builtin, packets)
    pack_reach, pack_missing = mapping.declared_reach(packs, packets)
    by_overload = _invert(suites), _invert(pack_reach)
    entries, not_relevant = [], {}
    for item in inventory:
        if not item.relevant:
            not_relevant[item.rule_id] = not_relevant.get(item.rule_id, 0) + 1
            continue
        entry = _entry(item, sorted(opinfos.get(item.name, ())), sorted(opinfo_properties.get(item.name, ())),
                       by_overload[0].get(item.name, []), by_overload[1].get(item.name, []), sources, levels)
        entry["opinfo_basis"] = ("name" if item.name in by_name else "trace") if entry["opinfos"] else None
        entries.append(entry)
    warnings = [f"declared overload not in torch {metadata.get('torch', '?')}: {m}" for m in missing + pack_missing]
    warnings += [f"exclusions: {problem}" for problem in getattr(sources.exclusions, "problems", ())]
    return {"schema_version": SCHEMA_VERSION, "metadata": metadata, "entries": entries,
            "not_relevant": dict(sorted(not_relevant.items())), "warnings": warnings}


def _invert(reach: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    for prop, found in sorted(reach.items()):
        for name in found:
            result.setdefault(name, []).append(prop)
    return result


def _entry(item: Any, opinfos: list[str], opinfo_props: list[str], suites: list[str], packs: list[str],
           sources: Sources, levels: dict[str, int]) -> dict[str, Any]:
    generation = sources.generated.get(item.name)
    generated = generation == "generated"
    match = sources.exclusions.match(item.name)
    exclusion = {"reason": match.reason, "source": match.source} if match is not None else None
    covering = opinfo_props + suites + packs + ([GENERATED_PROPERTY] if generated else [])
    found = [levels[p] for p in covering if p in levels]
    status = next(s for s, holds in zip(STATUSES, (opinfos, suites, generated, packs, exclusion, True)) if holds)
    entry = {"overload": item.name, "status": status, "level": min(found) if found else None, "rule": item.rule,
             "opinfos": opinfos, "opinfo_properties": opinfo_props, "suites": suites, "generated": generation,
             "backend_packs": packs, "exclusion": exclusion,
             "reached": None if sources.reached is None else item.name in sources.reached}
    if status == "unknown":
        entry |= {"kernels": list(item.kernels), "tags": list(item.tags), "schema": item.schema}
    return entry


def unknowns(audit: dict[str, Any]) -> list[dict[str, Any]]:
    """unknowns.json: each unknown overload with its kernels, tags, schema, rule, and why it is not generated."""
    return sorted(({"overload": e["overload"], "kernels": e.get("kernels", []), "tags": e.get("tags", []),
                    "schema": e.get("schema", ""), "rule": e["rule"], "generated": e["generated"]}
                   for e in audit["entries"] if e["status"] == "unknown"), key=lambda e: e["overload"])


def unmapped_tests(opinfo: Iterable[Any]) -> list[dict[str, str]]:
    """unmapped-tests.json: OpInfos whose names reach no overload, each with the reason."""
    return [{"opinfo": reach.op_id, "reason": reach.reason} for reach in opinfo if not reach.by_property]


def non_unique(audit: dict[str, Any]) -> dict[str, Any]:
    """Overloads claimed by more than one source (an OpInfo, a suite, generation, a pack, an exclusion),
    and OpInfos that map to the same set of relevant overloads (groups of two or more)."""
    claimed = []
    for e in audit["entries"]:
        sources = [f"opinfo:{o}" for o in e["opinfos"]] + [f"suite:{s}" for s in e["suites"]]
        sources += ["generated"] if e["generated"] == "generated" else []
        sources += [f"backend-pack:{p}" for p in e["backend_packs"]]
        sources += [f"excluded:{e['exclusion']['source']}"] if e["exclusion"] else []
        if len(sources) > 1:
            kinds = sorted({source.split(":", 1)[0] for source in sources})
            claimed.append({"overload": e["overload"], "status": e["status"], "kinds": kinds, "sources": sources})
    by_opinfo: dict[str, set[str]] = {}
    for e in audit["entries"]:
        for op in e["opinfos"]:
            by_opinfo.setdefault(op, set()).add(e["overload"])
    groups: dict[tuple[str, ...], list[str]] = {}
    for op, found in sorted(by_opinfo.items()):
        groups.setdefault(tuple(sorted(found)), []).append(op)
    same = [{"opinfos": ops, "overloads": list(found)} for found, ops in groups.items() if len(ops) > 1]
    return {"overloads": claimed, "opinfo_groups": sorted(same, key=lambda g: g["opinfos"])}


def metadata(inventory_metadata: dict[str, Any], project_dir: Path, manifest: Path | None,
             evidence: Path | None) -> dict[str, Any]:
    """What the audit was computed from: versions, date, inventory counts, exclusion files and hashes."""
    return {"torch": inventory_metadata.get("torch"), "torch_git": inventory_metadata.get("torch_git"),
            "torchcts": inventory_metadata.get("torchcts"), "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "inventory": inventory_metadata.get("counts", {}), "exclusion_files": exclusion_files(project_dir),
            "manifest": str(manifest) if manifest is not None else None,
            "evidence": str(evidence) if evidence is not None else None}


ARTIFACTS = ("inventory.json", "audit.json", "unknowns.json", "unmapped-tests.json", "summary.md")


def write_artifacts(folder: Path, audit: dict[str, Any], unmapped: list[dict[str, str]], summary: str,
                    inventory: dict[str, Any]) -> list[Path]:
    """Write the `ARTIFACTS` into `folder` (`inventory`: `exclusions.inventory_document`'s content, the same file
    `coverage inventory` writes), each atomically (a CI step reading one sees the old file or the new one);
    their paths."""
    texts = [(name, json.dumps(content, indent=1, sort_keys=False) + "\n") for name, content in (
        ("inventory.json", inventory), ("audit.json", audit), ("unknowns.json", unknowns(audit)),
        ("unmapped-tests.json", unmapped))]
    return [write_atomic(folder / name, text) for name, text in texts + [("summary.md", summary)]]


def run_audit(project_dir: Path, *, manifest: Path | None = None, evidence: Path | None = None) -> tuple[
        dict[str, Any], list[dict[str, str]]]:
    """Compute the audit of the installed torch: (audit.json content, unmapped-tests.json content).

    Raises ExclusionsError for a malformed exclusions file, ManifestError for a bad manifest and the
    evidence loader's error for a bad store."""
    from torchcts.plan import registry
    from torchcts.strategies import opinfo_trace

    exclusions = load_exclusions(project_dir)
    reached = None
    if evidence is not None:
        reached = frozenset(load_evidence(evidence).reached())
    extra = ()
    if manifest is not None:
        extra = _custom_test_dirs(manifest)
    properties = registry.load(extra)
    inventory = load_inventory()
    trace = opinfo_trace.packaged()
    opinfo = mapping.map_opinfos(mapping.opinfo_ops(properties), properties, inventory, opinfo_trace.traced_reach())
    sources = Sources(opinfo, properties, generated_overloads(), exclusions, reached)
    about = metadata(inventory_metadata(), project_dir, manifest, evidence)
    about["opinfo_trace"] = {key: trace["metadata"].get(key) for key in ("torch", "samples_per_dtype", "dtypes")}
    audit = build_audit(inventory, sources, about)
    if trace["metadata"].get("torch") != about.get("torch"):
        audit["warnings"].append(f"the packaged OpInfo trace is of torch {trace['metadata'].get('torch')}, not "
                                 f"{about.get('torch')}: refresh it with `python -m torchcts.strategies.opinfo_trace "
                                 "--refresh`")
    return audit, unmapped_tests(opinfo)


def _custom_test_dirs(manifest: Path) -> tuple[Path, ...]:
    """The manifest's `custom_test_dirs` (resolved); raises ManifestError for a manifest that is not valid."""
    from torchcts.manifest import load_manifest

    loaded, _ = load_manifest(manifest)
    return tuple(loaded.custom_test_dirs)
