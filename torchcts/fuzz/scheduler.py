"""The hunt's scheduler: which item to visit next, from one seeded generator and what visits showed.

Every item is visited once first (in a shuffled order), then items are drawn by weight: a visit
that shows new behaviour (a new corpus case, or a larger error than the item has shown before)
doubles its item's weight, a visit that shows nothing halves it (within MIN_WEIGHT..MAX_WEIGHT).
An item leaves the schedule when it crashed or hung (`lost`), when no case can run on the target
(`unavailable`), or after one visit when its property has a fixed list of cases (`exhausted`).
Pure: no processes, no clock (the caller passes elapsed seconds), no torch.
"""

from __future__ import annotations

import random
from typing import Any, Iterable

import attrs

from torchcts.core.outcomes import Outcome

MAX_WEIGHT, MIN_WEIGHT = 16.0, 1 / 64
# An item's state in fuzz.json besides `crashed` and `timed_out` (the outcomes of a lost visit):
HUNTED = "hunted"  # still in the schedule when the hunt ended
EXHAUSTED = "exhausted"  # a fixed list of cases, all run by one visit
UNAVAILABLE = "unavailable"  # no case can run on this target
LOST = (Outcome.CRASHED, Outcome.TIMED_OUT)


@attrs.define
class ItemStats:
    """What the hunt has seen of one (property, op, variant, dtype) item."""

    item: Any
    weight: float = 1.0
    tasks: int = 0
    examples: int = 0
    distinct_cases: int = 0  # each visit's distinct cases, summed (visits draw with different seeds)
    failures: int = 0
    new_cases: list[dict[str, Any]] = attrs.field(factory=list)
    max_ulp: int = 0
    first_failure_s: float | None = None
    first_failure_visit: int | None = None  # the hunt's visit number: unlike seconds, the same on any machine
    outcome: str = ""  # crashed, timed_out, unavailable, exhausted, or "" while it can still be scheduled

    def as_json(self) -> dict[str, Any]:
        return {"item": self.item.id, "tasks": self.tasks, "examples": self.examples,
                "distinct_cases": self.distinct_cases, "failures": self.failures,
                "new_cases": self.new_cases, "max_ulp": self.max_ulp, "first_failure_s": self.first_failure_s,
                "first_failure_visit": self.first_failure_visit, "final_weight": round(self.weight, 4),
                "outcome": self.outcome or HUNTED}

    def _first_failure(self, elapsed_s: float, visit: int) -> None:
        if self.first_failure_s is None:
            self.first_failure_s, self.first_failure_visit = round(elapsed_s, 1), visit


class Scheduler:
    """Chooses the next item: unvisited ones first, then by weight (novelty raises it, none halves it).

    `fixed_properties` names the properties whose cases are a fixed list (the registry's
    `draws=False`): one visit runs them all, so their items are not scheduled again."""

    def __init__(self, items: list[Any], rng: random.Random, fixed_properties: Iterable[str] = ()):
        self.stats = {item.id: ItemStats(item) for item in items}
        self.rng = rng
        self.fixed_properties = frozenset(fixed_properties)
        self._unvisited = [item.id for item in items]
        rng.shuffle(self._unvisited)

    def next_item(self, busy: set[str]) -> ItemStats | None:
        """The next item to visit, none of those in `busy`; None when no item is left to schedule."""
        while self._unvisited:
            item_id = self._unvisited.pop()
            if item_id not in busy:
                return self.stats[item_id]
        open_items = [s for s in self.stats.values() if not s.outcome and s.item.id not in busy]
        if not open_items:
            return None
        return self.rng.choices(open_items, weights=[s.weight for s in open_items])[0]

    def finished(self, stats: ItemStats, result: dict[str, Any], elapsed_s: float, visit: int = 0) -> None:
        """Account a visit's answer (status passed/failed/unavailable, examples, distinct cases, max_ulp,
        counterexample)."""
        stats.tasks += 1
        stats.examples += result.get("examples", 0)
        stats.distinct_cases += result.get("distinct_cases", 0)
        novel = False
        if result["status"] == Outcome.FAILED:
            stats.failures += 1
            case = result.get("counterexample") or {}
            if case.get("new"):
                novel = True
                stats.new_cases.append(case)
            stats._first_failure(elapsed_s, visit)
        elif result["status"] == UNAVAILABLE and not stats.outcome:
            stats.outcome = UNAVAILABLE
        if result.get("max_ulp", 0) > stats.max_ulp:
            novel = novel or stats.tasks > 1  # the first visit sets the baseline
            stats.max_ulp = result["max_ulp"]
        if stats.item.property in self.fixed_properties and not stats.outcome:
            stats.outcome = EXHAUSTED
        stats.weight = min(stats.weight * 2, MAX_WEIGHT) if novel else max(stats.weight / 2, MIN_WEIGHT)

    def lost(self, stats: ItemStats, outcome: str, elapsed_s: float, visit: int = 0) -> None:
        """Account a visit whose worker crashed or hung (`outcome`): the item leaves the schedule."""
        stats.tasks += 1
        stats.outcome = stats.outcome or outcome  # a crash replay that overruns leaves the item `crashed`
        stats._first_failure(elapsed_s, visit)
