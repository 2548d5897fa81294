"""One item's result record, typed: the one definition of what a line of records.jsonl holds.

`Record` groups the line's flat fields into typed parts (`core.record_parts`): identity, verdict (with the
missing kernel and the warnings), measures, isolation, counterexample, compile leg and path-shapes case when
there is one, traces. `Record.from_json` reads a parsed line strictly: a field the record does not name is an
error naming it (and the field it was probably meant to be), a wrong type names the field and what it allows;
`to_json` writes the flat line back. Everything else is derived from it: the reader's validation
(`results.files`), the compact record pytest-xdist carries (`plugin.distributed`), the docs/results.md field
table (`core.record_doc`). Adding a field is one `json_field` in its part, the code that fills it, and its row.

Versions (docs/results.md, "Record versions"): a line written since the typed record carries
`record_version` 2. A line without it is version 1 (every run folder before): version-1 readers ignored
fields they did not know, so its upgrade drops the fields and nested keys this record does not name, and the values of the
fields version 1 never checked that version 2 refuses (the reader warns once, with their count), and checks the
rest as version 2. A version this TorchCTS does not know is refused (an integer above 2: a newer TorchCTS wrote it).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import attrs

from torchcts.core import outcomes
from torchcts.core.json_checks import json_kind, show
from torchcts.core.record_parts import (CONSOLE, FAILURE, CompileLeg, Counterexample, Identity, Isolation, Measures,
                                        PathShapes, Traces, Verdict)
from torchcts.core.typed_json import RecordError, json_fields, unknown_field, value_from_json, value_to_json

RECORD_VERSION = 2  # what the writer puts in `record_version`; a line without one is version 1
VERSION_FIELD = "record_version"
OPTIONAL_PARTS = {"compile_leg": CompileLeg, "path_shapes": PathShapes}  # None when the record has none of their fields


@attrs.frozen(kw_only=True)
class Record:
    """One item's result. `nulls` names the optional fields the line holds as JSON null (written back as null,
    so a record read and written again is the same line)."""

    identity: Identity
    verdict: Verdict
    measures: Measures = Measures()
    isolation: Isolation = Isolation()
    counterexample: Counterexample = Counterexample()
    traces: Traces = Traces()
    compile_leg: CompileLeg | None = None
    path_shapes: PathShapes | None = None
    nulls: frozenset[str] = frozenset()

    @property
    def item(self) -> str:
        return self.identity.item

    @property
    def outcome(self) -> outcomes.Outcome:
        return self.verdict.outcome

    @classmethod
    def from_json(cls, data: Any) -> "Record":
        """The record of one parsed line of records.jsonl (either version); RecordError names the first problem."""
        return _from_fields(upgrade(data))

    @classmethod
    def from_checked(cls, data: dict[str, Any]) -> "Record":
        """The record of a line the reader has checked and upgraded (`results.files.iter_typed_records`)."""
        return _from_fields(data, checked=True)

    def to_json(self) -> dict[str, Any]:
        """The record's line as a JSON-ready dict (`outcome` an `Outcome`, which JSON writes as its value)."""
        line: dict[str, Any] = {}
        for part_name in PARTS:
            part = getattr(self, part_name)
            if part is None:
                continue
            for name in json_fields(type(part)):
                value = getattr(part, name)
                if value is not None:
                    line[name] = value_to_json(value)
                elif name in self.nulls:
                    line[name] = None
        line[VERSION_FIELD] = RECORD_VERSION
        return line


PARTS: dict[str, type] = {"identity": Identity, "verdict": Verdict, "measures": Measures, "isolation": Isolation,
         "counterexample": Counterexample, "traces": Traces, **OPTIONAL_PARTS}
FIELDS: dict[str, tuple[str, attrs.Attribute]] = {
    name: (part_name, field) for part_name, part in PARTS.items() for name, field in json_fields(part).items()}
NESTED = tuple(name for name, (_, field) in FIELDS.items()
               if field.metadata["nested"] is not None or field.metadata["nested_list"] is not None)
REQUIRED = tuple(name for name, (_, field) in FIELDS.items() if field.default is attrs.NOTHING)
_REQUIRED = frozenset(REQUIRED)
_CHECKS = {name: (field.metadata["check"], field.metadata["allowed"]) for name, (_, field) in FIELDS.items()}
_NESTED_KEYS = {name: (frozenset(json_fields(field.metadata["nested"] or field.metadata["nested_list"])),
                       field.metadata["nested_list"] is not None)
                for name, (_, field) in FIELDS.items() if name in NESTED}


def view_fields(view: str) -> tuple[str, ...]:
    """The fields a smaller copy of the record carries (`views=` of its fields in `core.record_parts`)."""
    return tuple(name for name, (_, field) in FIELDS.items() if view in field.metadata["views"])


CONSOLE_FIELDS = view_fields(CONSOLE)  # a console line's fields: what a pytest-xdist worker hands its controller
FAILURE_FIELDS = view_fields(FAILURE)  # where a failure is stored and what raised it: what a fuzz answer carries


def field_names() -> Iterator[str]:
    """Every field a line of records.jsonl may hold, `record_version` last."""
    yield from FIELDS
    yield VERSION_FIELD


# the fields version-1 readers checked (`results.files` before the typed record); they ignored every other field and
# the unknown keys of nested objects, so a version-1 line may hold anything there
V1_CHECKED = frozenset((
    "item", "property", "op", "dtype", "level", "outcome", "variant", "reason", "error", "counterexample_error",
    "duration_s", "examples", "distinct_cases", "max_examples", "max_abs_error", "max_rel_error", "max_ulp",
    "ulp_error", "fingerprints", "counterexample", "case", "error_kind", "error_line", "missing_kernel",
    "error_wrappers", "warnings", "dispatched", "leg", "legs", "leg_reason"))


