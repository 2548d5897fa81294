"""Bounded reading of untrusted result files: limits on size, line length, line count, JSON nesting and
integer digits; UTF-8 JSON only, NaN refused; only regular files, never blocking. A problem raises
`ResultFileError` naming the file (and line). `results.files` reads run folders through this; other
untrusted JSON files (coverage evidence, audits) use `read_json_file`. No torch."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any, Callable, Iterator

MiB = 2**20
MAX_SUMMARY_BYTES = 16 * MiB  # run.json (a real one is a few KiB)
MAX_LINE_BYTES = 8 * MiB  # one line of records.jsonl or started.jsonl
MAX_LINES_BYTES = 256 * MiB  # a whole records.jsonl or started.jsonl (a full level-8 run: ~100 MiB at most)
MAX_RECORDS = 1_000_000  # lines of one records.jsonl or started.jsonl (a full plan has ~22,000 items)
MAX_DEPTH = 100  # JSON nesting of any value (a record needs 3)
MAX_INT_DIGITS = 100  # an integer in any result file (int64 needs 19 digits; converting huge ones is quadratic)


class ResultFileError(Exception):
    """A result file that cannot be used: which file (and line), what is wrong."""

    def __init__(self, path: Path | str, problem: str, line: int | None = None):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.problem, self.line = Path(path), problem, line


def _reject_constant(name: str) -> float:
    if name == "NaN":
        raise ValueError("NaN is not valid JSON")
    return math.inf if name == "Infinity" else -math.inf  # error measures can overflow to infinity


def _bounded_int(digits: str) -> int:
    if len(digits) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits)} digits, over the limit of {MAX_INT_DIGITS}")
    return int(digits)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are unique: Python's json keeps the last of a repeated key, silently, so a line
    could say one thing to a reader that keeps the first and another to this one."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = key if len(key) <= 60 else key[:57] + "..."
                raise ValueError(f"an object repeats the key {shown!r}")
            seen.add(key)
    return value


# one decoder: json.loads with hooks would build one per call
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_bounded_int, object_pairs_hook=_unique_keys)


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
                # a line's fields are checked one by one, not walked: only its object values can hold free-form
                # JSON (`ulp_error`, `compile`, `path_shape`, ...) that a report or baseline walks, so only they
                # are held to the nesting limit (a list field's check refuses anything but flat items)
                value = parse_json(_decode(raw), max_depth=None)
                if isinstance(value, dict) and any(isinstance(field, dict) and _too_deep(field, MAX_DEPTH - 1)
                                                   for field in value.values()):
                    raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
            except ValueError as exc:
                if torn:
                    return  # a killed run's last, partial write
                raise ResultFileError(path, f"unreadable: {exc}", number) from None
            problem = check(value)
            if problem is not None:
                raise ResultFileError(path, problem, number)
            yield value
