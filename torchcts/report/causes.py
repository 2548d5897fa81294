"""The cause an error line stands for: the line with its volatile parts replaced, so that one root cause
is one group in a report, not one group per build line, address or temp folder.

Twenty items failing on PyTorch's "structured kernels don't support multi-device outputs" assert print
twenty C++ line numbers (`RegisterCompositeExplicitAutogradNonFunctional_0.cpp":6878`, `...":16364`);
an error naming an object prints its address (`0x7f3a...`) or id; a compiled failure names dynamo's
shape symbols (`s0`, `u12`) and inductor's numbered kernels (`triton_poi_fused_add_17`); a file error
names a temp folder; an out-of-memory error the sizes of the moment. Those parts change from item to
item while the cause does not. What is kept: the words, the exception type, file names (without their
line or temp folder), and every other number (a shape `[3, 4]`, a dimension, a dtype's spelling `u8` or
`s32[3]`), since those tell causes apart.

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
    # the folders of a path inside a temp folder (/tmp/..., /var/folders/..., C:\...\Temp\...): its file name stays
    (re.compile(r"(?:/tmp|/var/tmp|/private/var/folders|/var/folders|[A-Za-z]:\\[^\s'\"]*?\\Temp)"
                r"(?:[/\\][^\s'\"<>():,/\\]+)*?[/\\]([^\s'\"<>():,/\\]+)(?=[\s'\"<>():,]|$)"), r"<tmp>/\1"),
    # a name `tempfile` made up: tmpq2k7ab_9 (8 random characters after `tmp`)
    (re.compile(r"(?<![\w.])tmp[a-z0-9_]{8}(?![a-z0-9_])"), "tmp<random>"),
    # an address: 0x7f3a2c..., and the hex of an object's repr
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "0x<addr>"),
    # inductor's kernel names count up: triton_poi_fused_add_17, triton_per_fused_sum_0
    (re.compile(r"\b(triton_\w+?)_\d+\b"), r"\1_<n>"),
    # an object id or a raw pointer printed in decimal: 8 digits and more
    (re.compile(r"(?<![\d.])\d{8,}(?![\d.])"), "<id>"),
)
# dynamo's shape symbols (s0, s12 backed, u0 unbacked, zuf0, ...), replaced only in a symbolic line: one naming
# guards, SymInts or dynamo, or where the symbol stands in arithmetic (`s0*s1`, `u3 + 1`). Never one followed by
# '[' (XLA's `s32[3]`) nor, outside such a line, a dtype's spelling (Triton's `u8`, `u16`, XLA's `s64`).
_SYMBOL = re.compile(r"\b(?:s|u|zuf|zf|ps)\d+\b(?!\[)")
_SYMBOLIC_LINE = re.compile(r"Guard|Sym(?:Int|Float|Bool|Node|bolic)|symbolic|dynamo|ShapeEnv|unbacked|data.dependent"
                            r"|\b(?:Eq|Ne|Lt|Le|Gt|Ge|Mod|FloorDiv|Max|Min)\(", re.IGNORECASE)
_IN_ARITHMETIC = re.compile(r"(?:[*+/%<>=]\s?)\b(?:s|u|zuf|zf|ps)\d+\b(?!\[)|\b(?:s|u|zuf|zf|ps)\d+\b(?=\s?[*+/%<>=])")
_DTYPE_SPELLING = re.compile(r"[su](?:8|16|32|64)")  # in an arithmetic line, s8..s64 are read as dtypes
# an out-of-memory message's sizes and process ids change with every allocation
_OUT_OF_MEMORY = re.compile(r"out of memory|OutOfMemory|\bOOM\b", re.IGNORECASE)
_SIZE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes|B)\b")
_PROCESS = re.compile(r"\b(Process|pid|PID) \d+")
MAX_KEY_CHARS = 500


def cause_key(line: str) -> str:
    """An error line with its volatile parts replaced (see the module): equal for lines that differ only
    in them. Bounded: at most `MAX_KEY_CHARS` of the line are read."""
    text = " ".join(str(line)[:MAX_KEY_CHARS].split())
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    if _OUT_OF_MEMORY.search(text):
        text = _PROCESS.sub(r"\1 <pid>", _SIZE.sub("<size>", text))
    return _symbols(text)


def _symbols(text: str) -> str:
    """`text` with dynamo's shape symbols replaced where the line is symbolic (see `_SYMBOL`)."""
    if _SYMBOLIC_LINE.search(text):
        return _SYMBOL.sub("<sym>", text)
    if not _IN_ARITHMETIC.search(text):
        return text
    return _SYMBOL.sub(lambda m: m.group(0) if _DTYPE_SPELLING.fullmatch(m.group(0)) else "<sym>", text)
