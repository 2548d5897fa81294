"""Which items a seeded bug's run must include, read from the records of its phase's clean run.

The clean run traces, per item, the aten overloads (and named steps) it ran on the faulty device
and, with `would_fire` on, the seeded bugs whose condition held on one of those calls
(`would:<name>`). A run with only bug B on is, item by item, the clean run up to the first call where
B's condition holds (derandomized: the same draws; the bug changes nothing before it fires). So:

- a precise bug (`Bug.precise`: its condition reads only the call) is rerun on the items whose clean
  trace says it would fire, and only those the clean backend passes (an item that fails clean shows
  no bug); none: nothing to rerun, the bug is missed as the full rerun would miss it;
- a bug whose condition counts across calls (`precise=False`: the 256th queued op, the reading after
  a free) is rerun, as before this pruning, on every item of the ops or scenarios whose items reached
  one of its overloads, in the order the run gives them.

A run is selected with `run`'s own options (`--property`, `--ops`), never `--dtype` (which would
claim dtypes the manifest does not: other items, other verdicts), so it may run a few items more
than those named: the cross product of their properties and ops in the phase's dtypes.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import attrs

from torchcts.testing.faulty.would_fire import bugs_noted

PASSED = "passed"


@attrs.frozen
class BugReach:
    """What the clean run of a phase says about one bug: the ops (or scenarios) whose items ran one of its
    overloads, the items that would fire it, and the run that tests it (`properties` x `ops`; none: no run)."""

    bug: str
    reached_ops: tuple[str, ...]
    firing_items: tuple[str, ...]
    properties: tuple[str, ...]
    ops: tuple[str, ...]

    @property
    def runs(self) -> bool:
        return bool(self.ops)

    def ops_pattern(self) -> str:
        """The `run --ops` regex of exactly these ops or scenarios (searched, so anchored)."""
        return "^(" + "|".join(re.escape(op) for op in self.ops) + ")$"


def reached_ops(records: Iterable[dict[str, Any]], bug: Any) -> set[str]:
    """The ops (OpInfo ids, or scenario names) of the records whose device trace has one of `bug`'s overloads."""
    overloads = set(bug.ops)
    return {r["op"] for r in records if overloads.intersection(r.get("device_ops") or ())}


def firing_records(records: Iterable[dict[str, Any]], bug: Any) -> list[dict[str, Any]]:
    """The records of items the clean backend passes whose trace says `bug` would have fired in them."""
    return [r for r in records if r["outcome"] == PASSED and bug.name in bugs_noted(r.get("device_ops") or ())]


def bug_reach(records: list[dict[str, Any]], bug: Any, phase_properties: Iterable[str]) -> BugReach:
    """The reach of `bug` in a phase's clean `records` and the run that tests it (see the module's doc)."""
    reached = reached_ops(records, bug)
    firing = firing_records(records, bug)
    if bug.precise:
        properties, ops = {r["property"] for r in firing}, {r["op"] for r in firing}
    else:
        properties, ops = set(phase_properties) if reached else set(), reached
    return BugReach(bug.name, tuple(sorted(reached)), tuple(sorted(r["item"] for r in firing)),
                    tuple(sorted(properties)), tuple(sorted(ops)))


def selected_items(records: Iterable[dict[str, Any]], reach: BugReach) -> list[str]:
    """The items of the clean run that ran and that the bug's run selects (its properties x ops): its size."""
    properties, ops = set(reach.properties), set(reach.ops)
    return [r["item"] for r in records if _ran(r) and r["property"] in properties and r["op"] in ops]


def reached_items(records: Iterable[dict[str, Any]], reach: BugReach) -> list[str]:
    """The items that ran and that the selftest reran for the bug before this pruning: every item of a reached op
    (for the benchmark's before/after figures)."""
    ops = set(reach.reached_ops)
    return [r["item"] for r in records if _ran(r) and r["op"] in ops]


def _ran(record: dict[str, Any]) -> bool:
    """Whether the item ran in a traced run: its record has a device trace (records of items not run have none)."""
    return "device_ops" in record
