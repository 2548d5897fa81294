"""`torchcts show-skips`: what a run would leave out and why, from the plan alone (nothing executes)."""

from __future__ import annotations

import collections
from typing import Any, Iterator

from torchcts.plan import registry
from torchcts.plan.items import Plan


def skip_lines(plan: Plan, manifest: Any, device: str | None, list_items: bool = False) -> Iterator[str]:
    """Lines: the items not run grouped by outcome and reason, counts per capability and dtype, what runs.

    Capabilities come from the registry: every property of the plan is registered (build_plan loaded it)."""
    capability_of = registry.capability_map()
    yield (f"manifest {manifest.source} ({manifest.device_name}), device {device or manifest.device_name}: "
           f"{len(plan.items)} items would run, {len(plan.accounting)} would not")
    by_reason: dict[tuple[str, str], list[Any]] = collections.defaultdict(list)
    for entry in plan.accounting:
        by_reason[(entry.outcome, entry.reason)].append(entry.item)
    by_outcome = collections.Counter(entry.outcome for entry in plan.accounting)
    yield ""
    yield "not run, by outcome and reason:"
    for outcome in sorted(by_outcome, key=lambda o: -by_outcome[o]):
        yield f"  {outcome}: {by_outcome[outcome]}"
        reasons = sorted(((reason, items) for (o, reason), items in by_reason.items() if o == outcome),
                         key=lambda pair: -len(pair[1]))
        for reason, items in reasons:
            yield f"    {len(items):6}  {reason}"
            if list_items:
                for item in items:
                    yield f"              {item.id}"
    yield ""
    yield "per capability (the property's capability): would run / would not run"
    for capability, (run, not_run) in sorted(_per(plan, lambda item: capability_of[item.property])):
        yield f"  {capability:28} {run:6} / {not_run}"
    yield ""
    yield "per dtype: would run / would not run"
    for dtype, (run, not_run) in sorted(_per(plan, lambda item: item.dtype)):
        yield f"  {dtype:28} {run:6} / {not_run}"
    yield ""
    yield f"would run: {len(plan.items)} items"
    by_property = collections.Counter(item.property for item in plan.items)
    for name in capability_of:
        if by_property[name]:
            yield f"  {name:28} {by_property[name]:6}"
    if list_items:
        for item in plan.items:
            yield f"    {item.id}"


def _per(plan: Plan, key: Any) -> list[tuple[str, tuple[int, int]]]:
    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for item in plan.items:
        counts[key(item)][0] += 1
    for entry in plan.accounting:
        counts[key(entry.item)][1] += 1
    return [(name, (run, not_run)) for name, (run, not_run) in counts.items()]
