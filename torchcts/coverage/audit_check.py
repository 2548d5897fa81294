"""`coverage check`: is an audit.json well formed, current, and free of what the flags make fatal?

An audit travels (a CI artifact), so it is read as untrusted data: bounded in size and depth
(`torchcts.results.files`), every field checked, the first problem named with its file and field.
It is current when its metadata match the installed torch (version and git version) and the
exclusion files it was computed from (their sha256). Exit codes: 2 bad input (a malformed or stale
audit, a malformed exclusions file), 1 unknowns under --fail-on-unknown, unknowns, stale exclusion
names or repeated exclusion entries under --strict-unknowns, 0 otherwise (they print as warnings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts.coverage.audit import SCHEMA_VERSION, STATUSES, exclusion_files
from torchcts.coverage.evidence import shown
from torchcts.coverage.exclusions import ExclusionsError, load_exclusions
from torchcts.coverage.inventory import load_inventory
from torchcts.core.overload_names import OVERLOAD_NAME
from torchcts.results.files import MiB, ResultFileError, read_json_file

MAX_AUDIT_BYTES = 64 * MiB  # a torch 2.13 audit is about 2 MiB
MAX_ENTRIES = 100_000  # torch 2.13 has ~3,100 aten overloads
SHOWN = 5  # names listed in one line before "... (N more)"


class AuditFileError(Exception):
    """An audit file that cannot be used: the file, the field, what is wrong."""

    def __init__(self, path: Path | str, field: str, problem: str):
        super().__init__(f"{path}: {field}: {problem}" if field else f"{path}: {problem}")


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _level(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 8)


def _exclusion(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and set(v) == {"reason", "source"} and all(map(_str, v.values())))


def _files(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(f, dict) and set(f) == {"path", "sha256"}
                                       and all(map(_str, f.values())) for f in v)


def _counts(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in v.values())


METADATA: dict[str, tuple[Callable[[Any], bool], str]] = {
    "torch": (_str, "a string"), "torch_git": (_opt_str, "a string or null"), "torchcts": (_str, "a string"),
    "python": (_str, "a string"), "date": (_str, "a string"), "inventory": (lambda v: isinstance(v, dict), "an object"),
    "exclusion_files": (_files, "a list of {path, sha256}"), "manifest": (_opt_str, "a string or null"),
    "evidence": (_opt_str, "a string or null"),
}
METADATA_OPTIONAL = {"opinfo_trace": (lambda v: isinstance(v, dict), "an object")}  # audits before the trace lack it
ENTRY: dict[str, tuple[Callable[[Any], bool], str]] = {
    "overload": (lambda v: _str(v) and OVERLOAD_NAME.fullmatch(v) is not None,
                 "an overload name 'aten.<packet>.<overload>'"),
    "status": (lambda v: v in STATUSES, f"one of {', '.join(STATUSES)}"),
    "level": (_level, "an integer from 1 to 8 or null"), "rule": (_str, "a string"),
    "opinfos": (_str_list, "a list of strings"), "opinfo_properties": (_str_list, "a list of strings"),
    "suites": (_str_list, "a list of strings"), "generated": (_opt_str, "a string or null"),
    "backend_packs": (_str_list, "a list of strings"), "exclusion": (_exclusion, "null or {reason, source}"),
    "reached": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
}
ENTRY_OPTIONAL = {"kernels": (_str_list, "a list of strings"), "tags": (_str_list, "a list of strings"),
                  "schema": (_str, "a string"),
                  "opinfo_basis": (lambda v: v in (None, "name", "trace"), "'name', 'trace' or null")}


def _check_fields(value: Any, fields: dict, optional: dict, where: str) -> tuple[str, str] | None:
    if not isinstance(value, dict):
        return where, "must be an object"
    for name, (valid, allowed) in fields.items():
        if name not in value:
            return f"{where}.{name}", "missing"
        if not valid(value[name]):
            return f"{where}.{name}", f"must be {allowed}, got {shown(value[name])}"
    for name in value:
        if name not in fields and name not in optional:
            return f"{where}.{name}", "unknown field"
        if name in optional and not optional[name][0](value[name]):
            return f"{where}.{name}", f"must be {optional[name][1]}, got {shown(value[name])}"
    return None


def problem(audit: Any) -> tuple[str, str] | None:
    """The first schema problem of audit.json's content as (field, what is wrong), or None."""
    top = {"schema_version": (lambda v: v == SCHEMA_VERSION, f"{SCHEMA_VERSION}"),
           "metadata": (lambda v: isinstance(v, dict), "an object"),
           "entries": (lambda v: isinstance(v, list) and len(v) <= MAX_ENTRIES, f"a list of at most {MAX_ENTRIES}"),
           "not_relevant": (_counts, "an object of counts"), "warnings": (_str_list, "a list of strings")}
    found = _check_fields(audit, top, {}, "audit")
    if found is None:
        found = _check_fields(audit["metadata"], METADATA, METADATA_OPTIONAL, "metadata")
    for index, entry in enumerate(audit["entries"] if found is None else ()):
        found = _check_fields(entry, ENTRY, ENTRY_OPTIONAL, f"entries[{index}]")
        if found is not None:
            break
    if found is None:
        names = [e["overload"] for e in audit["entries"]]
        if len(set(names)) != len(names):
            return "entries", "an overload appears twice"
    return found


