"""Validate a raw manifest dict and build the frozen `Manifest` from it.

Every key is checked for type and range; every problem is collected with its key path, the bad
value, what is allowed and, where one fits, the nearest valid name. Which keys exist, which are
required or removed, and the rules of the scalar ones come from `torchcts.manifest.schema`; the
dict-shaped keys (dtypes, capabilities, tolerances, ...) have their own functions here, on the checks of
single values (a bool, a regex, a dtype: `torchcts.manifest.value_reader`). Claims
that cannot all be tested are warnings (`torchcts.manifest.cross_checks`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

import torch

from torchcts import dtypes
from torchcts.manifest import schema
from torchcts.manifest import vocabulary as vocab
from torchcts.manifest.cross_checks import cross_check
from torchcts.manifest.kinds import DECODER_PATH, NAME_MAX_CHARS, is_int, is_number, name_like
from torchcts.manifest.model import (
    CompileSettings, DtypeClaim, Hardware, HypothesisSettings, Manifest, ResourceLimits, Tolerance,
)
from torchcts.manifest.plain import exception_text, to_plain, value_type
from torchcts.manifest.problems import KeyPath, ManifestError, Problem, ProblemLog, allowed_list, suggest
from torchcts.manifest.value_reader import ValueReader, key_label

REASON_MAX_CHARS = 2000  # a skip reason is copied into every record of the op
_SECTION_MODELS = {"hardware": Hardware, "resource_limits": ResourceLimits, "hypothesis": HypothesisSettings,
                   "compile": CompileSettings}


def parse_manifest(raw: object, source: Path | None = None) -> tuple[Manifest, tuple[Problem, ...]]:
    """The `Manifest` for a raw dict and its warnings; raises `ManifestError` listing every error."""
    manifest, problems = validate(raw, source)
    if manifest is None:
        raise ManifestError(source or "<manifest>", problems)
    return manifest, problems


def validate(raw: object, source: Path | None = None) -> tuple[Manifest | None, tuple[Problem, ...]]:
    """All problems of a raw manifest, and the `Manifest` when none of them is an error.

    `raw` is read into plain data first (`torchcts.manifest.plain`): validation never calls a method
    of an object the manifest made, so a raising `items()` or `__repr__` is a problem, not a crash."""
    log = ProblemLog()
    raw, unreadable = to_plain(raw)
    for path, message in unreadable:
        log.error(path, message)
    if not isinstance(raw, Mapping):
        if not unreadable:
            log.error(("manifest",), "must be a dict", value_type(raw), allowed="a dict of manifest keys")
        return None, tuple(log.problems)
    base_dir = source.parent if source is not None else Path.cwd()
    fields = _Fields(raw, log, base_dir).parse()
    if unreadable:  # what parsing says in or around an unreadable value repeats the problem already logged
        log.problems[len(unreadable):] = [p for p in log.problems[len(unreadable):]
                                          if not any(_related(p.path, path) for path, _ in unreadable)]
    if log.has_errors:
        return None, tuple(log.problems)
    return Manifest(source=source, **fields), tuple(log.problems)


def _related(path: KeyPath, other: KeyPath) -> bool:
    """Whether one key path is inside the other (or both are the same)."""
    common = min(len(path), len(other))
    return path[:common] == other[:common]


class _Fields(ValueReader):
    """Parses each top-level key in turn (in the schema's order) into the keyword arguments of `Manifest`."""

    def __init__(self, raw: Mapping, log: ProblemLog, base_dir: Path):
        super().__init__(raw, log, base_dir)
        self.fields: dict[str, object] = {}

    def parse(self) -> dict[str, object]:
        self._check_names()
        dedicated = {
            "manifest_version": self._manifest_version,
            "supported_dtypes": self._dtype_claims,
            "capabilities": self._capabilities,
            "skip_ops": self._skip_ops,
            "tolerance_overrides": self._tolerance_overrides,
            "supported_container_formats": self._container_formats,
            "custom_container_decoders": self._decoders,
            "custom_test_dirs": self._custom_test_dirs,
            "autocast_policy": self._autocast_policy,
        }
        for key in schema.TOP_LEVEL:
            if key.name in schema.SECTION_KEYS:
                value = self._section(schema.SECTION_KEYS[key.name])
            elif key.kind is not None:
                value = self._scalar(key)
            else:
                value = dedicated[key.name]()
            self.fields[key.attribute] = value
        if not self.log.has_errors:
            cross_check(self.fields, self.log)
        return self.fields

    def _check_names(self) -> None:
        """Unknown and removed top-level keys, and missing required ones."""
        for key in self.raw:
            if key in schema.REMOVED:
                self.log.error((key,), f"removed key: {schema.REMOVED[key]}")
            elif key not in schema.KEYS:
                choices = list(schema.KEYS)
                hint = schema.ALIASES.get(key) if isinstance(key, str) else None
                self.log.error((key,), "unknown top-level key", allowed=allowed_list(choices, limit=30),
                               hint=hint or suggest(key, choices))
        for name in schema.REQUIRED_KEYS:
            if name not in self.raw:
                self.log.error((name,), "missing required key", allowed=schema.KEYS[name].allowed)

    # -- keys of the schema's kinds and sections ----------------------------------------------------

    def _scalar(self, key: schema.Key) -> object:
        """A key its schema kind checks; absent, its default (a missing required key is reported already)."""
        if key.name not in self.raw:
            return None if key.required else key.default
        ok, value = self._checked((key.name,), key, self.raw[key.name])
        return value if ok else key.default

    def _section(self, section: schema.Section) -> object:
        """A dict of fixed keys (`hardware`, `hypothesis`, ...) as its frozen model; absent keys keep defaults."""
        known = {k.name: k for k in section.keys}
        values: dict[str, object] = {}
        for name, value in self._mapping(section.name).items():
            path = (section.name, name)
            if name not in known:
                owned = vocab.HYPOTHESIS_OWNED.get(name) if section.name == "hypothesis" else None
                if owned is not None:  # a real Hypothesis setting, but not one a manifest sets
                    self.log.error(path, f"is not a manifest setting: {owned}", allowed=allowed_list(list(known)))
                else:
                    self.log.unknown_key(path, section.what, list(known))
                continue
            ok, parsed = self._checked(path, known[name], value)
            if ok:
                values[known[name].attribute] = parsed
        return _SECTION_MODELS[section.name](**values)

    # -- top-level keys ---------------------------------------------------------------------------

    def _manifest_version(self) -> int:
        value = self.raw.get("manifest_version", vocab.MANIFEST_VERSION)
        if value != vocab.MANIFEST_VERSION or not is_int(value):
            self.log.error(("manifest_version",), "unsupported manifest version", value,
                           allowed=repr(vocab.MANIFEST_VERSION))
        return vocab.MANIFEST_VERSION

    def _dtype_claims(self) -> tuple[DtypeClaim, ...]:
        claims: dict[torch.dtype, DtypeClaim] = {}
        spelled: dict[torch.dtype, object] = {}
        for key, value in self._mapping("supported_dtypes").items():
            path = ("supported_dtypes", key_label(key))
            dtype = self._dtype(path, key)
            if dtype is None:
                continue
            if dtype in spelled:
                self.log.error(path, f"{dtypes.canonical_name(dtype)} is listed twice (also as {spelled[dtype]!r})")
                continue
            spelled[dtype] = key
            if isinstance(value, bool):
                claims[dtype] = DtypeClaim(dtype, value)
            elif isinstance(value, str):
                pattern = self._regex(path, value)
                if pattern is not None:
                    claims[dtype] = DtypeClaim(dtype, True, pattern)
            else:
                self.log.error(path, "must be True, False or a regex of op names", value)
        order = {d: i for i, d in enumerate(dtypes.CLAIMABLE_DTYPES)}
        return tuple(sorted(claims.values(), key=lambda c: order[c.dtype]))

    def _capabilities(self) -> frozenset[str]:
        """The claimed capabilities; ieee754's op-name regexes go to the `ieee754_op_patterns` field."""
        declared: set[str] = set()
        ieee_patterns: list[re.Pattern[str]] = []
        for name, value in self._mapping("capabilities").items():
            path = ("capabilities", name)
            if name in vocab.STALE_CAPABILITIES:
                replacements = vocab.STALE_CAPABILITIES[name]
                what = "renamed to" if len(replacements) == 1 else "split into"
                self.log.error(path, f"stale capability name; it was {what} "
                               + ", ".join(repr(r) for r in replacements),
                               hint=replacements[0] if len(replacements) == 1 else None)
                continue
            if name not in vocab.CAPABILITIES:
                self.log.unknown_key(path, "capability", list(vocab.CAPABILITIES))
                continue
            if name == "ieee754" and not isinstance(value, bool):
                ieee_patterns = self._ieee754_patterns(path, value)
                declared.add(name)
            elif self._bool(path, value):
                declared.add(name)
        self.fields["ieee754_op_patterns"] = tuple(ieee_patterns)
        return frozenset(declared)

    def _ieee754_patterns(self, path: KeyPath, value: object) -> list[re.Pattern[str]]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)) or not value:
            self.log.error(path, "must be a bool, an op-name regex or a non-empty list of regexes", value)
            return []
        patterns = [self._regex(path + (i,), item) for i, item in enumerate(value)]
        return [p for p in patterns if p is not None]

    def _skip_ops(self) -> dict[str, str]:
        value = self.raw.get("skip_ops", [])
        if isinstance(value, Mapping):
            items = list(value.items())
        elif isinstance(value, (list, tuple)):
            items = [(name, "listed in skip_ops") for name in value]
        else:
            self.log.error(("skip_ops",), "must be a list of op names or a dict op name -> reason", value)
            return {}
        skipped: dict[str, str] = {}
        for index, (name, reason) in enumerate(items):
            path = ("skip_ops", name if isinstance(value, Mapping) else index)
            if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX_CHARS:
                self.log.error(path, f"op name must be a non-empty string of at most {NAME_MAX_CHARS} characters", name)
            elif not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_MAX_CHARS:
                self.log.error(path, f"reason must be a non-empty string of at most {REASON_MAX_CHARS} characters",
                               reason)
            elif name in skipped:
                self.log.warn(path, "op listed twice", name)
            else:
                skipped[name] = reason
        return skipped

    def _tolerance_overrides(self) -> dict[tuple[str, str], Tolerance]:
        overrides: dict[tuple[str, str], Tolerance] = {}
        for key, value in self._mapping("tolerance_overrides").items():
            path = ("tolerance_overrides", key_label(key))
            target = self._tolerance_key(path, key)
            tolerance = self._tolerance_value(path, value)
            if target is None or tolerance is None:
                continue
            if target in overrides:
                self.log.error(path, f"duplicate override for {target[0]}:{target[1]}")
                continue
            overrides[target] = tolerance
        return overrides

    def _tolerance_key(self, path: KeyPath, key: object) -> tuple[str, str] | None:
        if isinstance(key, tuple) and len(key) == 2:
            category, dtype_key = key
        elif isinstance(key, str) and re.search(r"[:/]", key.removeprefix("torch.")):
            category, dtype_key = re.split(r"[:/]", key, maxsplit=1)
        elif isinstance(key, (str, torch.dtype)):
            category, dtype_key = "default", key
        else:
            self.log.error(path, "key must be 'category:dtype', (category, dtype) or a dtype", key)
            return None
        ok = True
        if category in vocab.REFUSED_TOLERANCE_CATEGORIES:
            self.log.error(path, f"category {category!r} takes no tolerance: "
                                 f"{vocab.REFUSED_TOLERANCE_CATEGORIES[category]}",
                           allowed=allowed_list(vocab.TOLERANCE_CATEGORIES, 20))
            ok = False
        elif category not in vocab.TOLERANCE_CATEGORIES:
            self.log.error(path, "unknown tolerance category", category,
                           allowed=allowed_list(vocab.TOLERANCE_CATEGORIES, 20),
                           hint=suggest(category, vocab.TOLERANCE_CATEGORIES))
            ok = False
        dtype = self._dtype(path, dtype_key)
        return (category, dtypes.canonical_name(dtype)) if ok and dtype is not None else None

    def _tolerance_value(self, path: KeyPath, value: object) -> Tolerance | None:
        if isinstance(value, (list, tuple)) and len(value) == 2:
            value = {"rtol": value[0], "atol": value[1]}
        if not isinstance(value, Mapping) or not value:
            self.log.error(path, "must be a dict with 'atol' and/or 'rtol'", value,
                           allowed="{'atol': 1e-3, 'rtol': 1e-3} or (rtol, atol)")
            return None
        parsed: dict[str, float] = {}
        for name, number in value.items():
            if name not in vocab.TOLERANCE_KEYS:
                self.log.unknown_key(path + (name,), "tolerance key", vocab.TOLERANCE_KEYS)
            elif not is_number(number):
                self.log.error(path + (name,), "must be a finite number", number)
            elif number < 0:
                self.log.error(path + (name,), "must not be negative", number)
            else:
                parsed[name] = float(number)
        return Tolerance(**parsed) if len(parsed) == len(value) else None

    def _container_formats(self) -> frozenset[str]:
        value = self.raw.get("supported_container_formats", {})
        if isinstance(value, (list, tuple)):
            value = {name: True for name in value}
        if not isinstance(value, Mapping):
            self.log.error(("supported_container_formats",), "must be a dict format -> bool or a list of formats",
                           value)
            return frozenset()
        supported = set()
        for name, flag in value.items():
            path = ("supported_container_formats", name)
            if name not in vocab.CONTAINER_FORMATS:
                self.log.unknown_key(path, "quantized container format", vocab.CONTAINER_FORMATS)
            elif self._bool(path, flag):
                supported.add(name)
        return frozenset(supported)

    def _decoders(self) -> dict[str, str]:
        formats = self.fields["container_formats"]  # parsed before: the schema lists it first
        decoders: dict[str, str] = {}
        for name, target in self._mapping("custom_container_decoders").items():
            path = ("custom_container_decoders", name)
            if name not in vocab.CONTAINER_FORMATS:
                self.log.unknown_key(path, "quantized container format", vocab.CONTAINER_FORMATS)
            elif not name_like(target, DECODER_PATH):
                self.log.error(path, "decoder must be a 'module:function' path", target,
                               allowed="e.g. 'my_backend.quant:decode_nf4'")
            elif name not in formats:
                self.log.error(path, f"has a decoder but supported_container_formats does not claim {name!r}")
            else:
                decoders[name] = target
        return decoders

    def _autocast_policy(self) -> dict[str, str]:
        policy: dict[str, str] = {}
        for name, value in self._mapping("autocast_policy").items():
            path = ("autocast_policy", name)
            if name not in vocab.AUTOCAST_OPS:
                self.log.unknown_key(path, "op of the autocast suite", list(vocab.AUTOCAST_OPS))
            elif not isinstance(value, str) or value not in vocab.AUTOCAST_CLASSES:
                self.log.error(path, "must name an autocast class", value,
                               allowed=", ".join(repr(c) for c in vocab.AUTOCAST_CLASSES))
            else:
                policy[name] = value
        return policy

    def _custom_test_dirs(self) -> tuple[Path, ...]:
        value = self.raw.get("custom_test_dirs", [])
        if not isinstance(value, (list, tuple)):
            self.log.error(("custom_test_dirs",), "must be a list of folder paths", value)
            return ()
        folders = []
        for index, entry in enumerate(value):
            path = ("custom_test_dirs", index)
            if not isinstance(entry, str) or not entry.strip():
                self.log.error(path, "must be a non-empty path string", entry)
                continue
            try:
                folder = (self.base_dir / entry).resolve()
                found = folder.is_dir()
            except (OSError, ValueError) as exc:  # a name too long, a null byte
                self.log.error(path, f"not a usable folder path ({type(exc).__name__}: {exception_text(exc, 80)})",
                               entry)
                continue
            if not found:
                shown = str(folder) if len(str(folder)) <= 300 else str(folder)[:297] + "..."
                self.log.warn(path, f"folder not found: {shown}; it will not be collected", entry)
            folders.append(folder)
        return tuple(folders)