def upgrade(data: Any, dropped: list[str] | None = None) -> dict[str, Any]:
    """A parsed line as version 2: a version-1 line (no `record_version`) without what version-1 readers ignored
    (the fields and nested keys version 2 does not name, and the values of fields they never checked that version 2
    refuses: each such field's name appended to `dropped`), marked version 2; a version-2 line as it is.
    RecordError for a line that is not an object or names another version."""
    if not isinstance(data, dict):
        raise RecordError(f"a record must be a JSON object, got {json_kind(data)}")
    version = data.get(VERSION_FIELD, 1)
    if type(version) is int and version == RECORD_VERSION:
        return data
    if type(version) is int and version == 1:
        return _upgraded_v1(data, dropped)
    if type(version) is int and version > RECORD_VERSION:
        raise RecordError(f"field {VERSION_FIELD!r} is {version}: a newer TorchCTS wrote this record (this one "
                          f"reads versions 1 and {RECORD_VERSION})")
    raise RecordError(f"field {VERSION_FIELD!r} must be the integer 1 or {RECORD_VERSION} (absent: 1), "
                      f"got {show(version)}")


def _upgraded_v1(data: dict[str, Any], dropped: list[str] | None) -> dict[str, Any]:
    line: dict[str, Any] = {}
    for name, value in data.items():
        if name not in FIELDS:
            continue
        if name in _NESTED_KEYS:
            value = _known_nested_keys(name, value)
        if name not in V1_CHECKED and not _CHECKS[name][0](value):
            if dropped is not None:
                dropped.append(name)
            continue
        line[name] = value
    line[VERSION_FIELD] = RECORD_VERSION
    return line


def _known_nested_keys(name: str, value: Any) -> Any:
    """A nested value without the keys version 2 does not name (a value of another shape as it is: refused later)."""
    keys, is_list = _NESTED_KEYS[name]
    if is_list and isinstance(value, list):
        return [{k: v for k, v in item.items() if k in keys} if isinstance(item, dict) else item for item in value]
    if not is_list and isinstance(value, dict):
        return {k: v for k, v in value.items() if k in keys}
    return value


def check(data: Mapping[str, Any]) -> None:
    """Raise RecordError for the first problem of a version-2 line (without building the record: the reader's
    fast path over a whole records.jsonl): an unknown field, a missing required one, a value of the wrong type, an
    unknown field of a nested object."""
    for name in data:
        if name not in _CHECKS and name != VERSION_FIELD:
            raise unknown_field("a record", str(name), [*FIELDS, VERSION_FIELD])
    if not data.keys() >= _REQUIRED:
        name = min(_REQUIRED - data.keys())
        raise RecordError(f"a record has no field {name!r} (needs {_CHECKS[name][1]})")
    for name, value in data.items():
        spec = _CHECKS.get(name)
        if spec is not None and not spec[0](value):
            raise RecordError(f"field {name!r} must be {spec[1]}, got {show(value)}")
    for name, (keys, is_list) in _NESTED_KEYS.items():  # the shape is checked; a nested object's unknown fields too
        value = data.get(name)
        if value is not None:
            for index, nested in enumerate(value) if is_list else ((None, value),):
                unknown = nested.keys() - keys
                if unknown:
                    where = f"{name}[{index}]." if is_list else f"{name}."
                    raise unknown_field("a record", str(min(unknown)), keys, where)


def checked(line: dict[str, Any]) -> dict[str, Any]:
    """A producer's line, marked version 2 and checked as one (in place): RecordError names a field the record does
    not name or a value of the wrong type, which is a defect of the code that filled it."""
    line[VERSION_FIELD] = RECORD_VERSION
    check(line)
    return line


def problem(data: Any, dropped: list[str] | None = None) -> str | None:
    """What is wrong with one parsed line of records.jsonl (either version), or None (`dropped`: `upgrade`'s)."""
    try:
        check(upgrade(data, dropped))
    except RecordError as exc:
        return str(exc)
    return None


def _from_fields(data: dict[str, Any], checked: bool = False) -> Record:
    """The record of a version-2 line (`checked`: the reader already checked it)."""
    if not checked:
        check(data)
    values: dict[str, dict[str, Any]] = {}
    nulls = []
    for name, value in data.items():
        where = _WHERE.get(name)
        if where is None:  # record_version
            continue
        part_name, field, plain = where
        if value is None:
            nulls.append(name)
        elif not (plain and type(value) is not list):
            value = value_from_json(field, value, "")
        values.setdefault(part_name, {})[name] = value
    verdict = values["verdict"]
    verdict["outcome"] = outcomes.Outcome(verdict["outcome"])
    parts = {part_name: part(**values[part_name]) if part_name in values else _EMPTY.get(part_name)
             for part_name, part in PARTS.items()}
    return Record(**parts, nulls=frozenset(nulls))


# each field's part, attribute, and whether its value is kept as parsed (no nested object to type, no list to freeze)
_WHERE = {name: (part_name, field, field.metadata["nested"] is None and field.metadata["nested_list"] is None)
          for name, (part_name, field) in FIELDS.items()}
# the parts a line has no field of, shared (they are frozen): a not-run record builds two parts, not six
_EMPTY = {part_name: part() for part_name, part in PARTS.items()
          if part_name not in ("identity", "verdict") and part_name not in OPTIONAL_PARTS}
