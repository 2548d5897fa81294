"""Result files read back as untrusted data: `run.json`, `records.jsonl`, `started.jsonl`.

Result folders travel between teams (a CI artifact, a vendor's run), so every reader goes through
this module: files are read with limits on size, line length, record count and JSON nesting, must
be UTF-8 JSON, and every summary and record is checked against the one schema below before
anything uses it. A problem raises `ResultFileError` naming the file (and line) and what is wrong:
`torchcts report` stops on it (exit 2); run history (baselines, adaptive isolation) skips that
run with one warning. No torch: the report path imports this. docs/results.md documents it.
"""

from __future__ import annotations

import collections
import json
import math
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from torchcts import outcomes

MiB = 2**20
MAX_SUMMARY_BYTES = 16 * MiB  # run.json (a real one is a few KiB)
MAX_LINE_BYTES = 8 * MiB  # one line of records.jsonl or started.jsonl
MAX_LINES_BYTES = 256 * MiB  # a whole records.jsonl or started.jsonl (a full level-8 run: ~100 MiB at most)
MAX_RECORDS = 1_000_000  # lines of one records.jsonl or started.jsonl (a full plan has ~22,000 items)
MAX_DEPTH = 100  # JSON nesting of any value (a record needs 3)
MAX_INT_DIGITS = 100  # an integer in any result file (int64 needs 19 digits; converting huge ones is quadratic)
LEVELS = range(0, 9)  # semantic levels 1..8; 0 for items with no level (a replayed case that cannot be read)
MAX_DISPATCHED = 8192  # names in a record's `dispatched` (torch 2.13 has ~3,100 aten overloads)


class ResultFileError(Exception):
    """A result file that cannot be used: which file (and line), what is wrong."""

    def __init__(self, path: Path | str, problem: str, line: int | None = None):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.problem, self.line = Path(path), problem, line


# -- the schema: what a valid summary and record hold -----------------------------------------------

def _str(value: Any) -> bool:
    return isinstance(value, str)


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _opt_int(value: Any) -> bool:
    return value is None or _int(value)


def _count(value: Any) -> bool:
    return _int(value) and 0 <= value < 2**63


