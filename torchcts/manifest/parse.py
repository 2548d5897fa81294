"""Validate a raw manifest dict and build the frozen `Manifest` from it.

Every key is checked for type and range; every problem is collected with its key path, the bad
value, what is allowed and, where one fits, the nearest valid name. Claims that cannot all be
tested (a capability whose prerequisites are not claimed) are warnings.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Mapping, Sequence

import torch

from torchcts import dtypes
from torchcts.manifest import vocabulary as vocab
from torchcts.manifest.model import (
    DtypeClaim,
    Hardware,
    HypothesisSettings,
    Manifest,
    ResourceLimits,
    Tolerance,
)
from torchcts.manifest.plain import exception_text, to_plain, value_type
from torchcts.manifest.problems import KeyPath, ManifestError, Problem, ProblemLog, allowed_list, suggest

# Names people reach for that are not manifest keys, with the key they meant.
_KEY_ALIASES = {
    "dtypes": "supported_dtypes",
    "level": "semantic_level",
    "device": "device_name",
    "device_type": "device_name",
    "skip": "skip_ops",
    "tolerances": "tolerance_overrides",
    "version": "manifest_version",
    "container_formats": "supported_container_formats",
}

_DEVICE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(:[0-9]+)?")
_MODULE_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_DECODER_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
INT_MAX = 2**63 - 1  # every integer setting fits int64 (seeds, counts) and prints in JSON
MAX_EXAMPLES = 1_000_000  # as `--max-examples` allows: more examples per item is a typo, not a plan
DEADLINE_MAX_MS = 86_400_000.0  # one day; Hypothesis cannot represent much longer deadlines
REGEX_MAX_CHARS = 100_000  # every OpInfo name spelt out takes ~10,000; compiling 1 MB takes seconds
NAME_MAX_CHARS = 200  # device, module and decoder names; longer is a mistake (and would flood the summary)
REASON_MAX_CHARS = 2000  # a skip reason is copied into every record of the op
_NON_CLAIMABLE_REASON = (
    "bit-packed, sub-byte and quantized dtypes cannot be claimed here; quantized tensors are "
    "claimed with the native_quantization capability and supported_container_formats"
)


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


def _name_like(value: object, form: re.Pattern[str]) -> bool:
    return isinstance(value, str) and len(value) <= NAME_MAX_CHARS and form.fullmatch(value) is not None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    """A finite int or float (an int too large for a float, like 10**400, is not)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


