"""Reviewed coverage exclusions: the packaged `exclusions.json`, then the project's `./coverage_exclusions.json`.

An exclusion says why an overload needs no conformance evidence (it never reaches a device, it only
exists for PyTorch's own tests, ...). Both files have one shape:

    {"schema_version": 1, "exclusions": [
        {"overload": "aten._print.default", "reason": "..."},          # one overload
        {"op": "aten.sym_constrain_range", "reason": "..."},            # every overload of a packet
        {"pattern": "aten._foo_*", "reason": "...", "torch": ">=2.9"}]}  # a glob on whole names

Each entry names exactly one of `overload`/`op`/`pattern`, gives a non-empty `reason`, and may limit
itself to torch versions with a `torch` specifier (PEP 440, e.g. ">=2.8,<2.11"); entries whose
specifier excludes the installed torch are inactive. The project's entries come after the packaged
ones and win: when both match a name, `match` answers with the project's. Exclusion files travel
between teams, so they are read as data (bounded size, no code) and a malformed one raises
`ExclusionsError` naming the file, the entry and the field. A well-formed name the installed torch
does not have is only a warning in `problems` (torch versions differ); the check command decides
how much it matters. docs/coverage/policy.md is the user-facing description.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Iterable

import attrs

from torchcts.core.overload_names import IDENT, OVERLOAD_NAME
from torchcts.coverage.inventory import SCHEMA_VERSION as INVENTORY_SCHEMA_VERSION
from torchcts.coverage.inventory import inventory_metadata, inventory_names, load_inventory
from torchcts.coverage.relevance import RULES
from torchcts.results.files import ResultFileError, read_json_file

PACKAGED = Path(__file__).with_name("exclusions.json")
PACKAGED_SOURCE = "torchcts/coverage/exclusions.json"  # how a packaged entry's source is spelled
PROJECT_FILE = "coverage_exclusions.json"
SCHEMA_VERSION = 1
MAX_BYTES = 4 * 2**20  # a real file is a few KiB
MAX_ENTRIES = 20_000
MAX_PATTERN = 300  # characters of one glob (patterns come from files other teams write)
MAX_REASON = 2_000
KINDS = ("overload", "op", "pattern")
FIELDS = frozenset(KINDS) | {"reason", "torch"}
OP_NAME = re.compile(rf"aten\.{IDENT}")
# A pattern is a glob, not a regex: name characters, "*" (any run) and "?" (one character). It is
# matched segment by segment (`glob_matches`), so no pattern can backtrack: safe by construction.
GLOB = re.compile(r"[A-Za-z0-9_.*?]+")


@functools.lru_cache(maxsize=1024)
def _segments(glob: str) -> tuple[re.Pattern[str], ...]:
    """The glob split at "*" into fixed-length pieces, each a regex of literals and "." (one character)."""
    return tuple(re.compile(re.escape(piece).replace(r"\?", ".")) for piece in glob.split("*"))


def glob_matches(glob: str, name: str) -> bool:
    """Whether `glob` matches all of `name`: the first piece at the start, the last at the end, the
    ones between leftmost in order. Pieces have a fixed length, so leftmost is always right, and the
    time is linear in the pattern times the name (no backtracking)."""
    pieces = _segments(glob)
    if len(pieces) == 1:
        return pieces[0].fullmatch(name) is not None
    first, *middle, last = pieces
    start, end = glob.index("*"), len(name) - (len(glob) - 1 - glob.rindex("*"))  # lengths of first and last
    if end < start or not first.match(name, 0, start) or not last.fullmatch(name, end):
        return False
    for piece in middle:
        found = piece.search(name, start, end)
        if found is None:
            return False
        start = found.end()
    return True


class ExclusionsError(Exception):
    """A malformed exclusions file: which file, which entry (index, or None for the file), which field."""

    def __init__(self, file: Path | str, entry: int | None, message: str, field: str | None = None):
        where = str(file) + (f": entry {entry}" if entry is not None else "")
        where += f", field `{field}`" if field is not None else ""
        super().__init__(f"{where}: {message}")
        self.file, self.entry, self.field, self.message = str(file), entry, field, message


@attrs.frozen
class Exclusion:
    """One entry: what it names (`kind` is "overload", "op" or "pattern"), why, and where it came from."""

    kind: str
    value: str
    reason: str
    source: str  # "file#index"
    torch: str | None = None

    def matches(self, name: str) -> bool:
        """Whether this entry covers overload `name`: the same name, an overload of the packet, or the glob."""
        if self.kind == "overload":
            return name == self.value
        if self.kind == "op":
            return name.rsplit(".", 1)[0] == self.value
        return glob_matches(self.value, name)


@attrs.frozen
class Exclusions:
    """The active entries in merge order (packaged first, project last), and warnings about them."""

    entries: tuple[Exclusion, ...]
    problems: tuple[str, ...] = ()  # stale names: warnings the check command weighs
    repeats: tuple[str, ...] = ()  # a name given twice in one file (harmless: the later entry wins)
    inactive: tuple[Exclusion, ...] = ()  # entries whose `torch` specifier excludes the installed torch
    _by_name: dict[str, Exclusion] = attrs.field(init=False, repr=False, eq=False)
    _order: dict[str, int] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        by_name: dict[str, Exclusion] = {}
        for entry in self.entries:  # a later entry (the project's) replaces an earlier one of the same name
            if entry.kind != "pattern":
                by_name[entry.value] = entry
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_order", {entry.source: i for i, entry in enumerate(self.entries)})

    def match(self, name: str) -> Exclusion | None:
        """The exclusion for overload `name` ("aten.add.Tensor"): of those that match, the last in merge
        order, so a project entry wins over a packaged one, and a later entry over an earlier one."""
        pattern = next((e for e in reversed(self.entries) if e.kind == "pattern" and e.matches(name)), None)
        found = [e for e in (self._by_name.get(name), self._by_name.get(name.rsplit(".", 1)[0]), pattern) if e]
        return max(found, key=lambda e: self._order[e.source], default=None)


def _specifier(text: str, file: Path | str, index: int) -> Any:
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ImportError:  # packaging comes with pytest, a dependency; guard anyway
        raise ExclusionsError(file, index, "cannot check a torch range: the `packaging` module is missing",
                              "torch") from None
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ExclusionsError(file, index, f"{text!r} is not a version specifier (e.g. \">=2.8,<2.11\")",
                              "torch") from None


def _entry(raw: Any, file: Path | str, index: int, source: str) -> Exclusion:
    """One validated entry; ExclusionsError names the field that is wrong."""
    if not isinstance(raw, dict):
        raise ExclusionsError(file, index, f"must be an object, not {type(raw).__name__}")
    unknown = sorted(set(raw) - FIELDS)
    if unknown:
        raise ExclusionsError(file, index, f"unknown field; allowed: {', '.join(sorted(FIELDS))}", unknown[0])
    kinds = [kind for kind in KINDS if kind in raw]
    if len(kinds) != 1:
        raise ExclusionsError(file, index, "name exactly one of `overload`, `op`, `pattern`"
                              + (f" (found {', '.join(kinds)})" if kinds else ""), kinds[1] if kinds else None)
    kind = kinds[0]
    value = raw[kind]
    if not isinstance(value, str) or not value:
        raise ExclusionsError(file, index, "must be a non-empty string", kind)
    if kind == "overload" and not OVERLOAD_NAME.fullmatch(value):
        raise ExclusionsError(file, index, f"{value[:80]!r} is not an overload name like \"aten.add.Tensor\"", kind)
    if kind == "op" and not OP_NAME.fullmatch(value):
        raise ExclusionsError(file, index, f"{value[:80]!r} is not an op name like \"aten.add\"", kind)
    if kind == "pattern":
        if len(value) > MAX_PATTERN:
            raise ExclusionsError(file, index, f"a glob of {len(value)} characters, over the limit of {MAX_PATTERN}",
                                  kind)
        if not GLOB.fullmatch(value):
            raise ExclusionsError(file, index, f"{value[:80]!r} is not a glob: use letters, digits, `_`, `.`, "
                                  "`*` (any run of characters) and `?` (one character), e.g. \"aten._foo_*\"", kind)
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ExclusionsError(file, index, "every exclusion needs a non-empty reason", "reason")
    if len(reason) > MAX_REASON:
        raise ExclusionsError(file, index, f"over {MAX_REASON} characters", "reason")
    torch_range = raw.get("torch")
    if torch_range is not None:
        if not isinstance(torch_range, str) or not torch_range.strip():
            raise ExclusionsError(file, index, "must be a version specifier string like \">=2.8\"", "torch")
        _specifier(torch_range, file, index)
    return Exclusion(kind, value, reason.strip(), f"{source}#{index}", torch_range)


def read_file(path: Path, source: str | None = None) -> list[Exclusion]:
    """The validated entries of one exclusions file (bounded read; never executes anything)."""
    try:
        data = read_json_file(path, MAX_BYTES, "coverage exclusions file")
    except ResultFileError as exc:
        raise ExclusionsError(path, None, exc.problem) from None
    if not isinstance(data, dict):
        raise ExclusionsError(path, None, "must be a JSON object with `schema_version` and `exclusions`")
    unknown = sorted(set(data) - {"schema_version", "exclusions"})
    if unknown:
        raise ExclusionsError(path, None, "unknown field; allowed: exclusions, schema_version", unknown[0])
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ExclusionsError(path, None, f"must be {SCHEMA_VERSION}", "schema_version")
    entries = data.get("exclusions")
    if not isinstance(entries, list):
        raise ExclusionsError(path, None, "must be a list of entries", "exclusions")
    if len(entries) > MAX_ENTRIES:
        raise ExclusionsError(path, None, f"{len(entries)} entries, over the limit of {MAX_ENTRIES}", "exclusions")
    source = source or str(path)
    return [_entry(raw, path, index, source) for index, raw in enumerate(entries)]


def _installed_torch() -> str:
    import torch

    return torch.__version__


def _active(entry: Exclusion, torch_version: str) -> bool:
    if entry.torch is None:
        return True
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(entry.torch).contains(torch_version, prereleases=True)


def _stale(entries: Iterable[Exclusion], names: frozenset[str], torch_version: str) -> list[str]:
    """Warnings for entries that name nothing the installed torch has."""
    packets = {name.rsplit(".", 1)[0] for name in names}
    problems = []
    for entry in entries:
        if entry.kind == "overload":
            missing = entry.value not in names
        elif entry.kind == "op":
            missing = entry.value not in packets
        else:
            missing = not any(entry.matches(name) for name in names)
        if missing:
            what = {"pattern": "matches no overload", "overload": "is not an overload", "op": "is not an op"}[entry.kind]
            problems.append(f"{entry.source}: {entry.kind} {entry.value!r} {what} of torch {torch_version} (stale)")
    return problems


def _repeats(entries: Iterable[Exclusion]) -> list[str]:
    """Warnings for a name given twice in one file."""
    seen: dict[tuple[str, str, str], str] = {}
    repeats = []
    for entry in entries:
        key = (entry.kind, entry.value, entry.source.rsplit("#", 1)[0])
        if key in seen:
            repeats.append(f"{entry.source}: {entry.kind} {entry.value!r} repeats {seen[key]} (the later entry wins)")
        seen.setdefault(key, entry.source)
    return repeats


def load_exclusions(project_dir: Path | str | None = None, *, packaged: Path | None = None,
                    torch_version: str | None = None, names: frozenset[str] | None = None) -> Exclusions:
    """The packaged exclusions, then `project_dir/coverage_exclusions.json` if it exists, merged.

    `torch_version` and `names` default to the installed torch and its inventory (tests pass their own).
    """
    files = [(packaged or PACKAGED, PACKAGED_SOURCE if packaged is None else None)]
    if project_dir is not None and (Path(project_dir) / PROJECT_FILE).exists():
        files.append((Path(project_dir) / PROJECT_FILE, None))
    entries = [entry for path, source in files for entry in read_file(path, source)]
    torch_version = torch_version or _installed_torch()
    active = tuple(entry for entry in entries if _active(entry, torch_version))
    inactive = tuple(entry for entry in entries if not _active(entry, torch_version))
    names = inventory_names() if names is None else names
    return Exclusions(active, tuple(_stale(active, names, torch_version)), tuple(_repeats(entries)), inactive)


def inventory_document(project_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """inventory.json's content (every overload with the exclusion that applies to it, the rules, the counts) and
    the exclusion warnings; ExclusionsError for a malformed exclusions file. `coverage inventory` and
    `coverage audit` both write it."""
    entries = load_inventory()
    exclusions = load_exclusions(project_dir)
    overloads = []
    for entry in entries:
        hit = exclusions.match(entry.name)
        excluded = None if hit is None else {"reason": hit.reason, "source": hit.source}
        overloads.append(entry.to_json() | {"excluded": excluded})
    metadata = inventory_metadata()
    metadata["counts"]["excluded"] = sum(o["excluded"] is not None for o in overloads)
    metadata["counts"]["relevant_excluded"] = sum(o["excluded"] is not None and o["relevant"] for o in overloads)
    warnings = list(exclusions.problems) + list(exclusions.repeats)
    document = {
        "schema_version": INVENTORY_SCHEMA_VERSION,
        "metadata": metadata,
        "rules": [{"id": r.id, "relevant": r.relevant, "why": r.why, "capability": r.capability}
                  for r in RULES],
        "exclusion_warnings": warnings,
        "overloads": overloads,
    }
    return document, warnings