def _opt_bool(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _opt_dict(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def _opt_measure(value: Any) -> bool:
    """An error measure: a number, infinite allowed (a float64 difference can overflow), never NaN."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value == value)


def _opt_duration(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                             and math.isfinite(value) and value >= 0)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _opt_str_list(value: Any) -> bool:
    return value is None or _str_list(value)


def _counts(value: Any) -> bool:
    return isinstance(value, dict) and all(_count(n) for n in value.values())


def _str_map(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))


def _str_list_map(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(_str_list(v) for v in value.values()))


def _dispatched(value: Any) -> bool:
    """`dispatched`: the aten overloads an item's device side ran (`--trace-dispatch`), bounded."""
    return value is None or (isinstance(value, list) and len(value) <= MAX_DISPATCHED and
                             all(isinstance(v, str) and 0 < len(v) <= 200 for v in value))


MAX_LEGS = 8  # a blamed failure replays at most 6 legs (`engine.blame`)


def _legs(value: Any) -> bool:
    """`legs`: each leg a blamed failure replayed (`engine.blame`): its backend, shape mode, outcome, error line."""
    return value is None or (isinstance(value, list) and len(value) <= MAX_LEGS and all(
        isinstance(leg, dict) and all(isinstance(leg.get(key), str) for key in ("backend", "shape_mode", "outcome"))
        and _opt_str(leg.get("error_line")) for leg in value))


def _level(value: Any) -> bool:
    return _int(value) and value in LEVELS


def _outcome(value: Any) -> bool:
    return isinstance(value, str) and value in outcomes.VALUES  # what outcomes.parse accepts, without building it


def _counterexample(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and _opt_str(value.get("path")) and
                             _opt_str(value.get("replay")) and _opt_int(value.get("elements")) and
                             _opt_str(value.get("fingerprint")))


def _case(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and _opt_str(value.get("path")) and
                             _opt_str(value.get("status")) and _opt_str(value.get("fingerprint")) and
                             _opt_str(value.get("unreadable")))


def _missing_kernel(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and _str(value.get("overload")) and
                             _opt_str(value.get("dispatch_key")))


def _warnings(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and _count(value.get("count")) and
                             _opt_str_list(value.get("messages")))


def _run_kind(value: Any) -> bool:
    return value is None or value in RUN_KINDS


def _missing_kernels(value: Any) -> bool:
    """run.json `missing_kernels`: distinct overloads and their items (the report recounts from the records)."""
    return value is None or (isinstance(value, dict) and _count(value.get("distinct")) and
                             isinstance(value.get("overloads"), list) and
                             all(isinstance(o, dict) and _str(o.get("overload")) and _opt_str(o.get("dispatch_key"))
                                 and _count(o.get("items")) for o in value["overloads"]))


def _probes(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and _count(value.get("total")) and
                             _count(value.get("failed")) and _str_list(value.get("problems")))


def _claims(value: Any) -> bool:
    """run.json `claims` (`torchcts.plan.effective`): how the run's claims differ from the manifest file."""
    level = value.get("level") if isinstance(value, dict) else None
    added = value.get("dtypes_added_by_command_line") if isinstance(value, dict) else None
    return (isinstance(value, dict) and _opt_str(value.get("manifest_hash"))
            and _opt_str(value.get("effective_manifest_hash")) and isinstance(value.get("differs_from_manifest"), bool)
            and isinstance(level, dict) and _level(level.get("depth")) and _level(level.get("manifest"))
            and level.get("source") in ("manifest", "--level")
            and isinstance(added, dict) and len(added) <= 64 and _str_map(added)
            and all(isinstance(k, str) and len(k) <= 64 for k in added))


def _merged(value: Any) -> bool:
    """run.json `merged` (a folder `torchcts report --merge` wrote): the shard count, the shards joined and missing."""
    return value is None or (
        isinstance(value, dict) and _int(value.get("shard_count")) and 1 <= value["shard_count"] <= 1000
        and isinstance(value.get("missing"), list) and all(_int(k) for k in value["missing"])
        and isinstance(value.get("shards"), list) and len(value["shards"]) <= 1000
        and all(isinstance(s, dict) and _int(s.get("shard")) and _opt_str(s.get("folder"))
                and _opt_str(s.get("run_id")) and _opt_str(s.get("status")) for s in value["shards"]))


RUN_KINDS = ("run", "replay", "collect_only")  # run.json `run_kind`; absent in folders older than the field

_Field = tuple[bool, Callable[[Any], bool], str]  # required, check, what is allowed

SUMMARY_FIELDS: dict[str, _Field] = {
    "status": (True, _str, "a string (running, complete or partial)"),
    "environment": (True, lambda v: isinstance(v, dict), "an object"),
    "counts": (True, _counts, "an object of outcome -> non-negative integer"),
    "schema_version": (False, _opt_int, "an integer"),
    "run_id": (False, _opt_str, "a string"),
    "started": (False, _opt_str, "an ISO time string or null"),
    "finished": (False, _opt_str, "an ISO time string or null"),
    "complete": (False, _opt_bool, "true or false"),
    "executed": (False, lambda v: v is None or _count(v), "a non-negative integer"),
    "interrupted": (False, lambda v: v is None or isinstance(v, dict), "null or an object"),
    "run_kind": (False, _run_kind, f"one of {', '.join(RUN_KINDS)} or null"),
    "missing_kernels": (False, _missing_kernels, "null or an object with integer distinct and a list of "
                                                 "overloads ({overload, dispatch_key, items})"),
    "probes": (False, _probes, "null or an object with integers total and failed and a list of strings problems"),
    "hypothesis": (False, _opt_dict, "null or an object (the Hypothesis settings used)"),
    "merged": (False, _merged, "null or an object with integer shard_count, a list of integers missing and a list "
                               "of shards ({shard, folder, run_id, status})"),
}
ENVIRONMENT_FIELDS: dict[str, _Field] = {
    **{name: (False, _opt_str, "a string or null") for name in (
        "device", "compile", "hardware_key", "torch", "torchcts", "hypothesis", "python", "manifest",
        "manifest_hash", "effective_manifest_hash", "isolation", "shard")},
    "claims": (False, lambda v: v is None or _claims(v), "null or an object with string manifest_hash and "
                                                          "effective_manifest_hash, boolean differs_from_manifest, "
                                                          "level {depth, source, manifest} and "
                                                          "dtypes_added_by_command_line (dtype -> string)"),
    "seed": (False, _opt_int, "an integer or null"),
    "level": (False, lambda v: v is None or _level(v), f"an integer from {LEVELS[0]} to {LEVELS[-1]} or null"),
    "max_examples": (False, _opt_int, "an integer or null"),
    "planned_items": (False, _opt_int, "an integer or null"),
    "derandomize": (False, _opt_bool, "true, false or null"),
    "validation": (False, _opt_bool, "true, false or null"),
    "capabilities": (False, _opt_str_list, "a list of strings"),
    "property_capabilities": (False, _str_map, "an object of property -> capability"),
    "capability_also_tested_by": (False, _str_list_map, "an object of capability -> list of properties"),
    "replay": (False, _opt_str_list, "a list of paths or null"),
    "selection": (False, _opt_dict, "an object or null"),
    "claimed_dtypes": (False, _opt_str_list, "a list of dtype names or null"),
}
RECORD_FIELDS: dict[str, _Field] = {
    "item": (True, _str, "a string"),
    "property": (True, _str, "a string"),
    "op": (True, _str, "a string"),
    "dtype": (True, _str, "a string"),
    "level": (True, _level, f"an integer from {LEVELS[0]} to {LEVELS[-1]}"),
    "outcome": (True, _outcome, "an outcome docs/results.md names (passed, failed, ..., runtime_unavailable)"),
    "variant": (False, _opt_str, "a string"),
    "reason": (False, _opt_str, "a string or null"),
    "error": (False, _opt_str, "a string or null"),
    "counterexample_error": (False, _opt_str, "a string or null"),
    "duration_s": (False, _opt_duration, "a finite non-negative number or null"),
    "examples": (False, lambda v: v is None or _count(v), "a non-negative integer"),
    # absent in records older than the field: the report says unknown, not 0
    "distinct_cases": (False, lambda v: v is None or _count(v), "a non-negative integer or null"),
    "max_examples": (False, lambda v: v is None or _count(v), "a non-negative integer or null"),
    "max_abs_error": (False, _opt_measure, "a number or null"),
    "max_rel_error": (False, _opt_measure, "a number or null"),
    "max_ulp": (False, _opt_measure, "a number or null"),
    "ulp_error": (False, lambda v: v is None or isinstance(v, dict), "null or an object"),
    "fingerprints": (False, _opt_str_list, "a list of strings"),
    "counterexample": (False, _counterexample, "null or an object with string path, replay, fingerprint and "
                                               "integer elements"),
    "case": (False, _case, "null or an object with string path, fingerprint, status and unreadable"),
    "error_kind": (False, _opt_str, "a string or null (missing_kernel, backend, harness, setup, case_file)"),
    "error_line": (False, _opt_str, "a string or null"),
    "missing_kernel": (False, _missing_kernel, "null or an object with string overload and dispatch_key"),
    "error_wrappers": (False, _opt_str_list, "a list of strings (torch.compile's wrapper types, outermost first)"),
    "warnings": (False, _warnings, "null or an object with integer count and a list of strings messages"),
    "dispatched": (False, _dispatched, f"null or a list of at most {MAX_DISPATCHED} overload names"),
    # a compiled failure's blame (`engine.blame`): the first leg that shows it, each leg tried, why none is named
    "leg": (False, _opt_str, "a string or null (dynamo, aot, backend, backend-dynamic-only, not-reproduced, "
                             "not-blamed)"),
    "legs": (False, _legs, f"null or a list of at most {MAX_LEGS} objects with string backend, shape_mode, outcome "
                           "and error_line (or null)"),
    "leg_reason": (False, _opt_str, "a string or null"),
}
STARTED_FIELDS: dict[str, _Field] = {"item": (True, _str, "a string")}


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
                return f"field {self.prefix + name!r} must be {field[2]}, got {_show(value)}"
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
RECORD = _Schema("a record", RECORD_FIELDS)
STARTED = _Schema("a line", STARTED_FIELDS)


def summary_problem(summary: Any) -> str | None:
    """What is wrong with a parsed run.json, or None."""
    return SUMMARY.problem(summary) or ENVIRONMENT.problem(summary["environment"])


def record_problem(record: Any) -> str | None:
    """What is wrong with one parsed line of records.jsonl, or None."""
    return RECORD.problem(record)


def json_kind(value: Any) -> str:
    """How an error message names a parsed JSON value's type ("an object", "a list", ...)."""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json_kind(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of {len(str(abs(value)))} digits"
    text = json.dumps(value) if isinstance(value, (str, float)) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- bounded reading ----------------------------------------------------------------------------

def _reject_constant(name: str) -> float:
    if name == "NaN":
        raise ValueError("NaN is not valid JSON")
    return math.inf if name == "Infinity" else -math.inf  # error measures can overflow to infinity


def _bounded_int(digits: str) -> int:
    if len(digits) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits)} digits, over the limit of {MAX_INT_DIGITS}")
    return int(digits)


# one decoder: json.loads with hooks would build one per call
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_bounded_int)


