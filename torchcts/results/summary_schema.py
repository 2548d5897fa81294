"""What a valid run.json (the summary and its environment) and a started.jsonl line hold: the schemas the
reader (`results.files`) checks them against, and run.json's missing-kernel summary. A record's schema is the
typed record itself (`torchcts.core.record`). No torch: the report path imports this."""

from __future__ import annotations

import collections
from typing import Any, Callable, Iterable

from torchcts.core import json_checks as c
from torchcts.core.json_checks import json_kind, show


def _run_kind(value: Any) -> bool:
    return value is None or value in RUN_KINDS


def _missing_kernels(value: Any) -> bool:
    """run.json `missing_kernels`: distinct overloads and their items (the report recounts from the records)."""
    return value is None or (isinstance(value, dict) and c.is_count(value.get("distinct")) and
                             isinstance(value.get("overloads"), list) and
                             all(isinstance(o, dict) and c.is_str(o.get("overload"))
                                 and c.opt_str(o.get("dispatch_key"))
                                 and c.is_count(o.get("items")) for o in value["overloads"]))


def _probes(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and c.is_count(value.get("total")) and
                             c.is_count(value.get("failed")) and c.str_list(value.get("problems")))


def _claims(value: Any) -> bool:
    """run.json `claims` (`torchcts.plan.effective`): how the run's claims differ from the manifest file."""
    level = value.get("level") if isinstance(value, dict) else None
    added = value.get("dtypes_added_by_command_line") if isinstance(value, dict) else None
    return (isinstance(value, dict) and c.opt_str(value.get("manifest_hash"))
            and c.opt_str(value.get("effective_manifest_hash")) and isinstance(value.get("differs_from_manifest"), bool)
            and isinstance(level, dict) and c.level(level.get("depth")) and c.level(level.get("manifest"))
            and level.get("source") in ("manifest", "--level")
            and isinstance(added, dict) and len(added) <= 64 and c.str_map(added)
            and all(isinstance(k, str) and len(k) <= 64 for k in added))


def _merged(value: Any) -> bool:
    """run.json `merged` (a folder `torchcts report --merge` wrote): the shard count, the shards joined and missing."""
    return value is None or (
        isinstance(value, dict) and c.is_int(value.get("shard_count")) and 1 <= value["shard_count"] <= 1000
        and isinstance(value.get("missing"), list) and all(c.is_int(k) for k in value["missing"])
        and isinstance(value.get("shards"), list) and len(value["shards"]) <= 1000
        and all(isinstance(s, dict) and c.is_int(s.get("shard")) and c.opt_str(s.get("folder"))
                and c.opt_str(s.get("run_id")) and c.opt_str(s.get("status")) for s in value["shards"]))


RUN_KINDS = ("run", "replay", "collect_only")  # run.json `run_kind`; absent in folders older than the field

_Field = tuple[bool, Callable[[Any], bool], str]  # required, check, what is allowed

