"""Torch version bounds for crash rules: the installed torch's (major, minor) and `>=2.13,<2.14` ranges.

A crash is a fact about one torch build, so every rule carries the versions it was seen on; a
rule for another minor version does not match. Its own module so the ledger, the isolation policy
and the run history can share it without importing each other.
"""

from __future__ import annotations

import re

_CLAUSE = re.compile(r"^(>=|<=|==|<|>)\s*(\d+)\.(\d+)$", re.ASCII)
_COMPARE = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, "==": lambda a, b: a == b,
            "<": lambda a, b: a < b, ">": lambda a, b: a > b}


def torch_minor(version: str | None = None) -> tuple[int, int]:
    """(major, minor) of a torch version string (default: the installed torch)."""
    if version is None:
        import torch

        version = torch.__version__
    match = re.match(r"(\d+)\.(\d+)", version, re.ASCII)
    if match is None:
        raise ValueError(f"not a torch version: {version!r}")
    return int(match.group(1)), int(match.group(2))


def valid_range(spec: str) -> bool:
    """Whether `spec` is comma-separated clauses like `>=2.13,<2.14`."""
    return bool(spec) and all(_CLAUSE.match(clause.strip()) for clause in spec.split(","))


def version_in(version: tuple[int, int], spec: str | None) -> bool:
    """Whether a (major, minor) torch version satisfies every clause of `spec` (None or "": any version)."""
    if not spec:
        return True
    for clause in spec.split(","):
        op, major, minor = _CLAUSE.match(clause.strip()).groups()
        if not _COMPARE[op](version, (int(major), int(minor))):
            return False
    return True