def parse_json(text: str, max_depth: int | None = MAX_DEPTH) -> Any:
    """`text` as JSON: NaN refused, nesting at most `max_depth` (None: only what the parser's
    recursion limit allows, for values nothing walks recursively); ValueError says what is wrong."""
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise ValueError("JSON nested deeper than the parser's recursion limit") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    if max_depth is not None and _too_deep(value, max_depth):
        raise ValueError(f"JSON nested deeper than {max_depth} levels")
    return value


def _too_deep(value: Any, limit: int) -> bool:
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _open(path: Path, limit: int):
    """A binary file object of the regular file `path`, refused above `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the reader
    except FileNotFoundError:
        raise ResultFileError(path, "missing") from None
    except IsADirectoryError:
        raise ResultFileError(path, "unreadable: a directory, not a file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise ResultFileError(path, f"unreadable: {getattr(exc, 'strerror', None) or exc}") from None
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise ResultFileError(path, "unreadable: a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ResultFileError(path, "unreadable: not a regular file")
    if info.st_size > limit:
        os.close(fd)
        raise ResultFileError(path, f"unreadable: {info.st_size} bytes, over the limit of {limit // MiB} MiB")
    return os.fdopen(fd, "rb")


def read_json_file(path: Path | str, limit: int, what: str = "file") -> Any:
    """One JSON document from `path`, read with the limits above; ResultFileError names the problem."""
    path = Path(path)
    with _open(path, limit) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as exc:
            raise ResultFileError(path, f"unreadable: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ResultFileError(path, f"unreadable: over the limit of {limit // MiB} MiB for a {what}")
    try:
        return parse_json(_decode(data))
    except ValueError as exc:
        raise ResultFileError(path, f"unreadable: {exc}") from None


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def read_summary(folder: Path | str) -> dict[str, Any]:
    """A run's validated `run.json`."""
    path = Path(folder) / "run.json"
    summary = read_json_file(path, MAX_SUMMARY_BYTES, "run.json")
    problem = summary_problem(summary)
    if problem is not None:
        raise ResultFileError(path, problem)
    return summary


