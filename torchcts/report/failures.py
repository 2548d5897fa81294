"""The failing items of a report, each with its counterexample described from its corpus case file.

A case file is untrusted: it is read as bounded JSON only (no torch, no case reader), only from inside the run's
folders, the default corpus folders and `--corpus-dir`, and a malformed one makes its failure say why while the
rest of the report stands. The names a case is read by are `torchcts.core.case_schema`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchcts.core.case_limits import MAX_DIMS, CaseLimits
from torchcts.core.case_schema import CONTAINERS, INPUT_PARTS, NAMED_INPUTS, TENSOR
from torchcts.core.outcomes import PROBLEMS
from torchcts.report import grouping
from torchcts.results.files import ResultFileError, read_json_file
from torchcts.results.history import Warn
from torchcts.untrusted_paths import OutsideFolders, case_folders, resolve_inside

PROBLEM_VALUES = frozenset(outcome.value for outcome in PROBLEMS)  # per-record tests use the plain values
MAX_CASE_TENSORS = 32  # tensors listed per counterexample; the rest are counted
MAX_PATH_WARNINGS = 10  # refused case paths warned one by one; the rest are counted in one line


def failure_entries(records: list[dict[str, Any]], folder: Path, warn: Warn, regressed: set[str],
              corpus_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """Every failing item, with its counterexample described (each case file read once; a missing
    kernel's items share one case) and whether it regressed from the baseline."""
    cases: dict[str, dict[str, Any] | None] = {}
    roots = case_folders(folder, corpus_dir)
    refused: list[str] = []

    def describe(path: str | None) -> dict[str, Any] | None:
        if path not in cases:
            cases[path] = _case_details(path, folder, warn, roots, refused)
        return cases[path]

    failures = [_failure(r, describe, r["item"] in regressed) for r in records if r["outcome"] in PROBLEM_VALUES]
    for line in refused[:MAX_PATH_WARNINGS]:
        warn(line)
    if len(refused) > MAX_PATH_WARNINGS:
        warn(f"counterexample not read: {len(refused) - MAX_PATH_WARNINGS} more case paths of "
             f"{folder / 'records.jsonl'} lead outside the run's folders ({len(refused)} in all; each failure in "
             "the report says why; a corpus elsewhere: name it with --corpus-dir)")
    return failures


def _failure(record: dict[str, Any], describe: Any, regression: bool) -> dict[str, Any]:
    reference = record.get("counterexample") or {}
    case = describe(reference.get("path")) if reference else None
    error = record.get("error") or record.get("reason") or ""
    line = record.get("error_line") or next((text for text in error.splitlines() if text.strip()), "")
    kernel = record.get("missing_kernel") if record.get("error_kind") == grouping.MISSING_KERNEL else None
    warnings = record.get("warnings")
    return {"item": record["item"], "op": record["op"], "outcome": record["outcome"],
            "reason": record.get("reason", ""), "message": line[:500], "error_kind": record.get("error_kind"),
            "missing_kernel": {"overload": kernel["overload"][:300], "dispatch_key": (kernel.get("dispatch_key")
                                                                                      or "")[:100] or None}
            if kernel else None,
            "warnings": warnings["count"] if warnings else 0, "regression": regression,
            "max_abs_error": record.get("max_abs_error"), "max_rel_error": record.get("max_rel_error"),
            "max_ulp": record.get("max_ulp"), "replay": reference.get("replay"), "case": case,
            "elements": reference.get("elements"), "counterexample_error": record.get("counterexample_error"),
            "cases": grouping.case_pair(record)["text"], **grouping.leg_fields(record),
            "finding": record["finding"][:100] if isinstance(record.get("finding"), str) else None}


def _case_details(path: str | None, folder: Path, warn: Warn, roots: tuple[tuple[Path, ...], tuple[Path, ...]],
                  refused: list[str]) -> dict[str, Any] | None:
    """Shapes, strides, dtypes and the observed difference of a corpus case (read as bounded JSON only).

    A missing case says so; a malformed one says why (and warns); a path leading out of `roots` is added to
    `refused`: the rest of the report stands."""
    if not path:
        return None
    try:  # only inside the run folder, its results folder, the default corpus folders and --corpus-dir
        found = resolve_inside(path, *roots)
    except OutsideFolders as exc:
        refused.append(f"counterexample not read: {folder / 'records.jsonl'}: counterexample.path {exc}")
        return {"path": path, "missing": False, "problem": f"not read: {exc}"}
    if found is None:
        return {"path": path, "missing": True, "problem": None}
    try:
        data = read_json_file(found, CaseLimits().max_file_bytes, "corpus case")  # what replay reads
        details = case_fields(data)
    except ResultFileError as exc:
        problem = exc.problem
    except ValueError as exc:
        problem = str(exc)
    else:
        return {"path": path, "missing": False, "problem": None, **details}
    warn(f"counterexample not described: {found}: {problem}")
    return {"path": path, "missing": False, "problem": problem}


def case_fields(data: Any) -> dict[str, Any]:
    """The fields a report shows of a parsed case; ValueError names a field of the wrong type."""
    if not isinstance(data, dict):
        raise ValueError("a case must be a JSON object")
    inputs, failure, description = data.get("inputs", {}), data.get("failure", {}), data.get("description", "")
    if not isinstance(inputs, dict) or not isinstance(failure, dict) or not isinstance(description, str):
        raise ValueError("inputs and failure must be objects, description a string")
    difference = failure.get("difference") or failure.get("message") or ""
    if not isinstance(difference, str):
        raise ValueError("failure.difference and failure.message must be strings")
    tensors: list[dict[str, Any]] = []
    more = 0

    def walk(value: Any, where: str) -> None:
        nonlocal more
        if isinstance(value, dict) and TENSOR in value:
            if len(tensors) >= MAX_CASE_TENSORS:
                more += 1
                return
            tensors.append(_tensor_fields(value, where))
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{where}.{key}" if key not in CONTAINERS else where)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{where}[{index}]")

    for name in (*INPUT_PARTS, NAMED_INPUTS):  # a scenario case's tensors are among its named parameters
        walk(inputs.get(name), name)  # nesting is bounded by result_files.MAX_DEPTH
    return {"description": description[:2000], "tensors": tensors, "more_tensors": more,
            "difference": difference.splitlines()[0][:300] if difference else ""}


def _tensor_fields(value: dict[str, Any], where: str) -> dict[str, Any]:
    def dims(name: str) -> list[int] | None:
        found = value.get(name)
        if found is None:
            return None
        if not (isinstance(found, list) and len(found) <= MAX_DIMS and
                all(isinstance(n, int) and not isinstance(n, bool) and abs(n) < 2**63 for n in found)):
            raise ValueError(f"{where}.{name} must be a list of at most {MAX_DIMS} integers")
        return found

    kind, dtype, offset = value.get(TENSOR), value.get("dtype"), value.get("storage_offset")
    if not isinstance(kind, str) or not (dtype is None or isinstance(dtype, str)):
        raise ValueError(f"{where}: tensor and dtype must be strings")
    if not (offset is None or (isinstance(offset, int) and not isinstance(offset, bool) and abs(offset) < 2**63)):
        raise ValueError(f"{where}.storage_offset must be an integer")
    return {"where": where[:200], "kind": kind[:40], "dtype": dtype[:40] if dtype else dtype, "sizes": dims("sizes"),
            "strides": dims("strides"), "storage_offset": offset}
