"""How much one corpus case may make a replay allocate: case files are untrusted input.

A 724-byte case can describe a stride-0 view of 2.5e8 elements, a null storage of 5e8, or JSON
nested 100,000 levels deep. Loading such a case fails that case with the limit named, instead of
exhausting the machine's memory or the interpreter's stack. One knob, `--max-case-bytes`, bounds
the bytes; the file size and the number of JSON values scale with it. The nesting depth is fixed:
real cases nest about 10 levels, and Python's own parser stops near 1,000.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

import attrs

DEFAULT_MAX_CASE_BYTES = 64 * 2**20  # a replay of a case this size peaks near 1.6 GB (bench_case_limits.py)
MAX_DEPTH = 100  # JSON nesting levels of a case file, the outer object included
MAX_DIMS = 64  # dimensions of one tensor
JSON_VALUE_BYTES = 256  # about what one parsed JSON value costs in Python, at most
_SUFFIXES = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class ByteCountError(ValueError, argparse.ArgumentTypeError):
    """Not a byte count; argparse (pytest's options) shows this message as it is."""


def byte_count(text: Any) -> int:
    """A positive byte count: `67108864`, `64M`, `1G` (binary suffixes k, M, G, T; case ignored)."""
    match = re.fullmatch(r"\s*(\d{1,15})\s*([kmgt]?)i?b?\s*", str(text), re.IGNORECASE | re.ASCII)
    if match is None or int(match[1]) == 0:
        raise ByteCountError(f"expected a positive number of bytes like 67108864, 64M or 1G, got {str(text)[:40]!r}")
    return int(match[1]) * _SUFFIXES[match[2].lower()]


def size_text(n: int) -> str:
    """Bytes for people: 2.0 GB, 724 bytes (powers of 1000, as a file manager shows them)."""
    if n >= 10**15:
        return f"{n:.2e} bytes"
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


@attrs.frozen
class CaseLimits:
    """The limits one case is loaded under; over any of them, the case cannot be read.

    `max_case_bytes` bounds two totals separately: the bytes of the storages the case decodes
    (a null storage by its `elements`), and the logical bytes of every tensor it builds (numel x
    element size, so a stride-0 expansion counts in full, a sparse tensor by its dense size, a
    nested tensor by its components)."""

    max_case_bytes: int = attrs.field(default=DEFAULT_MAX_CASE_BYTES, converter=byte_count)
    max_depth: int = MAX_DEPTH

    @property
    def max_file_bytes(self) -> int:
        """Room for the storages in base64 (4/3 of their bytes) and 1 MiB of JSON around them."""
        return 2 * self.max_case_bytes + 2**20

    @property
    def max_json_values(self) -> int:
        """Parsed JSON costs up to ~256 bytes a value; a floor keeps small limits usable."""
        return max(self.max_case_bytes // JSON_VALUE_BYTES, 100_000)

    @classmethod
    def from_option(cls, max_case_bytes: int | None) -> "CaseLimits":
        """The limits for a `--max-case-bytes` value (None: the default)."""
        return cls() if max_case_bytes is None else cls(max_case_bytes)

    def option(self) -> str:
        return f"--max-case-bytes {self.max_case_bytes}"


def json_depth_problem(data: Any, limit: int) -> tuple[str, int] | None:
    """(the field, its depth) of the first value nested deeper than `limit`, or None; no recursion.

    Paths are kept as (parent, key) links and spelled out only for the value reported."""
    stack: list[tuple[Any, int, Any]] = [(data, 1, None)]
    while stack:
        value, depth, trail = stack.pop()
        if depth > limit:
            keys = []
            while trail is not None:
                trail, key = trail
                keys.append(f"[{key}]" if isinstance(key, int) else f".{key}")
            field = "".join(reversed(keys)).removeprefix(".")
            return (field if len(field) <= 60 else field[:60] + "...") or "(file)", depth
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack.extend((v, depth + 1, (trail, k)) for k, v in items if isinstance(v, (dict, list)))
    return None


def json_values_upper_bound(text: bytes) -> int:
    """An upper bound on the values a JSON text holds, counted before parsing it.

    Every value but the outermost is the first in its container or follows a comma; strings may
    hold these characters too, so this overcounts (base64 holds none)."""
    containers = text.count(b"[") + text.count(b"{")
    return 2 * containers + text.count(b",") + 1
