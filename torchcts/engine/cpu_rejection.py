"""What the CPU oracle rejected, for a `cpu_contract` record's reason.

An item whose every case CPU refused says nothing about the backend, and its record says so. "The CPU
oracle rejected all 10 cases" alone leaves the user guessing whether the case generator, the op's
schema or CPU is at fault; the first rejection's type and first line, and the argument it names where
torch's argument parser or Python names one, say which (`empty_strided` under the out= variant:
"TypeError: empty_strided() got an unexpected keyword argument 'out'", argument `out`).

`Rejections` keeps the first rejection and counts the distinct causes (`report.causes.cause_key`: lines
that differ only in addresses or ids are one cause), bounded; control characters a message carries
(`ord='\x1b[2J'`) are written as escapes, so records and scorecards show them, never run them. No torch.
"""

from __future__ import annotations

import re

import attrs

from torchcts.report.causes import cause_key

MAX_LINE_CHARS = 300
MAX_DISTINCT = 100  # distinct rejection lines counted per item (a bound on memory, not on cases)
# how torch's Python argument parser and Python itself name the argument at fault, most specific first
_ARGUMENT_PATTERNS = (
    re.compile(r"unexpected keyword argument '(\w{1,64})'"),
    re.compile(r"missing \d+ required (?:positional |keyword-only )?arguments?: '(\w{1,64})'"),
    re.compile(r"argument #?\d* ?'(\w{1,64})'"),  # "argument 'size' (position 1) must be", "argument #1 'self'"
    re.compile(r"for argument '(\w{1,64})'"),
)


def first_line(message: str) -> str:
    """The first non-empty line of a message, whitespace collapsed, control characters as escapes, cut to
    `MAX_LINE_CHARS`."""
    line = next((text for text in str(message).splitlines() if text.strip()), "")
    line = _printable(" ".join(line.split()).rstrip(":")[:MAX_LINE_CHARS])  # "... one of:" ends where its list begins
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS - 3] + "..."


def _printable(text: str) -> str:
    """`text` with characters that are not printable (ESC, BEL, bidi controls) written as escapes
    (`cases.files.printable`, which imports torch)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def rejected_argument(message: str) -> str | None:
    """The argument a rejection names ("unexpected keyword argument 'out'", "argument 'size' (position 1)"), or
    None where it names none."""
    head = str(message)[:2000]
    for pattern in _ARGUMENT_PATTERNS:
        found = pattern.search(head)
        if found:
            return found.group(1)
    return None


@attrs.define
class Rejections:
    """The CPU oracle's rejections of one item's cases: the first one's line, and the distinct causes seen."""

    first: str | None = None
    distinct: set[str] = attrs.field(factory=set)

    def add(self, message: str) -> None:
        line = first_line(message)
        if self.first is None:
            self.first = line
        if len(self.distinct) < MAX_DISTINCT:
            self.distinct.add(cause_key(line))

    def describe(self) -> str:
        """"the first: TypeError: ... (argument `out`)", with how many other errors there were; "" for none."""
        if self.first is None:
            return ""
        argument = rejected_argument(self.first)
        text = f"the first: {self.first}" + (f" (argument `{argument}`)" if argument else "")
        others = len(self.distinct) - 1
        if others > 0:
            more = "+" if len(self.distinct) >= MAX_DISTINCT else ""
            text += f"; {others}{more} other error{'s' if others > 1 else ''} among the cases"
        return text