class _Fields:
    """Parses each top-level key in turn into the keyword arguments of `Manifest`."""

    def __init__(self, raw: Mapping, log: ProblemLog, base_dir: Path):
        self.raw = raw
        self.log = log
        self.base_dir = base_dir

    def parse(self) -> dict[str, object]:
        for key in self.raw:
            if key not in vocab.TOP_LEVEL_KEYS:
                choices = list(vocab.TOP_LEVEL_KEYS)
                hint = _KEY_ALIASES.get(key) if isinstance(key, str) else None
                self.log.error((key,), "unknown top-level key", allowed=allowed_list(choices, limit=30),
                               hint=hint or suggest(key, choices))
        for key in vocab.REQUIRED_KEYS:
            if key not in self.raw:
                self.log.error((key,), "missing required key", allowed=vocab.TOP_LEVEL_KEYS[key])
        fields: dict[str, object] = {
            "manifest_version": self._manifest_version(),
            "device_name": self._device_name(),
            "backend_import": self._backend_import(),
            "dtype_claims": self._dtype_claims(),
            "device_count": self._int("device_count", default=1, minimum=1),
            "semantic_level": self._semantic_level(),
            "max_samples": self._int("max_samples", default=10, minimum=0),
            "max_samples_ieee754": self._int("max_samples_ieee754", default=3, minimum=0),
            "ieee754_seed": self._int("ieee754_seed", default=67, minimum=0),
            "hardware": self._hardware(),
            "resource_limits": self._resource_limits(),
            "skip_ops": self._skip_ops(),
            "tolerance_overrides": self._tolerance_overrides(),
            "container_formats": self._container_formats(),
            "custom_test_dirs": self._custom_test_dirs(),
            "show_traceback": self._bool(("show_traceback",), self.raw.get("show_traceback", False)),
            "hypothesis": self._hypothesis(),
        }
        fields["capabilities"], fields["ieee754_op_patterns"] = self._capabilities()
        fields["custom_container_decoders"] = self._decoders(fields["container_formats"])
        if not self.log.has_errors:
            _cross_checks(fields, self.log)
        return fields

    # -- scalar helpers ---------------------------------------------------------------------------

    def _bool(self, path: KeyPath, value: object) -> bool:
        if not isinstance(value, bool):
            self.log.error(path, "must be a bool", value, allowed="True or False")
            return False
        return value

    def _int(self, key: str, default: int, minimum: int) -> int:
        value = self.raw.get(key, default)
        if not _is_int(value) or not minimum <= value <= INT_MAX:
            self.log.error((key,), f"must be an integer >= {minimum} (at most 2**63-1)", value,
                           allowed=vocab.TOP_LEVEL_KEYS[key])
            return default
        return value

    def _mapping(self, key: str) -> Mapping:
        value = self.raw.get(key, {})
        if not isinstance(value, Mapping):
            self.log.error((key,), "must be a dict", value, allowed=vocab.TOP_LEVEL_KEYS[key])
            return {}
        return value

    def _regex(self, path: KeyPath, value: object) -> re.Pattern[str] | None:
        if not isinstance(value, str):
            self.log.error(path, "must be a regex string", value)
            return None
        if not value:
            self.log.error(path, "empty regex; use True to claim every op", value)
            return None
        if len(value) > REGEX_MAX_CHARS:
            self.log.error(path, f"regex longer than {REGEX_MAX_CHARS:,} characters", value)
            return None
        try:
            return re.compile(value)
        except re.error as exc:
            self.log.error(path, f"invalid regex: {exc}", value)
        except (RecursionError, MemoryError, OverflowError) as exc:
            self.log.error(path, f"regex too deeply nested to compile ({type(exc).__name__})", value)
        return None

    def _dtype(self, path: KeyPath, key: object) -> torch.dtype | None:
        """The claimable dtype a key names, or None after logging why it is not one."""
        dtype = dtypes.lookup(key)
        if dtype is None:
            spelling = key.removeprefix("torch.") if isinstance(key, str) else None
            self.log.error(path, "unsupported dtype", key, allowed=allowed_list(dtypes.claimable_names(), 8),
                           hint=suggest(spelling, dtypes.spellings()))
            return None
        if dtype not in dtypes.CLAIMABLE_DTYPES:
            self.log.error(path, f"dtype {dtypes.canonical_name(dtype)} cannot be claimed: {_NON_CLAIMABLE_REASON}")
            return None
        return dtype

    # -- top-level keys ---------------------------------------------------------------------------

    def _manifest_version(self) -> int:
        value = self.raw.get("manifest_version", vocab.MANIFEST_VERSION)
        if value != vocab.MANIFEST_VERSION or not _is_int(value):
            self.log.error(("manifest_version",), "unsupported manifest version", value,
                           allowed=repr(vocab.MANIFEST_VERSION))
        return vocab.MANIFEST_VERSION

    def _device_name(self) -> str:
        value = self.raw.get("device_name", "auto")
        if not _name_like(value, _DEVICE_NAME):
            self.log.error(("device_name",), "must be a device type name", value,
                           allowed="'auto' or a device type such as 'cuda', 'mps', 'privateuseone', 'cuda:1'")
            return "auto"
        return value

    def _backend_import(self) -> str | None:
        value = self.raw.get("backend_import")
        if value is None:
            return None
        if not _name_like(value, _MODULE_PATH):
            self.log.error(("backend_import",), "must be None or a dotted module name", value,
                           allowed="e.g. 'torch_mydevice' or 'vendor.torch_backend'")
            return None
        return value

    def _semantic_level(self) -> int:
        value = self.raw.get("semantic_level", 3)
        if not _is_int(value) or not 1 <= value <= 8:
            self.log.error(("semantic_level",), "must be an integer from 1 to 8", value, allowed="1..8")
            return 3
        return value

    def _dtype_claims(self) -> tuple[DtypeClaim, ...]:
        claims: dict[torch.dtype, DtypeClaim] = {}
        spelled: dict[torch.dtype, object] = {}
        for key, value in self._mapping("supported_dtypes").items():
            path = ("supported_dtypes", _key_label(key))
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

    def _capabilities(self) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
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
        return frozenset(declared), tuple(ieee_patterns)

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
            path = ("tolerance_overrides", _key_label(key))
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
        if category not in vocab.TOLERANCE_CATEGORIES:
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
            elif not _is_number(number):
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

    def _decoders(self, formats: frozenset[str]) -> dict[str, str]:
        decoders: dict[str, str] = {}
        for name, target in self._mapping("custom_container_decoders").items():
            path = ("custom_container_decoders", name)
            if name not in vocab.CONTAINER_FORMATS:
                self.log.unknown_key(path, "quantized container format", vocab.CONTAINER_FORMATS)
            elif not _name_like(target, _DECODER_PATH):
                self.log.error(path, "decoder must be a 'module:function' path", target,
                               allowed="e.g. 'my_backend.quant:decode_nf4'")
            elif name not in formats:
                self.log.error(path, f"has a decoder but supported_container_formats does not claim {name!r}")
            else:
                decoders[name] = target
        return decoders

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

    def _hardware(self) -> Hardware:
        section = self._mapping("hardware")
        values: dict[str, object] = {}
        for name, value in section.items():
            path = ("hardware", name)
            if name not in vocab.HARDWARE_KEYS:
                self.log.unknown_key(path, "hardware key", list(vocab.HARDWARE_KEYS))
            elif name == "memory_model":
                if value in vocab.MEMORY_MODELS:
                    values[name] = value
                else:
                    self.log.error(path, "unknown memory model", value, allowed=allowed_list(vocab.MEMORY_MODELS),
                                   hint=suggest(value, vocab.MEMORY_MODELS))
            elif name == "oom_recoverable":
                values[name] = self._bool(path, value)
            elif value == "auto":
                values[name] = None
            elif name == "device_memory_gb" and isinstance(value, (list, tuple)) and value \
                    and all(_is_number(v) and v > 0 for v in value):
                values[name] = tuple(float(v) for v in value)
            elif name == "system_memory_gb" and _is_number(value) and value > 0:
                values[name] = float(value)
            else:
                self.log.error(path, "invalid value", value, allowed=vocab.HARDWARE_KEYS[name])
        return Hardware(**values)

    def _resource_limits(self) -> ResourceLimits:
        values: dict[str, object] = {}
        for name, value in self._mapping("resource_limits").items():
            path = ("resource_limits", name)
            if name not in vocab.RESOURCE_LIMIT_KEYS:
                self.log.unknown_key(path, "resource limit", list(vocab.RESOURCE_LIMIT_KEYS))
            elif name == "cleanup_threshold_pct":
                if _is_int(value) and 1 <= value <= 100:
                    values[name] = value
                else:
                    self.log.error(path, "must be an integer from 1 to 100", value)
            elif value is None or (_is_number(value) and value > 0):
                values[name] = None if value is None else float(value)
            else:
                self.log.error(path, "must be None or a positive number", value,
                               allowed=vocab.RESOURCE_LIMIT_KEYS[name])
        return ResourceLimits(**values)

    def _hypothesis(self) -> HypothesisSettings:
        values: dict[str, object] = {}
        for name, value in self._mapping("hypothesis").items():
            path = ("hypothesis", name)
            if name not in vocab.HYPOTHESIS_KEYS:
                self.log.unknown_key(path, "hypothesis setting", list(vocab.HYPOTHESIS_KEYS))
            elif name == "max_examples" and _is_int(value) and value > MAX_EXAMPLES:
                self.log.error(path, f"must be at most {MAX_EXAMPLES:,}", value)
            elif name == "seed" and _is_int(value) and value > INT_MAX:
                self.log.error(path, "must be at most 2**63-1", value)
            elif name == "deadline" and _is_number(value) and value > DEADLINE_MAX_MS:
                self.log.error(path, f"must be at most {DEADLINE_MAX_MS:.0f} ms (one day); None disables the deadline",
                               value)
            elif name == "max_examples" and _is_int(value) and 1 <= value <= MAX_EXAMPLES:
                values[name] = value
            elif name == "deadline" and (value is None or (_is_number(value) and 0 < value <= DEADLINE_MAX_MS)):
                values["deadline_ms"] = None if value is None else float(value)
            elif name == "derandomize" and isinstance(value, bool):
                values[name] = value
            elif name == "seed" and (value is None or (_is_int(value) and 0 <= value <= INT_MAX)):
                values[name] = value
            else:
                self.log.error(path, "invalid value", value, allowed=vocab.HYPOTHESIS_KEYS[name])
        return HypothesisSettings(**values)


