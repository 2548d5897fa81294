"""The known-crash ledger: reviewed rules naming what crashes or hangs the process, with torch-version bounds.

A rule says WHO crashes -- `"kind": "oracle"`, torch's own CPU kernel (the oracle every device is
compared against, so the rule applies on every device under test), or `"kind": "backend"`, the
backend under test (optionally one `device_type`) -- for which op (a regex on the OpInfo id),
property, dtypes and torch versions, and why. The isolation policy (`torchcts.isolation.policy`)
turns the rules into action: an item an oracle rule matches runs its cases in forked children
and a crash or hang of the oracle is accounted `cpu_contract` with the rule's reason; an item a
backend rule matches runs isolated as a whole. An oracle rule may name the case traits its crash
needs (`cases`, see `traits`) so only those cases fork, and a per-case limit (`timeout_s`) for
crashes that are hangs. On torch versions outside a rule's range, the item runs normally.

The packaged ledger (`known_crashes.json`, reviewed with the code) and a project-local one
(`known_crashes.json` next to the manifest, or `--known-crashes PATH`) are merged.
`--known-segfault-audit` validates every rule and shows which items each one matches, without
running anything. The format is documented in docs/harness.md.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterable

import attrs

from torchcts.crashes.versions import torch_minor, valid_range, version_in  # noqa: F401 - torch_minor for callers

PACKAGED = Path(__file__).with_name("known_crashes.json")
LOCAL_NAME = "known_crashes.json"
ORACLE, BACKEND = "oracle", "backend"
KINDS = (ORACLE, BACKEND)
DEFAULT_CASE_TIMEOUT_S = 30.0  # an oracle rule's per-case limit unless it says `timeout_s`
MAX_CASE_TIMEOUT_S = 3600.0
FIELDS = ("kind", "op", "reason", "property", "dtypes", "device_type", "torch", "cases", "timeout_s", "corrupts")


class LedgerError(Exception):
    """A ledger file or rule that cannot be used: which file, which rule, which field."""


@attrs.frozen
class CrashRule:
    source: str
    index: int
    op: str
    reason: str
    property_name: str | None = None
    dtypes: tuple[str, ...] | None = None
    device_type: str | None = None
    torch: str | None = None
    kind: str = BACKEND
    timeout_s: float = DEFAULT_CASE_TIMEOUT_S  # oracle rules: the limit per isolated case
    cases: tuple[str, ...] | None = None  # oracle rules: the case traits the crash needs (None: any case)
    # oracle rules: the crash is memory corruption, so a run that survives answers garbage: such cases are not run
    corrupts: bool = False

    @property
    def name(self) -> str:
        return f"{self.source}#{self.index}"

    @property
    def is_oracle(self) -> bool:
        return self.kind == ORACLE

    def applies(self, device_type: str, torch_version: tuple[int, int]) -> bool:
        """Whether the rule is in force on this device type and torch (an oracle rule: on every device)."""
        return (self.is_oracle or self.device_type in (None, device_type)) and version_in(torch_version, self.torch)

    def matches(self, prop: str, op: str, dtype: str, device_type: str, torch_version: tuple[int, int]) -> bool:
        return (self.applies(device_type, torch_version) and re.search(self.op, op) is not None
                and (self.property_name is None or self.property_name == prop)
                and (self.dtypes is None or dtype in self.dtypes))

    def describe(self) -> str:
        return (f"{self.kind}: op {self.op!r}" + (f", property {self.property_name}" if self.property_name else "")
                + (f", dtypes {', '.join(self.dtypes)}" if self.dtypes else "")
                + (f", device {self.device_type}" if self.device_type else "")
                + (f", torch {self.torch}" if self.torch else "")
                + (f", cases with {' or '.join(self.cases)}" if self.cases else "")
                + (", not run (the oracle corrupts memory)" if self.corrupts else "")
                + (f", {self.timeout_s:g} s a case" if self.is_oracle else "") + f": {self.reason}")


def load_ledger(path: Path) -> list[CrashRule]:
    """The rules in one ledger file; LedgerError names the file, the rule and the field."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise LedgerError(f"{path}: expected an object with a list `rules`")
    source = "torchcts/crashes/known_crashes.json" if Path(path) == PACKAGED else str(path)
    return [_rule(source, index, raw) for index, raw in enumerate(data["rules"])]


def _rule(path: str, index: int, raw: Any) -> CrashRule:
    where = f"{path}: rules[{index}]"
    if not isinstance(raw, dict):
        raise LedgerError(f"{where}: expected an object")
    unknown = set(raw) - set(FIELDS)
    if unknown:
        raise LedgerError(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}; "
                          f"allowed: {', '.join(FIELDS)}")
    kind = raw.get("kind", BACKEND)
    if kind not in KINDS:
        raise LedgerError(f"{where}.kind: {_brief(kind)}; allowed: oracle (torch's CPU kernel crashes, on every "
                          "device) or backend (the backend under test crashes; the default)")
    for field in ("op", "reason"):
        if not isinstance(raw.get(field), str) or not raw[field]:
            raise LedgerError(f"{where}.{field}: required, a non-empty string")
    try:
        re.compile(raw["op"])
    except re.error as exc:
        raise LedgerError(f"{where}.op: not a regex: {exc}") from None
    _check_property(where, raw.get("property"))
    device_type = raw.get("device_type")
    if device_type is not None and (kind == ORACLE or not isinstance(device_type, str) or not device_type):
        raise LedgerError(f"{where}.device_type: " + ("an oracle rule applies on every device; device_type is for "
                                                      "backend rules" if kind == ORACLE else
                                                      f"{_brief(device_type)}; a device type name (cuda, faulty, ...)"))
    torch_range = raw.get("torch")
    if torch_range is None and kind == ORACLE:
        raise LedgerError(f"{where}.torch: required for an oracle rule (the torch versions the CPU kernel crashes "
                          "on), e.g. \">=2.13,<2.14\"")
    if torch_range is not None and (not isinstance(torch_range, str) or not valid_range(torch_range)):
        raise LedgerError(f"{where}.torch: {_brief(torch_range)}; expected clauses like \">=2.13,<2.14\"")
    return CrashRule(path, index, raw["op"], raw["reason"], raw.get("property"), _dtypes(where, raw.get("dtypes")),
                     device_type, torch_range, kind, _timeout(where, kind, raw), _cases(where, kind, raw),
                     _corrupts(where, kind, raw))


