"""Reading and validating path-shapes files: one JSON file per model family, untrusted data.

A file is `{"schema_version": 1, "family": F, "description": ..., "cases": [...]}`; each case is
`{"id", "op", "args", "kwargs", "tier", "level", "budget", "source"?, "waivers"?}` (docs/path-shapes.md).
An argument is a literal (number, bool, null, short string, list of numbers) or a tensor spec
`{"shape", "dtype", "layout"?, "values"?, "high"?}`; `cat` takes a list of tensor specs.

Reading never executes anything: files are size-bounded JSON, every field is checked by type and
range, ops come from `ops.OPS`. A case's op is then called once on `meta` tensors: the call must
accept the shapes, and its results give the bytes the case needs, which must fit its tier.
Every problem names the file, the case (id and index) and the field, and says what is allowed.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable

import attrs
import torch

from torchcts.pathshapes.inputs import DTYPES, TensorSpec, build_arguments
from torchcts.pathshapes.ops import OPS

SCHEMA_VERSION = 1
MAX_FILE_BYTES = 1 << 20
MAX_FILES = 64
MAX_CASES_PER_FILE = 2000
MAX_RANK = 8
MAX_DIM = 1 << 24
MAX_BUDGET = 100
MAX_TEXT = 300
LEVELS = range(1, 9)
# Tiers by the bytes a case holds (operands and results), each the smallest that fits.
TIERS: dict[str, int] = {"tiny": 1 << 20, "small": 16 << 20, "medium": 256 << 20, "large": 4 << 30}
LAYOUTS = ("contiguous", "channels_last", "transposed")
VALUES = ("normal", "uniform", "positive", "index")
_ID = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,99}$")
_CASE_KEYS = {"id", "op", "args", "kwargs", "tier", "level", "budget", "source", "waivers"}
_TENSOR_KEYS = {"shape", "dtype", "layout", "values", "high"}
_WAIVER_KEYS = {"targets", "reason", "expires"}
_FILE_KEYS = {"schema_version", "family", "description", "cases"}


class CorpusError(Exception):
    """The corpus cannot be used; `problems` lists every problem found, one line each."""

    def __init__(self, problems: list[str]):
        super().__init__(problems[0] if len(problems) == 1 else f"{len(problems)} problems, first: {problems[0]}")
        self.problems = problems


@attrs.frozen
class Waiver:
    """A known problem: the targets (device types) it covers, why, and the day it stops applying."""

    targets: tuple[str, ...]
    reason: str
    expires: datetime.date

    def covers(self, device_type: str) -> bool:
        return device_type in self.targets or "*" in self.targets

    def as_json(self) -> dict[str, Any]:
        return {"targets": list(self.targets), "reason": self.reason, "expires": self.expires.isoformat()}


@attrs.frozen
class Case:
    """One operator call with real shapes; `needed_bytes` and `largest_bytes` are computed on meta."""

    id: str
    family: str
    file: str
    op: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    tier: str
    level: int
    budget: int
    source: str = ""
    waivers: tuple[Waiver, ...] = ()
    needed_bytes: int = 0
    largest_bytes: int = 0

    @property
    def dtype(self) -> str:
        """The case's dtype: that of its first floating operand (else its first operand)."""
        specs = list(tensor_specs(self))
        floating = [s for s in specs if s.torch_dtype.is_floating_point]
        return (floating or specs)[0].dtype if specs else "float32"

    def waiver_for(self, device_type: str, today: datetime.date) -> tuple[Waiver | None, Waiver | None]:
        """(a waiver in force for `device_type`, an expired one that would have covered it)."""
        covering = [w for w in self.waivers if w.covers(device_type)]
        live = next((w for w in covering if w.expires >= today), None)
        return live, (None if live else next(iter(covering), None))


@attrs.frozen
class Corpus:
    folder: Path
    cases: tuple[Case, ...]

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(sorted({c.family for c in self.cases}))


def default_folder() -> Path:
    """The corpus shipped with TorchCTS."""
    return Path(__file__).parent / "data"


def tensor_specs(case: Case) -> Iterable[TensorSpec]:
    for value in (*case.args, *(v for _, v in case.kwargs)):
        if isinstance(value, TensorSpec):
            yield value
        elif isinstance(value, tuple):
            yield from (v for v in value if isinstance(v, TensorSpec))


