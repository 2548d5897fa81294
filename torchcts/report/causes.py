"""The cause an error line stands for: the line with its volatile parts replaced, so that one root cause
is one group in a report, not one group per build line, address or temp folder.

Twenty items failing on PyTorch's "structured kernels don't support multi-device outputs" assert print
twenty C++ line numbers (`RegisterCompositeExplicitAutogradNonFunctional_0.cpp":6878`, `...":16364`);
an error naming an object prints its address (`0x7f3a...`) or id; a compiled failure names dynamo's
shape symbols (`s0`, `u12`); a file error names a temp folder. Those parts change from item to item
while the cause does not. What is kept: the words, the exception type, file names (without their line),
and every other number (a shape `[3, 4]`, a dimension, a dtype's width), since those tell causes apart.

No torch; plain strings in, plain strings out.
"""

from __future__ import annotations

import re

# (pattern, replacement), applied in order: file lines before temp paths (`/tmp/x/a.py:12` keeps `:<line>`)
_VOLATILE = (
    # a source file's line: `foo.cpp:123`, `"foo.cpp":123`, `foo.py", line 12`
    (re.compile(r"(\.(?:cpp|cc|cxx|cu|cuh|c|h|hpp|mm|m|py|pyx)\"?)(?::\d+)+"), r"\1:<line>"),
    (re.compile(r"(\.py\"?,) line \d+"), r"\1 line <line>"),
    # a generated file's shard: RegisterCPU_2.cpp, RegisterCompositeExplicitAutogradNonFunctional_0.cpp
    (re.compile(r"\b(Register\w+?)_\d+(\.cpp)"), r"\1_<n>\2"),
    # a path inside a temp folder: /tmp/..., /var/folders/..., C:\...\Temp\... up to a quote, space or colon+digit
    (re.compile(r"(?:/tmp|/var/tmp|/private/var/folders|/var/folders|[A-Za-z]:\\[^\s'\"]*?\\Temp)"
                r"(?:[/\\][^\s'\"<>():,]+)+"), "<tmp>"),
    # an address: 0x7f3a2c..., and the hex of an object's repr
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "0x<addr>"),
    # dynamo's shape symbols: s0, s12 (backed), u0 (unbacked), zuf0, ...
    (re.compile(r"\b(?:s|u|zuf|zf|ps)\d+\b"), "<sym>"),
    # an object id or a raw pointer printed in decimal: 8 digits and more
    (re.compile(r"(?<![\d.])\d{8,}(?![\d.])"), "<id>"),
)
MAX_KEY_CHARS = 500


def cause_key(line: str) -> str:
    """An error line with its volatile parts replaced (see the module): equal for lines that differ only
    in them. Bounded: at most `MAX_KEY_CHARS` of the line are read."""
    text = " ".join(str(line)[:MAX_KEY_CHARS].split())
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text
