"""The run plan: which (property, op, variant, dtype) items run, and a reason for every one that does not.

Every OpInfo and every dtype it supports on CPU is considered for every property. An item runs
only if the manifest claims the dtype for the op, declares the property's capability, does not
skip the op, claims the property's semantic level, and the run's own selection (`--level`,
`--dtype`, op patterns) keeps it. Everything else becomes an accounting record with the reason
named in DESIGN.md, so a report can say what was not run and why.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import attrs
import torch

from torchcts import dtypes as dtype_names
from torchcts.arguments import shown
from torchcts.manifest import DtypeStatus, Manifest
from torchcts.plan.catalog import all_ops, op_id
from torchcts.crashes.oracle import known_oracle_crash


@attrs.frozen
class Property:
    """A property suite: its id, semantic level, the capability it tests and the variant it uses."""

    name: str
    level: int
    capability: str
    variant: str = "function"

    def applies_to(self, op: Any) -> bool:
        if self.variant == "inplace":
            return op.inplace_variant is not None
        if self.variant == "out":
            return bool(op.supports_out)
        if self.name == "errors":
            return op.error_inputs_func is not None
        if self.name == "backward":
            return bool(op.supports_autograd)
        return True

    def dtypes(self, op: Any) -> set[torch.dtype]:
        """The dtypes this property can test the op in on CPU (gradients need floating dtypes)."""
        if self.name == "backward":
            return {d for d in op.supported_backward_dtypes("cpu") if d.is_floating_point or d.is_complex}
        return set(op.supported_dtypes("cpu"))


PROPERTIES: tuple[Property, ...] = (
    Property("forward", 1, "inference"),
    Property("layout", 2, "inference"),
    Property("errors", 2, "inference"),
    Property("inplace", 3, "inference", "inplace"),
    Property("out", 3, "inference", "out"),
    Property("backward", 4, "training"),
)
PROPERTY_BY_NAME = {p.name: p for p in PROPERTIES}


@attrs.frozen
class PlanItem:
    """One (property, op, variant, dtype) item; `id` is stable across runs and machines."""

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
    """An item that does not run, with its outcome name and why."""

    item: PlanItem
    outcome: str  # one of the not-run outcomes in DESIGN.md
    reason: str


class SelectionError(ValueError):
    """A command-line selection that cannot be used; the message names the option and what is allowed."""


def _check_level(_: Any, __: Any, level: int | None) -> None:
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 8):
        raise SelectionError(f"--level must be an integer from 1 to 8, got {level!r}")


def _compile_patterns(selection: "Selection") -> tuple[re.Pattern[str], ...]:
    """The `--ops` regexes, compiled once when the selection is made: a bad one fails before anything runs."""
    compiled = []
    for pattern in selection.op_patterns:
        if not pattern:
            raise SelectionError("--ops '': an empty regex matches every op; leave --ops out to run them all")
        try:
            compiled.append(re.compile(pattern))
        except (re.error, OverflowError, RecursionError) as exc:
            raise SelectionError(f"--ops {shown(pattern)} is not a valid regular expression: {exc}") from None
    return tuple(compiled)


@attrs.frozen
class Selection:
    """What this run keeps of the manifest's claims (command-line narrowing); checked when made."""

    level: int | None = attrs.field(default=None, validator=_check_level)
    dtypes: tuple[torch.dtype, ...] | None = None
    op_patterns: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    properties: tuple[str, ...] | None = None
    _op_regexes: tuple[re.Pattern[str], ...] = attrs.field(
        init=False, repr=False, eq=False, default=attrs.Factory(_compile_patterns, takes_self=True))

    def op_selected(self, name: str) -> bool:
        return not self._op_regexes or any(p.search(name) for p in self._op_regexes)


@attrs.frozen
class Plan:
    items: tuple[PlanItem, ...]
    accounting: tuple[Accounting, ...]

    def for_property(self, name: str) -> tuple[PlanItem, ...]:
        return tuple(item for item in self.items if item.property == name)


def build_plan(manifest: Manifest, selection: Selection = Selection(), ops: Iterable[Any] | None = None) -> Plan:
    """Items to run and accounting for the rest, for every OpInfo (or `ops`) and property."""
    items: list[PlanItem] = []
    accounting: list[Accounting] = []
    for op in ops if ops is not None else all_ops():
        name = op_id(op)
        for prop in PROPERTIES:
            if not prop.applies_to(op):
                continue
            supported = prop.dtypes(op)
            for dtype in dtype_names.CLAIMABLE_DTYPES:
                if dtype not in supported:
                    continue
                item = PlanItem(prop.name, name, prop.variant, dtype_names.canonical_name(dtype), prop.level)
                verdict = _not_run_reason(manifest, selection, prop, op, name, dtype)
                if verdict is None:
                    items.append(item)
                else:
                    accounting.append(Accounting(item, *verdict))
    return Plan(tuple(items), tuple(accounting))


def _not_run_reason(manifest: Manifest, selection: Selection, prop: Property, op: Any, name: str,
                    dtype: torch.dtype) -> tuple[str, str] | None:
    status = manifest.dtype_status(dtype, op.name)
    if status is not DtypeStatus.CLAIMED:
        detail = {DtypeStatus.NOT_SUPPORTED: "the manifest marks it False",
                  DtypeStatus.REGEX_FILTERED: "the manifest's regex for it does not match this op",
                  DtypeStatus.NOT_LISTED: "the manifest does not list it"}[status]
        return status.value, f"{dtype_names.canonical_name(dtype)}: {detail}"
    if dtype in dtype_names.FLOAT8_DTYPES and not manifest.declares("fp8"):
        return "capability_not_declared", "float8 dtypes need the fp8 capability"
    if not manifest.declares(prop.capability):
        return "capability_not_declared", f"the {prop.name} property needs the {prop.capability} capability"
    reason = manifest.skip_reason(op.name) or manifest.skip_reason(name)
    if reason is not None:
        return "op_excluded", reason
    if prop.level > manifest.semantic_level:
        return "level_filtered", f"level {prop.level} is above the manifest's semantic_level {manifest.semantic_level}"
    if selection.level is not None and prop.level > selection.level:
        return "deselected", f"level {prop.level} is above --level {selection.level}"
    if selection.dtypes is not None and dtype not in selection.dtypes:
        return "deselected", "--dtype leaves it out"
    if selection.properties is not None and prop.name not in selection.properties:
        return "deselected", "--property leaves it out"
    if not selection.op_selected(name):
        return "deselected", "--ops leaves it out"
    crash = known_oracle_crash(prop.name, name, dtype)
    if crash is not None:
        return "cpu_contract", crash
    return None
