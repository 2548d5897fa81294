"""What a plan holds: the items that run, the accounting records of the items that do not, and the plan."""

from __future__ import annotations

from typing import Any

import attrs

from torchcts.core.outcomes import Outcome


@attrs.frozen
class PlanItem:
    """One (property, op, variant, dtype) item; `id` is stable across runs and machines.

    For a scenario property `op` holds the scenario's name and `variant` is `scenario`."""

    property: str
    op: str
    variant: str
    dtype: str
    level: int

    @property
    def id(self) -> str:
        return f"{self.property}::{self.op}::{self.variant}::{self.dtype}"

    def as_json(self) -> dict[str, Any]:
        return {"item": self.id, **attrs.asdict(self)}


@attrs.frozen
class Accounting:
    """An item that does not run, with its not-run outcome and why."""

    item: PlanItem
    outcome: Outcome
    reason: str


@attrs.frozen
class Plan:
    items: tuple[PlanItem, ...]
    accounting: tuple[Accounting, ...]

    def for_property(self, name: str) -> tuple[PlanItem, ...]:
        return tuple(item for item in self.items if item.property == name)