def load_corpus(folder: Path | None = None) -> Corpus:
    """Every case of the folder's `*.json` files; `CorpusError` listing every problem when any file has one."""
    folder = Path(folder) if folder is not None else default_folder()
    cases, problems = read_folder(folder)
    if problems:
        raise CorpusError(problems)
    return Corpus(folder, tuple(cases))


def read_folder(folder: Path) -> tuple[list[Case], list[str]]:
    """The valid cases of a folder and the problems of the others (ids must be unique across files)."""
    if not folder.is_dir():
        return [], [f"{folder}: not a folder of path-shapes JSON files"]
    files = sorted(folder.glob("*.json"))
    if not files:
        return [], [f"{folder}: holds no *.json path-shapes file"]
    if len(files) > MAX_FILES:
        return [], [f"{folder}: {len(files)} files, at most {MAX_FILES} allowed"]
    cases: list[Case] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    families: dict[str, str] = {}
    for path in files:
        file_cases, file_problems = read_file(path)
        problems += file_problems
        for case in file_cases:
            if case.id in seen:
                problems.append(f"{path.name}: case {case.id!r}: field 'id': already used in {seen[case.id]}")
                continue
            seen[case.id] = path.name
            cases.append(case)
        if file_cases and file_cases[0].family in families:
            problems.append(f"{path.name}: field 'family': {file_cases[0].family!r} is already the family of "
                            f"{families[file_cases[0].family]}")
        elif file_cases:
            families[file_cases[0].family] = path.name
    return cases, problems


