"""The run plan: which (property, op, variant, dtype) items run, and a reason for every one that does not.

The properties come from the registry (`torchcts.plan.registry`): the installed suites and those in
the manifest's `custom_test_dirs`. An OpInfo property is considered for every OpInfo its item
source applies to, in every dtype that source gives; a scenario property for each of its scenarios
in each dtype it lists. An item runs only if the manifest claims the dtype for the op, declares the
property's capability, does not skip the op, the property's level is within the run's depth, and the run's
own selection (`--dtype`, `--ops`, `--property`, `--capability`, `--last-failed`, `--shard`) keeps it.
Everything else becomes an accounting record with the reason named in docs/architecture.md, so a report
can say what was not run and why.

The claims and the depth are the run's (`torchcts.plan.effective`): `--level` replaces the manifest's
semantic_level as the run's depth, up as well as down, and `--dtype` claims its dtypes for every op (the others
are deselected); an item above the depth is `level_filtered` with a reason naming who set the depth.

A scenario item stands where an op would: its scenario name is what a dtype claim's op regex,
`skip_ops` and `--ops` are matched against (`supported_dtypes={"float16": "^view_"}` claims float16
for the scenarios whose names start with `view_`).
"""

from __future__ import annotations

from typing import Any, Iterable

import torch

from torchcts import dtypes as dtype_names
from torchcts.manifest import DtypeStatus, Manifest
from torchcts.core.outcomes import Outcome
from torchcts.plan import op_metadata, registry
from torchcts.plan.catalog import op_id
from torchcts.plan.effective import RunClaims, run_claims
from torchcts.plan.items import Accounting, Plan, PlanItem
from torchcts.plan.registry import PropertySpec
from torchcts.plan.selection import Selection, SelectionError
from torchcts.core.shards import shard_reason

__all__ = ["Accounting", "Plan", "PlanItem", "Selection", "SelectionError", "build_plan", "capabilities_tested"]

DTYPE_NOT_RUN = {  # a dtype the manifest does not claim for the op: the accounting outcome and its detail
    DtypeStatus.NOT_SUPPORTED: (Outcome.DTYPE_NOT_SUPPORTED, "the manifest marks it False"),
    DtypeStatus.REGEX_FILTERED: (Outcome.DTYPE_REGEX_FILTERED, "the manifest's regex for it does not match this op"),
    DtypeStatus.NOT_LISTED: (Outcome.DTYPE_NOT_LISTED, "the manifest does not list it"),
}


def build_plan(manifest: Manifest, selection: Selection = Selection(), ops: Iterable[Any] | None = None,
               properties: Iterable[PropertySpec] | None = None) -> Plan:
    """Items to run and accounting for the rest: every registered property (or `properties`) over its items.

    OpInfo properties take every OpInfo (or `ops`: OpInfos, or `op_metadata.OpMetadata` records), asked through
    the OpInfo metadata cache when it answers every property's item source (`op_metadata.planning_ops`); the
    registry is loaded with the manifest's `custom_test_dirs` (registry.RegistryError when a custom module cannot
    be imported)."""
    specs = registry.load(manifest.custom_test_dirs) if properties is None else tuple(properties)
    claims = run_claims(manifest, selection)
    items: list[PlanItem] = []
    accounting: list[Accounting] = []

    def consider(item: PlanItem, spec: PropertySpec, dtype: torch.dtype, names: tuple[str, ...]) -> None:
        verdict = _not_run_reason(claims, selection, spec, names, dtype, item.id)
        if verdict is None:
            items.append(item)
        else:
            accounting.append(Accounting(item, *verdict))

    opinfo_specs = [spec for spec in specs if not spec.scenario]
    if opinfo_specs and ops is None:
        ops = op_metadata.planning_ops(spec.items for spec in opinfo_specs)
    for op in ops if opinfo_specs else ():
        name = op_id(op)
        for spec in opinfo_specs:
            for dtype in op_metadata.answer(spec.items, op) or ():
                item = PlanItem(spec.name, name, spec.variant, dtype_names.canonical_name(dtype), spec.level)
                consider(item, spec, dtype, (op.name, name))
    for spec in specs:
        if spec.scenario:
            for scenario in spec.items.scenarios:
                for dtype_name in spec.items.dtypes:
                    dtype = dtype_names.lookup(dtype_name)
                    item = PlanItem(spec.name, scenario, spec.variant, dtype_names.canonical_name(dtype), spec.level)
                    consider(item, spec, dtype, (scenario,))
    return Plan(tuple(items), tuple(accounting))