def read_audit(path: Path | str) -> dict[str, Any]:
    """audit.json's content, read bounded and validated; AuditFileError names the file and field."""
    try:
        audit = read_json_file(path, MAX_AUDIT_BYTES, "coverage audit")
    except ResultFileError as exc:
        raise AuditFileError(path, "", exc.problem) from None
    found = problem(audit)
    if found is not None:
        raise AuditFileError(path, *found)
    return audit


def stale_metadata(audit: dict[str, Any], installed: dict[str, Any],
                   exclusion_files: list[dict[str, str]]) -> list[str]:
    """What in the audit's metadata differs from the installed torch and the current exclusion files."""
    meta = audit["metadata"]
    stale = [f"metadata.{key}: the audit has {meta[key]!r}, the installed torch has {installed[key]!r}"
             for key in ("torch", "torch_git", "torchcts") if meta[key] != installed[key]]
    if meta["exclusion_files"] != exclusion_files:
        was = ", ".join(f"{f['path']} {f['sha256'][:12]}" for f in meta["exclusion_files"]) or "none"
        now = ", ".join(f"{f['path']} {f['sha256'][:12]}" for f in exclusion_files) or "none"
        stale.append(f"metadata.exclusion_files: the audit read {was}; now there are {now} (run `torchcts coverage "
                     f"audit` again)")
    return stale


def _names(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (f", ... ({len(names) - SHOWN} more)" if len(names) > SHOWN else "")


def entry_differences(audit: dict[str, Any], relevant: frozenset[str]) -> list[str]:
    """Overloads the installed torch deems backend-relevant that the audit lacks, and entries it should not
    have: an audit with its unknown entries deleted must not pass as one without unknowns."""
    names = {entry["overload"] for entry in audit["entries"]}
    missing, extra = sorted(relevant - names), sorted(names - relevant)
    found = []
    if missing:
        found.append(f"entries: the audit lacks {len(missing)} backend-relevant overloads of the installed torch: "
                     f"{_names(missing)} (run `torchcts coverage audit` again)")
    if extra:
        found.append(f"entries: the audit has {len(extra)} overloads the installed torch has not (or are not "
                     f"relevant): {_names(extra)}")
    return found


@attrs.frozen
class CheckResult:
    """What `coverage check` found: errors (exit 2), failures (exit 1), warnings (printed)."""

    errors: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """2 when any error, else 1 when any failure, else 0: the command's exit status."""
        return 2 if self.errors else 1 if self.failures else 0


def check(path: Path, project_dir: Path, *, fail_on_unknown: bool = False,
          strict_unknowns: bool = False) -> CheckResult:
    """Validate the exclusion files and the audit at `path` against the installed torch."""
    import torch

    import torchcts

    try:
        exclusions = load_exclusions(project_dir)
    except ExclusionsError as exc:
        return CheckResult(errors=(str(exc),))
    try:
        audit = read_audit(path)
    except AuditFileError as exc:
        return CheckResult(errors=(str(exc),))
    installed = {"torch": torch.__version__, "torch_git": getattr(torch.version, "git_version", None),
                 "torchcts": torchcts.__version__}
    stale = stale_metadata(audit, installed, exclusion_files(project_dir))
    stale = stale or entry_differences(audit, frozenset(o.name for o in load_inventory() if o.relevant))
    if stale:
        return CheckResult(errors=tuple(f"{path}: {line}" for line in stale))
    unknown = sorted(e["overload"] for e in audit["entries"] if e["status"] == "unknown")
    names = [f"stale exclusion: {p}" for p in exclusions.problems]
    names += [f"repeated exclusion: {r}" for r in exclusions.repeats]
    lines = [f"unknown: {name}" for name in unknown]
    failing = (lines if fail_on_unknown or strict_unknowns else []) + (names if strict_unknowns else [])
    warnings = [line for line in lines + names if line not in failing]
    return CheckResult(failures=tuple(failing), warnings=tuple(warnings))
