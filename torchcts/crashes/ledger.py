"""The known-crash ledger: reviewed rules naming items that crash or hang the process, run isolated.

A rule names an op (regex on the OpInfo id) and optionally a property, dtypes, a device type and
a torch version range, with the reason. The packaged ledger (`known_crashes.json`, reviewed with
the code) and a project-local one (`known_crashes.json` next to the manifest, or
`--known-crashes PATH`) are merged. `--known-segfault-audit` validates every rule and shows which
items each one matches, without running anything.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

import attrs

PACKAGED = Path(__file__).with_name("known_crashes.json")
LOCAL_NAME = "known_crashes.json"
_VERSION_CLAUSE = re.compile(r"^(>=|<=|==|<|>)\s*(\d+)\.(\d+)$")


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

    @property
    def name(self) -> str:
        return f"{self.source}#{self.index}"

    def matches(self, prop: str, op: str, dtype: str, device_type: str, torch_version: tuple[int, int]) -> bool:
        return (re.search(self.op, op) is not None and (self.property_name is None or self.property_name == prop)
                and (self.dtypes is None or dtype in self.dtypes)
                and (self.device_type is None or self.device_type == device_type)
                and version_in(torch_version, self.torch))


def torch_minor(version: str | None = None) -> tuple[int, int]:
    """(major, minor) of a torch version string (default: the installed torch)."""
    if version is None:
        import torch

        version = torch.__version__
    major, minor = re.match(r"(\d+)\.(\d+)", version).groups()
    return int(major), int(minor)


def version_in(version: tuple[int, int], spec: str | None) -> bool:
    """Whether a (major, minor) torch version satisfies `>=2.13,<2.14` style clauses."""
    if not spec:
        return True
    for clause in spec.split(","):
        op, major, minor = _VERSION_CLAUSE.match(clause.strip()).groups()
        bound = (int(major), int(minor))
        if not {">=": version >= bound, "<=": version <= bound, "==": version == bound,
                "<": version < bound, ">": version > bound}[op]:
            return False
    return True


def load_ledger(path: Path) -> list[CrashRule]:
    """The rules in one ledger file; LedgerError names the file, the rule and the field."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise LedgerError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise LedgerError(f"{path}: expected an object with a list `rules`")
    source = "torchcts/crashes/known_crashes.json" if Path(path) == PACKAGED else str(path)
    return [_rule(source, index, raw) for index, raw in enumerate(data["rules"])]


def _rule(path: str, index: int, raw: Any) -> CrashRule:
    where = f"{path}: rules[{index}]"
    if not isinstance(raw, dict):
        raise LedgerError(f"{where}: expected an object")
    unknown = set(raw) - {"op", "reason", "property", "dtypes", "device_type", "torch"}
    if unknown:
        raise LedgerError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; allowed: op, reason, "
                          "property, dtypes, device_type, torch")
    for field in ("op", "reason"):
        if not isinstance(raw.get(field), str) or not raw[field]:
            raise LedgerError(f"{where}.{field}: required, a non-empty string")
    try:
        re.compile(raw["op"])
    except re.error as exc:
        raise LedgerError(f"{where}.op: not a regex: {exc}") from None
    from torchcts.plan.build import PROPERTY_BY_NAME

    if raw.get("property") is not None and raw["property"] not in PROPERTY_BY_NAME:
        raise LedgerError(f"{where}.property: {raw['property']!r}; known: {', '.join(PROPERTY_BY_NAME)}")
    dtypes = raw.get("dtypes")
    if dtypes is not None:
        from torchcts import dtypes as dtype_names

        if not isinstance(dtypes, list) or not all(isinstance(d, str) and dtype_names.lookup(d) for d in dtypes):
            raise LedgerError(f"{where}.dtypes: a list of dtype names (float32, bfloat16, ...)")
        dtypes = tuple(dtype_names.canonical_name(dtype_names.lookup(d)) for d in dtypes)
    torch_range = raw.get("torch")
    if torch_range is not None and (not isinstance(torch_range, str) or not all(
            _VERSION_CLAUSE.match(c.strip()) for c in torch_range.split(","))):
        raise LedgerError(f"{where}.torch: {torch_range!r}; expected clauses like \">=2.13,<2.14\"")
    return CrashRule(path, index, raw["op"], raw["reason"], raw.get("property"), dtypes,
                     raw.get("device_type"), torch_range)


def ledger_rules(policy: str, local: Path | None) -> list[CrashRule]:
    """The packaged rules plus the project-local ones (none when the policy is `off`)."""
    if policy == "off":
        return []
    rules = load_ledger(PACKAGED)
    if local is not None and Path(local).exists():
        rules += load_ledger(local)
    return rules


def matching_rule(rules: Iterable[CrashRule], item: Any, device_type: str,
                  torch_version: tuple[int, int]) -> CrashRule | None:
    return next((rule for rule in rules if rule.matches(item.property, item.op, item.dtype, device_type,
                                                         torch_version)), None)


def audit_lines(rules: list[CrashRule], items: list[Any], device_type: str,
                torch_version: tuple[int, int]) -> tuple[list[str], bool]:
    """(lines: every rule and the items it matches, whether every rule matches at least one item)."""
    lines, ok = [], True
    for rule in rules:
        matched = [item.id for item in items if rule.matches(item.property, item.op, item.dtype, device_type,
                                                             torch_version)]
        applies = (rule.device_type in (None, device_type)) and version_in(torch_version, rule.torch)
        status = f"{len(matched)} items" if matched else ("matches no item" if applies else
                                                          "does not apply to this device or torch")
        ok = ok and (bool(matched) or not applies)
        lines.append(f"{rule.name}: {status}: op {rule.op!r}" + (f", property {rule.property_name}" if rule.property_name else "")
                     + (f", dtypes {', '.join(rule.dtypes)}" if rule.dtypes else "")
                     + (f", device {rule.device_type}" if rule.device_type else "")
                     + (f", torch {rule.torch}" if rule.torch else "") + f": {rule.reason}")
        lines.extend(f"    {item}" for item in matched[:20])
        if len(matched) > 20:
            lines.append(f"    ... and {len(matched) - 20} more")
    return lines, ok
