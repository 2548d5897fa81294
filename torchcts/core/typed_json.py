"""Typed JSON objects: attrs classes whose fields say what JSON each holds, read strictly and written back.

A field made with `json_field` carries its check (a predicate on the parsed value, `core.json_checks`) and the
words that say what it allows; `from_json` refuses an object with a field the class does not name (naming it,
and the field it was probably meant to be), without a required one, or with a value its check refuses, with one
line (`RecordError`). The result record (`core.record`) is built from these; so are its nested objects."""

from __future__ import annotations

import difflib
from typing import Any, Callable, Mapping, TypeVar

import attrs

from torchcts.core.json_checks import json_kind, show

T = TypeVar("T")
Check = Callable[[Any], bool]


class RecordError(ValueError):
    """A JSON object that is not a valid record (or part of one): one line naming the field and what is allowed."""


def json_field(check: Check, allowed: str, *, required: bool = False, nested: Any = None,
               nested_list: Any = None, views: tuple[str, ...] = ()) -> Any:
    """An attrs field holding one JSON field: `check` validates the parsed value, `allowed` says in words what
    passes. `nested` (or `nested_list`) is the typed class of an object value (of each item of a list value).
    `views` names the smaller copies of the object that carry the field (`core.record.view_fields`)."""
    metadata = {"check": check, "allowed": allowed, "nested": nested, "nested_list": nested_list, "views": views}
    if required:
        return attrs.field(kw_only=True, metadata=metadata)
    return attrs.field(kw_only=True, default=None, metadata=metadata)


def json_fields(cls: type) -> dict[str, attrs.Attribute]:
    """The JSON fields of a typed class, by name, in declaration order."""
    return {a.name: a for a in attrs.fields(cls) if "check" in a.metadata}


def unknown_field(what: str, name: str, known: Any, prefix: str = "") -> RecordError:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean {prefix + close[0]!r}?)" if close else ""
    shown = name if len(name) <= 60 else name[:57] + "..."
    return RecordError(f"{what} has an unknown field {prefix + shown!r}{hint}")


def check_fields(what: str, data: Mapping[str, Any], fields: Mapping[str, attrs.Attribute], prefix: str = "",
                 strict: bool = True) -> None:
    """Raise RecordError for the first problem of `data` against `fields`: an unknown field (when `strict`), a
    missing required one, a value its check refuses."""
    if strict:
        for name in data:
            if name not in fields:
                raise unknown_field(what, str(name), fields, prefix)
    required = [name for name, a in fields.items() if a.default is attrs.NOTHING]
    missing = [name for name in required if name not in data]
    if missing:
        name = min(missing)
        raise RecordError(f"{what} has no field {prefix + name!r} (needs {fields[name].metadata['allowed']})")
    for name, value in data.items():
        field = fields.get(name)
        if field is not None and not field.metadata["check"](value):
            raise RecordError(f"field {prefix + name!r} must be {field.metadata['allowed']}, got {show(value)}")


def value_from_json(field: attrs.Attribute, value: Any, prefix: str) -> Any:
    """A checked JSON value as the typed field holds it: nested objects typed, lists as tuples."""
    if value is None:
        return None
    nested, nested_list = field.metadata["nested"], field.metadata["nested_list"]
    if nested is not None:
        return object_from_json(nested, value, "a record", f"{prefix}{field.name}.")
    if nested_list is not None:
        return tuple(object_from_json(nested_list, item, "a record", f"{prefix}{field.name}[{index}].")
                     for index, item in enumerate(value))
    if isinstance(value, list):
        return tuple(value)
    return value


def value_to_json(value: Any) -> Any:
    if attrs.has(type(value)):
        return object_to_json(value)
    if isinstance(value, tuple):
        return [value_to_json(item) for item in value]
    return value


def object_from_json(cls: type[T], data: Any, what: str, prefix: str = "") -> T:
    """A typed object from a parsed JSON object, strictly (RecordError on the first problem)."""
    if not isinstance(data, dict):
        raise RecordError(f"{what} must be a JSON object, got {json_kind(data)}")
    fields = json_fields(cls)
    check_fields(what, data, fields, prefix)
    values = {name: value_from_json(fields[name], value, prefix) for name, value in data.items()}
    return cls(**values, nulls=frozenset(name for name, value in data.items() if value is None))


def object_to_json(obj: Any) -> dict[str, Any]:
    """A nested typed object as JSON: the fields it holds, and null for those its object held as null (`nulls`), so
    an object read and written again is the same JSON."""
    nulls = obj.nulls
    return {name: value_to_json(value) for name in json_fields(type(obj))
            if (value := getattr(obj, name)) is not None or name in nulls}


def nulls_field() -> Any:
    """The attrs field of a nested typed object that names the fields its JSON held as null (not a JSON field)."""
    return attrs.field(kw_only=True, default=frozenset(), repr=False)
