"""Result files read back as untrusted data: `run.json`, `records.jsonl`, `started.jsonl`.

Result folders travel between teams (a CI artifact, a vendor's run), so every reader goes through
this module: files are read with limits on size, line length, record count and JSON nesting, must
be UTF-8 JSON (`results.bounded`), and every summary and record is checked before anything uses it:
a summary against its schema (`results.summary_schema`), a record against the typed record
(`torchcts.core.record`; a version-1 line is upgraded first). A problem raises `ResultFileError`
naming the file (and line) and what is wrong: `torchcts report` stops on it (exit 2); run history
(baselines, adaptive isolation) skips that run with one warning. No torch: the report path imports
this. docs/results.md documents it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator

from torchcts.core import record as typed_record
from torchcts.core.json_checks import LEVELS, json_kind  # noqa: F401 - part of this module's interface
from torchcts.core.record import Record
from torchcts.core.record_parts import MAX_DISPATCHED, MAX_LEGS  # noqa: F401 - part of this module's interface
from torchcts.results.bounded import (MAX_DEPTH, MAX_INT_DIGITS, MAX_LINE_BYTES, MAX_LINES_BYTES,  # noqa: F401
                                      MAX_RECORDS, MAX_SUMMARY_BYTES, MiB, ResultFileError, iter_lines, parse_json,
                                      read_json_file)
from torchcts.results.summary_schema import (ENVIRONMENT, RUN_KINDS, STARTED, SUMMARY,  # noqa: F401
                                             missing_kernel_summary, summary_problem)


class _RecordSchema:
    """The record's check where a schema object is expected (`RECORD.problem(line)`)."""

    @staticmethod
    def problem(data: Any) -> str | None:
        return typed_record.problem(data)


RECORD = _RecordSchema()


def record_problem(record: Any) -> str | None:
    """What is wrong with one parsed line of records.jsonl (either record version), or None."""
    return typed_record.problem(record)


def read_summary(folder: Path | str) -> dict[str, Any]:
    """A run's validated `run.json`."""
    path = Path(folder) / "run.json"
    summary = read_json_file(path, MAX_SUMMARY_BYTES, "run.json")
    problem = summary_problem(summary)
    if problem is not None:
        raise ResultFileError(path, problem)
    return summary


def iter_records(folder: Path | str) -> Iterator[dict[str, Any]]:
    """A run's validated records, streamed from `records.jsonl`, each as a version-2 line (`core.record.upgrade`:
    a version-1 line without what version-1 readers ignored). Values of fields version 1 never checked that
    version 2 refuses are dropped with one warning line for the file, once it is read through."""
    path = Path(folder) / "records.jsonl"
    dropped: list[str] = []
    for line in iter_lines(path, lambda data: typed_record.problem(data, dropped)):
        yield typed_record.upgrade(line)
    if dropped:
        names = ", ".join(sorted(set(dropped)))
        print(f"torchcts: warning: {path}: dropped {len(dropped)} value(s) of version-1 records that version 1 never "
              f"checked and version 2 refuses (fields: {names})", file=sys.stderr)


def read_records(folder: Path | str) -> list[dict[str, Any]]:
    """Every validated record of a run."""
    return list(iter_records(folder))


def iter_typed_records(folder: Path | str) -> Iterator[Record]:
    """A run's records as typed `Record`s, streamed."""
    return (Record.from_checked(line) for line in iter_records(folder))


def iter_started(folder: Path | str) -> Iterator[dict[str, Any]]:
    """The `{"item": ...}` lines of a run's `started.jsonl`."""
    return iter_lines(Path(folder) / "started.jsonl", STARTED.problem)
