"""Reading one manifest value at its key path: a bool, a dict, an op-name regex, a claimable dtype, a value of a
schema kind. Each check returns the value's checked form, or logs the problem (the key path, the bad value, what
is allowed, the nearest valid name) and returns nothing: `torchcts.manifest.parse` builds every key on these."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

import torch

from torchcts import dtypes
from torchcts.manifest import schema
from torchcts.manifest.kinds import Invalid
from torchcts.manifest.problems import KeyPath, ProblemLog, allowed_list, suggest

REGEX_MAX_CHARS = 100_000  # every OpInfo name spelt out takes ~10,000; compiling 1 MB takes seconds
_NON_CLAIMABLE_REASON = (
    "bit-packed, sub-byte and quantized dtypes cannot be claimed here; quantized tensors are "
    "claimed with the native_quantization capability and supported_container_formats"
)


class ValueReader:
    """The raw manifest dict and its problem log, with the checks of single values every key's parser uses."""

    def __init__(self, raw: Mapping, log: ProblemLog, base_dir: Path):
        self.raw = raw
        self.log = log
        self.base_dir = base_dir

    def _bool(self, path: KeyPath, value: object) -> bool:
        if not isinstance(value, bool):
            self.log.error(path, "must be a bool", value, allowed="True or False")
            return False
        return value

    def _checked(self, path: KeyPath, key: schema.Key, value: object) -> tuple[bool, object]:
        """Whether `value` is what the key's kind accepts, and its normal form (logging why not)."""
        try:
            return True, key.kind.parse(value, key.allowed)
        except Invalid as invalid:
            self.log.error(path, invalid.message, value, allowed=invalid.allowed, hint=invalid.hint)
            return False, None

    def _mapping(self, key: str) -> Mapping:
        value = self.raw.get(key, {})
        if not isinstance(value, Mapping):
            self.log.error((key,), "must be a dict", value, allowed=schema.KEYS[key].allowed)
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


def key_label(key: object) -> object:
    """A dict key as it should appear in a key path (dtypes by name)."""
    return dtypes.canonical_name(key) if isinstance(key, torch.dtype) else key
