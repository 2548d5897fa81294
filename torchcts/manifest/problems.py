"""Manifest problems: what is wrong, where (file and key path), what is allowed, and a suggestion.

Validation never stops at the first problem; it collects them all so a user fixes a manifest in
one pass. Errors make a manifest unusable; warnings flag claims that cannot be fully tested.
"""

from __future__ import annotations

import difflib
import enum
from pathlib import Path
from typing import Iterable, Sequence

import attrs

KeyPath = tuple[object, ...]


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


def format_key_path(path: KeyPath) -> str:
    """``("capabilities", "generator")`` -> ``capabilities.generator``; odd keys in brackets."""
    text = ""
    for part in path:
        if isinstance(part, str) and part.isidentifier():
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


def suggest(word: object, choices: Iterable[str]) -> str | None:
    """The closest allowed name to a misspelt one, if any is close enough."""
    if not isinstance(word, str):
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
            text += f" (got {_short_repr(self.value)})"
        if self.allowed:
            text += f"; allowed: {self.allowed}"
        if self.hint:
            text += f"; did you mean {self.hint}?"
        return text


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
        lines += [f"  error: {p.render()}" for p in self.errors]
        lines += [f"  warning: {p.render()}" for p in self.problems if p.severity is Severity.WARNING]
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
