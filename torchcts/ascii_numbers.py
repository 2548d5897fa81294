"""Numbers typed by a user or read from a file are ASCII: `int("１２")` is 12, and a shard `１/２` is not `1/2`.

Python's `int`, `float`, `str.isdigit` and the `\\d` of a str regex all accept any Unicode decimal digit
(full-width, Arabic-Indic, Devanagari, ...) and `int` also takes `1_000`. A number that TorchCTS parses
from text goes through here instead: optional sign, ASCII digits (and for a float one '.', an ASCII
exponent, or inf/nan where the caller allows them), nothing else; anything else is a ValueError that
names the value. No torch, no click.
"""

from __future__ import annotations

import argparse
import math
import re

_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
MAX_DIGITS = 40  # far past any count, seed (2**64) or size TorchCTS takes; a 10,000-digit int is a typo or an attack


class NotAsciiNumber(ValueError, argparse.ArgumentTypeError):
    """Text that is not an ASCII number; argparse (pytest's options) shows this message as it is."""


def ascii_int(text: object) -> int:
    """The integer `text` spells in ASCII digits (surrounding spaces allowed); NotAsciiNumber otherwise."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    stripped = text.strip(" \t") if isinstance(text, str) else None
    if stripped is None or len(stripped) > MAX_DIGITS or not _INT.fullmatch(stripped):
        raise NotAsciiNumber(f"{_shown(text)} is not an integer in ASCII digits (0-9)")
    return int(stripped)


def ascii_float(text: object) -> float:
    """The number `text` spells in ASCII (digits, one '.', an exponent); NotAsciiNumber otherwise (no inf, nan)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    stripped = text.strip(" \t") if isinstance(text, str) else None
    if stripped is None or len(stripped) > MAX_DIGITS or not _FLOAT.fullmatch(stripped):
        raise NotAsciiNumber(f"{_shown(text)} is not a number in ASCII digits (0-9, '.', an exponent)")
    number = float(stripped)
    if not math.isfinite(number):  # 1e400
        raise NotAsciiNumber(f"{_shown(text)} is not a finite number")
    return number


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:36] + "...'"
