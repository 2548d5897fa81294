"""Which items a seeded bug's run must include, read from the records of its phase's clean run.

The clean run traces, per item, the aten overloads (and named steps) it ran on the faulty device
and, with `would_fire` on, the seeded bugs whose condition held on one of those calls
(`would:<name>`). A run with only bug B on is, item by item, the clean run up to the first call where
B's condition holds (derandomized: the same draws; the bug changes nothing before it fires). So:

- a precise bug (`Bug.precise`: its condition reads only the call) is rerun on the items whose clean
  trace says it would fire, but those the clean backend fails (they show no bug); none: nothing to
  rerun, the bug is missed as the full rerun would miss it;
- a bug whose condition counts across calls (`precise=False`: the 256th queued op, the reading after
  a free) is rerun, as before this pruning, on every item of the ops or scenarios whose items reached
  one of its overloads, in the order the run gives them.

Precise bugs no item would fire two of share a run (`group_reaches`), all on at once: an item where only
its own bug fired (`bug:<name>` in its trace) ran as with that bug alone, since every other bug's condition
was false at each of its calls; an item where another bug of the run fired too is rerun with its own alone.

A run is selected with `run`'s own options (`--property`, `--ops`), never `--dtype` (which would
claim dtypes the manifest does not: other items, other verdicts), so it may run a few items more
than those named: the cross product of their properties and ops in the phase's dtypes.
"""

from __future__ import annotations

import collections
import re
from typing import Any, Iterable

import attrs

from torchcts.testing.faulty.bugs import FIRED_PREFIX
from torchcts.testing.faulty.would_fire import bugs_noted
PROBLEMS = ("failed", "error", "crashed", "timed_out")  # an item the clean backend fails shows no bug


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
    """The records of items the clean backend does not fail (passed, or found their runtime unavailable, ...) whose
    trace says `bug` would have fired in them: with the bug on, such an item may fail or error."""
    return [r for r in records if r["outcome"] not in PROBLEMS and bug.name in bugs_noted(r.get("device_ops") or ())]


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


# -- several bugs in one run ------------------------------------------------------------------------

EXTRA_ITEMS = 24  # items a bug may add to a group's run beyond its own and the group's (its properties x ops)
GROUP_SIZE = 8  # bugs in one run at most: the more, the likelier two act in one item (then one reruns alone)


@attrs.frozen
class BugGroup:
    """Precise bugs run together: no item would fire two of them, so an item where only its own bug fired runs as
    with that bug alone (every other bug's condition was false at each of its calls); `owners`: item -> bug."""

    reaches: tuple[BugReach, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(reach.bug for reach in self.reaches)

    @property
    def owners(self) -> dict[str, str]:
        return {item: reach.bug for reach in self.reaches for item in reach.firing_items}

    @property
    def properties(self) -> tuple[str, ...]:
        return tuple(sorted({p for reach in self.reaches for p in reach.properties}))

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(sorted({op for reach in self.reaches for op in reach.ops}))

    def ops_pattern(self) -> str:
        return "^(" + "|".join(re.escape(op) for op in self.ops) + ")$"


def group_reaches(reaches: Iterable[BugReach], records: Iterable[dict[str, Any]]) -> list[BugGroup]:
    """The runs of these precise bugs' reaches (each `runs`): greedily, each joins the first group none of whose
    firing items it shares, if that adds at most EXTRA_ITEMS items to the group's run (the cross product of
    properties and ops selects items no bug of the group fires, which run as they ran clean)."""
    counts = collections.Counter((r["property"], r["op"]) for r in records if _ran(r))

    def size(properties: Iterable[str], ops: Iterable[str]) -> int:
        ops = tuple(ops)
        return sum(counts.get((p, o), 0) for p in properties for o in ops)

    groups: list[list[BugReach]] = []
    for reach in sorted(reaches, key=lambda r: (-len(r.firing_items), r.bug)):
        mine = set(reach.firing_items)
        for group in groups:
            current = BugGroup(tuple(group))
            joined = BugGroup((*group, reach))
            if (len(group) < GROUP_SIZE and mine.isdisjoint(current.owners)
                    and size(joined.properties, joined.ops)
                    <= size(current.properties, current.ops) + size(reach.properties, reach.ops) + EXTRA_ITEMS):
                group.append(reach)
                break
        else:
            groups.append([reach])
    return [BugGroup(tuple(group)) for group in groups]


def fired_bugs(trace: Iterable[str]) -> set[str]:
    """The seeded bugs a device trace (a record's `device_ops`) says fired (`bug:<name>`)."""
    return {entry[len(FIRED_PREFIX):] for entry in trace if entry.startswith(FIRED_PREFIX)}