def capabilities_tested(items: Iterable[PlanItem]) -> set[str]:
    """The capabilities that items of a plan test: each property's own and those it also proves, a scenario's `needs`,
    and `fp8` for float8 items (the capabilities `_not_run_reason` asks the manifest to declare)."""
    tested: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for item in items:
        if (item.property, item.op) in seen:
            continue
        seen.add((item.property, item.op))
        spec = registry.get(item.property)
        tested.add(spec.capability)
        tested.update(spec.also_proves)
        need = getattr(spec.items, "needs", {}).get(item.op)
        if need is not None:
            tested.add(need)
    if any(dtype_names.lookup(dtype) in dtype_names.FLOAT8_DTYPES for dtype in {item.dtype for item in items}):
        tested.add("fp8")
    return tested


def _not_run_reason(claims: RunClaims, selection: Selection, spec: PropertySpec, names: tuple[str, ...],
                    dtype: torch.dtype, item_id: str) -> tuple[Outcome, str] | None:
    """Why the item does not run, or None. `names`: the OpInfo's name and id (or the scenario's name);
    dtype regexes match the first, `skip_ops` either, `--ops` the last. `--shard` is asked last, only
    of items that would run: every shard of a run accounts for the items not run in the same words."""
    manifest = claims.effective
    status = manifest.dtype_status(dtype, names[0])
    if status is not DtypeStatus.CLAIMED:
        outcome, detail = DTYPE_NOT_RUN[status]
        return outcome, f"{dtype_names.canonical_name(dtype)}: {detail}"
    if dtype in dtype_names.FLOAT8_DTYPES and not manifest.declares("fp8"):
        return Outcome.CAPABILITY_NOT_DECLARED, "float8 dtypes need the fp8 capability"
    if not manifest.declares(spec.capability):
        return Outcome.CAPABILITY_NOT_DECLARED, f"the {spec.name} property needs the {spec.capability} capability"
    need = getattr(spec.items, "needs", {}).get(names[0])
    if need is not None and not manifest.declares(need):
        return Outcome.CAPABILITY_NOT_DECLARED, f"{spec.name}'s {names[0]} needs the {need} capability"
    unclaimed = _unclaimed_format(manifest, spec, names[0])
    if unclaimed is not None:
        return Outcome.CAPABILITY_NOT_DECLARED, unclaimed
    if spec.capability == "ieee754" and not manifest.ieee754_claimed_for(names[0]):  # ieee754 given as op regexes
        return Outcome.CAPABILITY_NOT_DECLARED, f"capabilities.ieee754's op regexes do not match {names[0]}"
    reason = next((r for r in map(manifest.skip_reason, names) if r is not None), None)
    if reason is not None:
        return Outcome.OP_EXCLUDED, reason
    if spec.level > claims.depth:
        return Outcome.LEVEL_FILTERED, claims.level_reason(spec.level)
    if selection.dtypes is not None and dtype not in selection.dtypes:  # claimed by the file, not selected
        return Outcome.DESELECTED, "--dtype leaves it out"
    if selection.properties is not None and spec.name not in selection.properties:
        return Outcome.DESELECTED, "--property leaves it out"
    if not selection.op_selected(names[-1]):
        return Outcome.DESELECTED, "--ops leaves it out"
    narrowed = selection.narrowing_reason(spec, item_id)  # --capability, --last-failed
    if narrowed is not None:
        return Outcome.DESELECTED, narrowed
    if selection.shard is not None:
        reason = shard_reason(item_id, selection.shard)
        if reason is not None:
            return Outcome.DESELECTED, reason
    return None


def _unclaimed_format(manifest: Manifest, spec: PropertySpec, scenario: str) -> str | None:
    """Why a container-format scenario does not run (its format is not named by the manifest key its suite reads),
    or None."""
    key = getattr(spec.items, "formats", "")
    if not key:
        return None
    claimed = manifest.container_formats if key == "supported_container_formats" else manifest.custom_container_decoders
    if scenario in claimed:
        return None
    return f"{key} does not name {scenario}"