def iter_lines(path: Path | str, check: Callable[[Any], str | None]) -> Iterator[dict[str, Any]]:
    """The validated objects of a JSON-lines file, one at a time (memory bounded by one line).

    A last line without its newline is a write torn by a killed run: it is skipped when it is not
    whole JSON. Any other bad line raises ResultFileError with its line number."""
    path = Path(path)
    total = 0
    with _open(path, MAX_LINES_BYTES) as handle:
        number = 0
        while True:
            try:
                raw = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                raise ResultFileError(path, f"unreadable: {exc.strerror or exc}") from None
            if not raw:
                return
            number += 1
            total += len(raw)
            if len(raw) > MAX_LINE_BYTES:
                raise ResultFileError(path, f"unreadable: line longer than the limit of {MAX_LINE_BYTES // MiB} MiB",
                                      number)
            if total > MAX_LINES_BYTES:
                raise ResultFileError(path, f"unreadable: over the limit of {MAX_LINES_BYTES // MiB} MiB")
            if number > MAX_RECORDS:
                raise ResultFileError(path, f"unreadable: more than {MAX_RECORDS} lines, the limit")
            if not raw.strip():
                continue
            torn = not raw.endswith(b"\n")
            try:
                value = parse_json(_decode(raw), max_depth=None)  # records are read field by field, never walked
            except ValueError as exc:
                if torn:
                    return  # a killed run's last, partial write
                raise ResultFileError(path, f"unreadable: {exc}", number) from None
            problem = check(value)
            if problem is not None:
                raise ResultFileError(path, problem, number)
            yield value


def iter_records(folder: Path | str) -> Iterator[dict[str, Any]]:
    """A run's validated records, streamed from `records.jsonl`."""
    return iter_lines(Path(folder) / "records.jsonl", record_problem)


def read_records(folder: Path | str) -> list[dict[str, Any]]:
    """Every validated record of a run."""
    return list(iter_records(folder))


def iter_started(folder: Path | str) -> Iterator[dict[str, Any]]:
    """The `{"item": ...}` lines of a run's `started.jsonl`."""
    return iter_lines(Path(folder) / "started.jsonl", STARTED.problem)