def _key_label(key: object) -> object:
    """A dict key as it should appear in a key path (dtypes by name)."""
    return dtypes.canonical_name(key) if isinstance(key, torch.dtype) else key


def _cross_checks(fields: Mapping[str, object], log: ProblemLog) -> None:
    """Claims that contradict each other (errors) or that no test could exercise (warnings)."""
    caps: frozenset[str] = fields["capabilities"]
    claims: Sequence[DtypeClaim] = fields["dtype_claims"]
    claimed = {c.dtype for c in claims if c.claimed}
    decoders = fields["custom_container_decoders"]
    if "custom_quantized_decode" in caps and not decoders:
        log.error(("capabilities", "custom_quantized_decode"),
                  "is claimed but custom_container_decoders names no decoder")
    if decoders and "custom_quantized_decode" not in caps:
        log.warn(("custom_container_decoders",), "decoders are listed but custom_quantized_decode is not claimed; "
                 "they will not be tested")
    if fields["container_formats"] and "quantized_container_plumbing" not in caps:
        log.warn(("supported_container_formats",), "formats are listed but quantized_container_plumbing is not "
                 "claimed; they will not be tested")
    if "fp8" in caps and not claimed & set(dtypes.FLOAT8_DTYPES):
        log.warn(("capabilities", "fp8"), "is claimed but supported_dtypes claims no float8 dtype")
    for dependent in ("double_backward", "gradcheck", "gradient_checkpointing", "fused_optimizer"):
        if dependent in caps and "training" not in caps:
            log.warn(("capabilities", dependent), "is claimed without 'training'; its tests need autograd")
    if "training" in caps and not any(d.is_floating_point or d.is_complex for d in claimed):
        log.warn(("capabilities", "training"), "is claimed but no floating-point dtype is claimed")
    if "multi_device" in caps and fields["device_count"] < 2:
        log.warn(("capabilities", "multi_device"), "is claimed but device_count is below 2; it cannot be tested")
    memory = fields["hardware"].device_memory_gb
    if memory is not None and len(memory) != fields["device_count"]:
        log.warn(("hardware", "device_memory_gb"), f"lists {len(memory)} devices but device_count is "
                 f"{fields['device_count']}")
    settings: HypothesisSettings = fields["hypothesis"]
    if settings.derandomize and settings.seed is not None:
        log.warn(("hypothesis", "seed"), "is ignored when derandomize is True (seeds come from item ids)")
    if not claimed:
        log.warn(("supported_dtypes",), "claims no dtype; no op test will run")
