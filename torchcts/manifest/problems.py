"""Manifest problems: what is wrong, where (file and key path), what is allowed, and a suggestion.

Validation never stops at the first problem; it collects them all so a user fixes a manifest in
one pass. Errors make a manifest unusable; warnings flag claims that cannot be fully tested.
"""

from __future__ import annotations

import difflib
import enum
import reprlib
from pathlib import Path
from typing import Iterable, Sequence

import attrs

KeyPath = tuple[object, ...]


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


KEY_PART_LIMIT = 60  # characters of one key shown in a key path
VALUE_LIMIT = 80  # characters of a bad value shown in a problem
MAX_RENDERED_ERRORS = 50  # problems listed by `ManifestError.render`; the rest are counted


def format_key_path(path: KeyPath) -> str:
    """``("capabilities", "generator")`` -> ``capabilities.generator``; odd keys in brackets, long ones cut."""
    text = ""
    for part in path:
        if isinstance(part, str) and part.isidentifier() and len(part) <= KEY_PART_LIMIT:
            text += f".{part}" if text else part
        else:
            text += f"[{safe_repr(part, KEY_PART_LIMIT)}]"
    return text


class _BoundedRepr(reprlib.Repr):
    """reprlib's size limits, plus integers too long for `repr` (Python refuses > 4300 digits)."""

    def __init__(self, limit: int):
        super().__init__()
        self.maxstring = self.maxother = self.maxlong = limit
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple, self.maxset = 3, 6, 6, 6, 6

    def repr_int(self, x: int, level: int) -> str:
        bits = int.bit_length(x)
        if bits > 200:
            return f"<{'negative ' if x < 0 else ''}int of about {int(bits * 0.30103) + 1} digits>"
        return super().repr_int(x, level)

    def repr_instance(self, x: object, level: int) -> str:
        text = _raising_repr(x, repr)  # reprlib's own fallback prints an address: not reproducible
        return text if len(text) <= self.maxother else text[: self.maxother - 3] + "..."


def safe_repr(value: object, limit: int = VALUE_LIMIT) -> str:
    """`repr(value)` cut to about `limit` characters, for messages; never raises, never builds a huge string.

    Manifest values are user objects: a repr may raise or exit, an int may be too long to print, a
    string may be megabytes long. Long strings keep their length: ``'aaaa...aaaa' (10485760 characters)``.
    """
    text = _raising_repr(value, _BoundedRepr(limit).repr)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    if isinstance(value, str) and len(value) > limit:
        text += f" ({len(value)} characters)"
    return text


def _raising_repr(value: object, function, *args) -> str:
    try:
        return function(value, *args)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a user's __repr__ may raise anything, even SystemExit
        return f"<{type_name(value)} object; its repr() raised {type(exc).__name__}>"


def type_name(value: object) -> str:
    """The name of a value's type, for messages."""
    try:
        return str(type(value).__name__)
    except Exception:  # noqa: BLE001 - a metaclass may override anything
        return "object"


def suggest(word: object, choices: Iterable[str]) -> str | None:
    """The closest allowed name to a misspelt one, if any is close enough."""
    if not isinstance(word, str) or len(word) > 100:  # no name is that long; difflib would take seconds
        return None
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not matches:
        lowered = {c.lower(): c for c in choices}
        return lowered.get(word.lower())
    return matches[0]


_NO_VALUE = object()


@attrs.frozen
class Problem:
    """One thing wrong with a manifest."""

    path: KeyPath
    message: str
    value: object = attrs.field(default=_NO_VALUE, eq=False)
    allowed: str | None = None
    hint: str | None = None
    severity: Severity = Severity.ERROR

    @property
    def key(self) -> str:
        return format_key_path(self.path)

    def render(self) -> str:
        """'key.path: message (got value); allowed: ...; did you mean ...?' (no key for file-level problems)."""
        text = f"{self.key}: {self.message}" if self.path else self.message
        if self.value is not _NO_VALUE:
            text += f" (got {safe_repr(self.value)})"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        if self.hint:
            text += f"; did you mean {self.hint}?"
        return text


def allowed_list(names: Sequence[str], limit: int = 12) -> str:
    """A readable list of allowed names, shortened when long."""
    quoted = [repr(n) for n in names]
    if len(quoted) <= limit:
        return ", ".join(quoted)
    return ", ".join(quoted[:limit]) + f", ... ({len(quoted)} in all; see docs/manifest.md)"


class ManifestError(Exception):
    """A manifest that cannot be used; carries every problem found and the file it came from."""

    def __init__(self, source: Path | str, problems: Sequence[Problem]):
        self.source = str(source)
        self.problems = tuple(problems)
        super().__init__(self.render())

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.ERROR)

    def render(self) -> str:
        count = len(self.errors)
        lines = [f"{self.source}: {count} problem{'s' if count != 1 else ''}"]
        lines += [f"  error: {p.render()}" for p in self.errors[:MAX_RENDERED_ERRORS]]
        if count > MAX_RENDERED_ERRORS:
            lines.append(f"  ... and {count - MAX_RENDERED_ERRORS} more errors")
        warnings = [p for p in self.problems if p.severity is Severity.WARNING]
        lines += [f"  warning: {p.render()}" for p in warnings[:MAX_RENDERED_ERRORS]]
        if len(warnings) > MAX_RENDERED_ERRORS:
            lines.append(f"  ... and {len(warnings) - MAX_RENDERED_ERRORS} more warnings")
        return "\n".join(lines)


@attrs.define
class ProblemLog:
    """Collects problems during validation."""

    problems: list[Problem] = attrs.field(factory=list)

    def error(self, path: KeyPath, message: str, value: object = _NO_VALUE, allowed: str | None = None,
              hint: str | None = None) -> None:
        self.problems.append(Problem(path, message, value, allowed, _quote(hint)))

    def warn(self, path: KeyPath, message: str, value: object = _NO_VALUE, allowed: str | None = None,
             hint: str | None = None) -> None:
        self.problems.append(Problem(path, message, value, allowed, _quote(hint), Severity.WARNING))

    def unknown_key(self, path: KeyPath, what: str, choices: Sequence[str]) -> None:
        """An unexpected dict key, with the allowed keys and the nearest one."""
        self.error(path, f"unknown {what}", allowed=allowed_list(choices), hint=suggest(path[-1], choices))

    @property
    def has_errors(self) -> bool:
        return any(p.severity is Severity.ERROR for p in self.problems)


def _quote(hint: str | None) -> str | None:
    return None if hint is None else repr(hint)