def _check_property(where: str, name: Any) -> None:
    if name is None:
        return
    from torchcts.plan import registry  # the registry is a leaf: no cycle back into the ledger

    registry.load()
    known = [p.name for p in registry.properties()]
    if not isinstance(name, str) or name not in known:
        raise LedgerError(f"{where}.property: {_brief(name)}; known: {', '.join(known)}")


def _dtypes(where: str, dtypes: Any) -> tuple[str, ...] | None:
    if dtypes is None:
        return None
    from torchcts import dtypes as dtype_names  # torch: only a rule that names dtypes needs it

    if not isinstance(dtypes, list) or not dtypes or not all(isinstance(d, str) and dtype_names.lookup(d)
                                                             for d in dtypes):
        raise LedgerError(f"{where}.dtypes: {_brief(dtypes)}; a non-empty list of dtype names (float32, bfloat16, ...)")
    return tuple(dtype_names.canonical_name(dtype_names.lookup(d)) for d in dtypes)


def _cases(where: str, kind: str, raw: dict) -> tuple[str, ...] | None:
    if "cases" not in raw:
        return None
    from torchcts.crashes.traits import TRAITS  # torch: only an oracle rule that names case traits needs it

    value = raw["cases"]
    if kind != ORACLE:
        raise LedgerError(f"{where}.cases: only oracle rules isolate single cases; a backend rule isolates its items")
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v in TRAITS for v in value):
        raise LedgerError(f"{where}.cases: {_brief(value)}; a non-empty list of case traits: {', '.join(TRAITS)}")
    return tuple(value)


def _corrupts(where: str, kind: str, raw: dict) -> bool:
    value = raw.get("corrupts", False)
    if not isinstance(value, bool):
        raise LedgerError(f"{where}.corrupts: {_brief(value)}; true or false")
    if value and kind != ORACLE:
        raise LedgerError(f"{where}.corrupts: only oracle rules leave cases unrun; a backend rule isolates its items")
    return value


def _timeout(where: str, kind: str, raw: dict) -> float:
    if "timeout_s" not in raw:
        return DEFAULT_CASE_TIMEOUT_S
    value = raw["timeout_s"]
    if kind != ORACLE:
        raise LedgerError(f"{where}.timeout_s: only oracle rules have a per-case limit; a backend rule's item runs "
                          "under --item-timeout")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= MAX_CASE_TIMEOUT_S:
        raise LedgerError(f"{where}.timeout_s: {_brief(value)}; seconds a case may run, a number in "
                          f"(0, {MAX_CASE_TIMEOUT_S:g}]")
    return float(value)


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def ledger_rules(policy: str, local: Path | None) -> list[CrashRule]:
    """The packaged rules plus the project-local ones. With the policy `off` only the oracle rules:
    they describe the reference, not the backend, and without them a CPU crash would end the run."""
    rules = load_ledger(PACKAGED)
    if local is not None and Path(local).exists():
        rules += load_ledger(local)
    return [rule for rule in rules if rule.is_oracle] if policy == "off" else rules


def matching_rule(rules: Iterable[CrashRule], item: Any, device_type: str, torch_version: tuple[int, int],
                  kind: str | None = None) -> CrashRule | None:
    """The first rule (of `kind`, or any) matching the item on this device type and torch, or None."""
    return next((rule for rule in rules if (kind is None or rule.kind == kind)
                 and rule.matches(item.property, item.op, item.dtype, device_type, torch_version)), None)


def audit_lines(rules: list[CrashRule], items: list[Any], device_type: str,
                torch_version: tuple[int, int]) -> tuple[list[str], bool]:
    """(lines: every rule, oracle and backend, and the items it matches; whether every rule in force
    on this device and torch matches at least one item)."""
    lines, ok = [], True
    for rule in rules:
        matched = [item.id for item in items if rule.matches(item.property, item.op, item.dtype, device_type,
                                                             torch_version)]
        applies = rule.applies(device_type, torch_version)
        status = f"{len(matched)} items" if matched else ("matches no item" if applies else
                                                          "does not apply to this device or torch")
        ok = ok and (bool(matched) or not applies)
        lines.append(f"{rule.name}: {status}: {rule.describe()}")
        lines.extend(f"    {item}" for item in matched[:20])
        if len(matched) > 20:
            lines.append(f"    ... and {len(matched) - 20} more")
    return lines, ok