SUMMARY_FIELDS: dict[str, _Field] = {
    "status": (True, c.is_str, "a string (running, complete or partial)"),
    "environment": (True, lambda v: isinstance(v, dict), "an object"),
    "counts": (True, c.counts, "an object of outcome -> non-negative integer"),
    "schema_version": (False, c.opt_int, "an integer"),
    "run_id": (False, c.opt_str, "a string"),
    "started": (False, c.opt_str, "an ISO time string or null"),
    "finished": (False, c.opt_str, "an ISO time string or null"),
    "complete": (False, c.opt_bool, "true or false"),
    "executed": (False, lambda v: v is None or c.is_count(v), "a non-negative integer"),
    "interrupted": (False, lambda v: v is None or isinstance(v, dict), "null or an object"),
    "run_kind": (False, _run_kind, f"one of {', '.join(RUN_KINDS)} or null"),
    "missing_kernels": (False, _missing_kernels, "null or an object with integer distinct and a list of "
                                                 "overloads ({overload, dispatch_key, items})"),
    "probes": (False, _probes, "null or an object with integers total and failed and a list of strings problems"),
    "hypothesis": (False, c.opt_dict, "null or an object (the Hypothesis settings used)"),
    "merged": (False, _merged, "null or an object with integer shard_count, a list of integers missing and a list "
                               "of shards ({shard, folder, run_id, status})"),
}
ENVIRONMENT_FIELDS: dict[str, _Field] = {
    **{name: (False, c.opt_str, "a string or null") for name in (
        "device", "compile", "hardware_key", "torch", "torchcts", "hypothesis", "python", "manifest",
        "manifest_hash", "effective_manifest_hash", "isolation", "shard")},
    "claims": (False, lambda v: v is None or _claims(v), "null or an object with string manifest_hash and "
                                                          "effective_manifest_hash, boolean differs_from_manifest, "
                                                          "level {depth, source, manifest} and "
                                                          "dtypes_added_by_command_line (dtype -> string)"),
    "seed": (False, c.opt_int, "an integer or null"),
    "level": (False, lambda v: v is None or c.level(v), f"an integer from {c.LEVELS[0]} to {c.LEVELS[-1]} or null"),
    "max_examples": (False, c.opt_int, "an integer or null"),
    "planned_items": (False, c.opt_int, "an integer or null"),
    "derandomize": (False, c.opt_bool, "true, false or null"),
    "validation": (False, c.opt_bool, "true, false or null"),
    "capabilities": (False, c.opt_str_list, "a list of strings"),
    "property_capabilities": (False, c.str_map, "an object of property -> capability"),
    "capability_also_tested_by": (False, c.str_list_map, "an object of capability -> list of properties"),
    "replay": (False, c.opt_str_list, "a list of paths or null"),
    "selection": (False, c.opt_dict, "an object or null"),
    "claimed_dtypes": (False, c.opt_str_list, "a list of dtype names or null"),
}
STARTED_FIELDS: dict[str, _Field] = {"item": (True, c.is_str, "a string")}


class _Schema:
    """The fields of one kind of JSON object: which are required, what each may hold."""

    def __init__(self, what: str, fields: dict[str, _Field], prefix: str = ""):
        self.what, self.fields, self.prefix = what, fields, prefix
        self.required = frozenset(name for name, (required, _, _) in fields.items() if required)

    def problem(self, data: Any) -> str | None:
        """What is wrong with `data`, or None (fields the schema does not name are not looked at)."""
        if not isinstance(data, dict):
            return f"{self.what} must be a JSON object, got {json_kind(data)}"
        if not data.keys() >= self.required:
            name = min(self.required - data.keys())
            return f"{self.what} has no field {self.prefix + name!r} (needs {self.fields[name][2]})"
        fields = self.fields
        for name, value in data.items():
            field = fields.get(name)
            if field is not None and not field[1](value):
                return f"field {self.prefix + name!r} must be {field[2]}, got {show(value)}"
        return None


def missing_kernel_summary(records: Iterable[Any]) -> dict[str, Any]:
    """run.json's `missing_kernels`: the distinct (overload, dispatch key) of the records whose error is a
    missing kernel, with the items each broke, most items first."""
    items: collections.Counter[tuple[str, str]] = collections.Counter()
    for record in records:
        if not isinstance(record, dict) or record.get("error_kind") != "missing_kernel":
            continue
        missing = record.get("missing_kernel")
        if isinstance(missing, dict):
            items[(str(missing.get("overload")), str(missing.get("dispatch_key")))] += 1
    ranked = sorted(items.items(), key=lambda entry: (-entry[1], entry[0]))
    return {"distinct": len(ranked), "overloads": [{"overload": overload, "dispatch_key": key, "items": count}
                                                   for (overload, key), count in ranked]}


SUMMARY = _Schema("the summary", SUMMARY_FIELDS)
ENVIRONMENT = _Schema("environment", ENVIRONMENT_FIELDS, "environment.")
STARTED = _Schema("a line", STARTED_FIELDS)


def summary_problem(summary: Any) -> str | None:
    """What is wrong with a parsed run.json, or None."""
    return SUMMARY.problem(summary) or ENVIRONMENT.problem(summary["environment"])
