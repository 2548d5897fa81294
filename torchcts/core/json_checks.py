"""Checks of parsed JSON values, shared by the result record (`core.record`) and the run summary's schema
(`results.summary_schema`): each says whether a value has the shape a field allows. Result files travel between
teams, so every value is checked before anything uses it (docs/results.md, "Reading results back")."""

from __future__ import annotations

import json
import math
from typing import Any

LEVELS = range(0, 9)  # semantic levels 1..8; 0 for items with no level (a replayed case that cannot be read)


def is_str(value: Any) -> bool:
    return isinstance(value, str)


def opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def opt_int(value: Any) -> bool:
    return value is None or is_int(value)


def is_count(value: Any) -> bool:
    return is_int(value) and 0 <= value < 2**63


def opt_count(value: Any) -> bool:
    return value is None or is_count(value)


def opt_bool(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def opt_dict(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def opt_measure(value: Any) -> bool:
    """An error measure: a number, infinite allowed (a float64 difference can overflow), never NaN."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == value)


def opt_duration(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value) and value >= 0)


def str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def opt_str_list(value: Any) -> bool:
    return value is None or str_list(value)


def counts(value: Any) -> bool:
    return isinstance(value, dict) and all(is_count(n) for n in value.values())


def str_map(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))


def str_list_map(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(str_list(v) for v in value.values()))


def level(value: Any) -> bool:
    return is_int(value) and value in LEVELS


def json_kind(value: Any) -> str:
    """How an error message names a parsed JSON value's type ("an object", "a list", ...)."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def show(value: Any) -> str:
    """A value as a one-line problem quotes it: short, whatever its size."""
    if isinstance(value, (dict, list)):
        return json_kind(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of {len(str(abs(value)))} digits"
    text = json.dumps(value) if isinstance(value, (str, float)) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