def read_file(path: Path) -> tuple[list[Case], list[str]]:
    """The valid cases of one file and a problem line for each invalid part."""
    name = path.name
    try:
        with open(path, "rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return [], [f"{name}: cannot be read: {exc.strerror or exc}"]
    if len(data) > MAX_FILE_BYTES:
        return [], [f"{name}: larger than {MAX_FILE_BYTES} bytes; split the family or trim it"]
    try:
        raw = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return [], [f"{name}: not valid JSON: {str(exc)[:200]}"]
    if not isinstance(raw, dict):
        return [], [f"{name}: the top level must be an object with {sorted(_FILE_KEYS)}"]
    unknown = set(raw) - _FILE_KEYS
    if unknown:
        return [], [f"{name}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_FILE_KEYS)}"]
    if raw.get("schema_version") != SCHEMA_VERSION:
        return [], [f"{name}: field 'schema_version': {raw.get('schema_version')!r}, this TorchCTS reads "
                    f"{SCHEMA_VERSION}"]
    family = raw.get("family")
    if not isinstance(family, str) or not _ID.match(family):
        return [], [f"{name}: field 'family': {family!r}, want a lower-case name ([a-z0-9_.-], at most 100 chars)"]
    if not isinstance(raw.get("description", ""), str):
        return [], [f"{name}: field 'description': must be a string"]
    entries = raw.get("cases")
    if not isinstance(entries, list) or not entries or len(entries) > MAX_CASES_PER_FILE:
        return [], [f"{name}: field 'cases': want a list of 1 to {MAX_CASES_PER_FILE} case objects"]
    cases, problems = [], []
    for index, entry in enumerate(entries):
        label = f"{name}: case {entry.get('id')[:100]!r} (entry {index})" if isinstance(entry, dict) and \
            isinstance(entry.get("id"), str) else f"{name}: entry {index}"
        try:
            cases.append(_case(entry, family, name))
        except _Bad as bad:
            problems.append(f"{label}: {bad}")
    return cases, problems


class _Bad(Exception):
    """One field of one case is wrong (the message starts with the field)."""


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _case(entry: Any, family: str, file: str) -> Case:
    if not isinstance(entry, dict):
        raise _Bad(f"must be an object with fields {sorted(_CASE_KEYS)}")
    unknown = set(entry) - _CASE_KEYS
    if unknown:
        raise _Bad(f"unknown field(s) {sorted(unknown)}; allowed: {sorted(_CASE_KEYS)}")
    case_id = entry.get("id")
    if not isinstance(case_id, str) or not _ID.match(case_id):
        raise _Bad(f"field 'id': {case_id!r}, want a lower-case name ([a-z0-9_.-], at most 100 chars)")
    op = entry.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise _Bad(f"field 'op': {op!r} is not an allowed op; allowed: {', '.join(sorted(OPS))}")
    args = entry.get("args", [])
    if not isinstance(args, list) or len(args) > 16:
        raise _Bad("field 'args': want a list of at most 16 arguments")
    kwargs = entry.get("kwargs", {})
    if not isinstance(kwargs, dict) or len(kwargs) > 16 or not all(isinstance(k, str) and k.isidentifier()
                                                                   for k in kwargs):
        raise _Bad("field 'kwargs': want an object of at most 16 keyword arguments named like Python identifiers")
    tier = entry.get("tier")
    if tier not in TIERS:
        raise _Bad(f"field 'tier': {tier!r}, allowed: {', '.join(TIERS)}")
    level = entry.get("level")
    if not _is_int(level) or level not in LEVELS:
        raise _Bad(f"field 'level': {level!r}, want an integer 1..8 (the manifest's semantic_level)")
    budget = entry.get("budget")
    if not _is_int(budget) or not 1 <= budget <= MAX_BUDGET:
        raise _Bad(f"field 'budget': {budget!r}, want an integer 1..{MAX_BUDGET} (seeded value draws)")
    source = entry.get("source", "")
    if not isinstance(source, str) or len(source) > MAX_TEXT:
        raise _Bad(f"field 'source': want a string of at most {MAX_TEXT} characters")
    waivers = entry.get("waivers", [])
    if not isinstance(waivers, list) or len(waivers) > 8:
        raise _Bad("field 'waivers': want a list of at most 8 waiver objects")
    case = Case(id=case_id, family=family, file=file, op=op,
                args=tuple(_argument(a, f"args[{i}]") for i, a in enumerate(args)),
                kwargs=tuple((k, _argument(v, f"kwargs.{k}")) for k, v in sorted(kwargs.items())),
                tier=tier, level=level, budget=budget, source=source,
                waivers=tuple(_waiver(w, f"waivers[{i}]") for i, w in enumerate(waivers)))
    if not list(tensor_specs(case)):
        raise _Bad("field 'args': a case needs at least one tensor operand")
    needed, largest = _meta_bytes(case)
    if needed > TIERS[tier] or (tier != "tiny" and needed <= _below(tier)):
        raise _Bad(f"field 'tier': {tier!r}, but its operands and results hold {needed} bytes: tier "
                   f"{tier_for(needed)!r} ({', '.join(f'{t} <= {b >> 20} MiB' for t, b in TIERS.items())})")
    return attrs.evolve(case, needed_bytes=needed, largest_bytes=largest)


def tier_for(nbytes: int) -> str:
    """The smallest tier holding `nbytes` ("above-large" past the last)."""
    return next((t for t, cap in TIERS.items() if nbytes <= cap), "above-large")


def _below(tier: str) -> int:
    names = list(TIERS)
    return TIERS[names[names.index(tier) - 1]]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _argument(value: Any, field: str) -> Any:
    """A literal, a tensor spec, or a tuple of either (lists become tuples)."""
    if value is None or isinstance(value, (bool, int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise _Bad(f"field {field!r}: {value!r} is not a finite number")
        return value
    if isinstance(value, str):
        if len(value) > 32:
            raise _Bad(f"field {field!r}: strings are at most 32 characters")
        return value
    if isinstance(value, dict):
        return _tensor(value, field)
    if isinstance(value, list) and len(value) <= 16:
        items = tuple(_argument(v, f"{field}[{i}]") for i, v in enumerate(value))
        if any(isinstance(v, tuple) for v in items):
            raise _Bad(f"field {field!r}: lists do not nest")
        return items
    raise _Bad(f"field {field!r}: want a number, bool, null, string, tensor spec or list of at most 16 of them")


def _tensor(raw: dict[str, Any], field: str) -> TensorSpec:
    unknown = set(raw) - _TENSOR_KEYS
    if unknown:
        raise _Bad(f"field {field!r}: unknown tensor key(s) {sorted(unknown)}; allowed: {sorted(_TENSOR_KEYS)}")
    shape = raw.get("shape")
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(_is_int(n) and 0 <= n <= MAX_DIM
                                                                       for n in shape):
        raise _Bad(f"field '{field}.shape': {shape!r}, want a list of at most {MAX_RANK} sizes 0..{MAX_DIM}")
    dtype = raw.get("dtype")
    if dtype not in DTYPES:
        raise _Bad(f"field '{field}.dtype': {dtype!r}, allowed: {', '.join(DTYPES)}")
    layout = raw.get("layout", "contiguous")
    if layout not in LAYOUTS:
        raise _Bad(f"field '{field}.layout': {layout!r}, allowed: {', '.join(LAYOUTS)}")
    if layout == "channels_last" and len(shape) != 4:
        raise _Bad(f"field '{field}.layout': channels_last needs a 4-d shape, not {len(shape)}-d")
    if layout == "transposed" and len(shape) < 2:
        raise _Bad(f"field '{field}.layout': transposed needs at least 2 dimensions")
    values = raw.get("values", "index" if not DTYPES[dtype].is_floating_point else "normal")
    if values not in VALUES:
        raise _Bad(f"field '{field}.values': {values!r}, allowed: {', '.join(VALUES)}")
    if (values == "index") == DTYPES[dtype].is_floating_point:
        raise _Bad(f"field '{field}.values': {values!r} does not suit {dtype} (indices are integer, the rest floating)")
    high = raw.get("high")
    if values == "index" and (not _is_int(high) or not 1 <= high <= MAX_DIM):
        raise _Bad(f"field '{field}.high': {high!r}, index values need an integer bound 1..{MAX_DIM} (exclusive)")
    if values != "index" and high is not None:
        raise _Bad(f"field '{field}.high': only index values take a bound")
    return TensorSpec(tuple(shape), dtype, layout, values, high)


def _waiver(raw: Any, field: str) -> Waiver:
    if not isinstance(raw, dict) or set(raw) != _WAIVER_KEYS:
        raise _Bad(f"field {field!r}: want an object with exactly {sorted(_WAIVER_KEYS)}")
    targets = raw["targets"]
    if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and 0 < len(t) <= 32
                                                               for t in targets):
        raise _Bad(f"field '{field}.targets': want a non-empty list of device types (cuda, faulty, ...) or '*'")
    reason = raw["reason"]
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_TEXT:
        raise _Bad(f"field '{field}.reason': want a non-empty string of at most {MAX_TEXT} characters")
    try:
        expires = datetime.date.fromisoformat(raw["expires"]) if isinstance(raw["expires"], str) and \
            len(raw["expires"]) == 10 else None
    except ValueError:
        expires = None
    if expires is None:
        raise _Bad(f"field '{field}.expires': {raw['expires']!r}, want a date YYYY-MM-DD")
    return Waiver(tuple(targets), reason, expires)


def _meta_bytes(case: Case) -> tuple[int, int]:
    """(bytes of operands and results, bytes of the largest tensor), from one call on meta tensors."""
    operands = sum(s.nbytes for s in tensor_specs(case))
    largest = max(s.nbytes for s in tensor_specs(case))
    if operands > 64 * TIERS["large"]:
        raise _Bad(f"field 'args': the operands alone hold {operands} bytes, past any tier")
    args, kwargs = build_arguments(case, "meta", None)
    try:
        result = OPS[case.op].fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - whatever torch says about the shapes is the problem to report
        raise _Bad(f"field 'args': {case.op} rejects these operands: {str(exc).strip().splitlines()[0][:300]}")
    outputs = [t for t in (result if isinstance(result, (tuple, list)) else (result,)) if isinstance(t, torch.Tensor)]
    out_bytes = [t.numel() * t.element_size() for t in outputs]
    return operands + sum(out_bytes), max([largest, *out_bytes])


def expired_waivers(cases: Iterable[Case], today: datetime.date) -> list[str]:
    """One problem line per waiver past its expiry date."""
    return [f"{c.file}: case {c.id!r}: field 'waivers[{i}].expires': {w.expires.isoformat()} is before "
            f"{today.isoformat()}; renew it with a reason or remove it" for c in cases
            for i, w in enumerate(c.waivers) if w.expires < today]
