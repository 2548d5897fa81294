"""The manifest as frozen values: what a backend claims, in the form the rest of TorchCTS reads.

Built only by `torchcts.manifest.parse` from a validated dict; nothing else touches the raw dict.
Queries answer the planning questions: is this dtype claimed for this op, is this capability
declared, is this op excluded, which tolerance applies.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Mapping, Sequence

import attrs
import torch

from torchcts import dtypes
from torchcts.manifest import vocabulary
from torchcts.manifest.schema import default


class DtypeStatus(enum.Enum):
    """How a dtype stands for one op (the plan maps each non-claimed status to its accounting outcome)."""

    CLAIMED = "claimed"
    NOT_SUPPORTED = "not_supported"
    REGEX_FILTERED = "regex_filtered"
    NOT_LISTED = "not_listed"


@attrs.frozen
class DtypeClaim:
    """One `supported_dtypes` entry: claimed for every op, for none, or for ops matching a regex."""

    dtype: torch.dtype
    claimed: bool
    op_pattern: re.Pattern[str] | None = None

    @property
    def name(self) -> str:
        return dtypes.canonical_name(self.dtype)

    def status_for(self, op_name: str | None) -> DtypeStatus:
        if not self.claimed:
            return DtypeStatus.NOT_SUPPORTED
        if self.op_pattern is None:
            return DtypeStatus.CLAIMED
        if op_name is not None and self.op_pattern.search(op_name):
            return DtypeStatus.CLAIMED
        return DtypeStatus.REGEX_FILTERED

    def as_json(self) -> object:
        return self.op_pattern.pattern if self.op_pattern is not None else self.claimed


@attrs.frozen
class Tolerance:
    """An absolute and relative tolerance; None leaves the default of the tolerance model."""

    atol: float | None = None
    rtol: float | None = None


@attrs.frozen
class Hardware:
    memory_model: str = default("hardware.memory_model")
    device_memory_gb: tuple[float, ...] | None = default("hardware.device_memory_gb")  # None: detect at run time
    system_memory_gb: float | None = default("hardware.system_memory_gb")  # None: detect at run time ("auto")
    oom_recoverable: bool = default("hardware.oom_recoverable")


@attrs.frozen
class ResourceLimits:
    max_device_memory_mb: float | None = default("resource_limits.max_device_memory_mb")
    max_system_memory_mb: float | None = default("resource_limits.max_system_memory_mb")
    max_tensor_size_mb: float | None = default("resource_limits.max_tensor_size_mb")
    cleanup_threshold_pct: int = default("resource_limits.cleanup_threshold_pct")


@attrs.frozen
class HypothesisSettings:
    max_examples: int = default("hypothesis.max_examples")
    deadline_ms: float | None = default("hypothesis.deadline")
    derandomize: bool = default("hypothesis.derandomize")
    seed: int | None = default("hypothesis.seed")  # the run's seed when neither --seed nor --derandomize is given
    verbosity: str = default("hypothesis.verbosity")
    print_blob: bool = default("hypothesis.print_blob")
    suppress_health_check: tuple[str, ...] = default("hypothesis.suppress_health_check")

    def as_json(self) -> dict[str, object]:
        """The settings as plain JSON. Keys added after the first four are left out at their defaults,
        so the fingerprint of a manifest that does not use them stays what it was."""
        values: dict[str, object] = {"max_examples": self.max_examples, "deadline_ms": self.deadline_ms,
                                     "derandomize": self.derandomize, "seed": self.seed}
        for name in ("verbosity", "print_blob", "suppress_health_check"):
            value = getattr(self, name)
            if value != default(f"hypothesis.{name}"):
                values[name] = list(value) if isinstance(value, tuple) else value
        return values


@attrs.frozen
class CompileSettings:
    """The manifest's `compile` section: the torch.compile target (`engine.compile_target.CompileSpec` is built from
    it, with --compile and --shape-mode over it)."""

    backend: str | None = default("compile.backend")
    dynamic: bool | None = default("compile.dynamic")
    mode: str | None = default("compile.mode")
    options: tuple[tuple[str, object], ...] = default("compile.options")  # sorted (name, value) pairs
    fullgraph: bool = default("compile.fullgraph")

    @property
    def shape_mode(self) -> str:
        return {False: "static", True: "dynamic", None: "automatic"}[self.dynamic]

    def as_json(self) -> dict[str, object]:
        return {"backend": self.backend, "dynamic": self.dynamic, "mode": self.mode, "options": dict(self.options),
                "fullgraph": self.fullgraph}


@attrs.frozen
class Manifest:
    """Everything a manifest claims, normalised (canonical dtype names, defaults filled in).

    Defaults come from `torchcts.manifest.schema`, which also says what reads each key."""

    source: Path | None
    manifest_version: int
    device_name: str
    dtype_claims: tuple[DtypeClaim, ...]
    capabilities: frozenset[str]
    ieee754_op_patterns: tuple[re.Pattern[str], ...] = ()
    backend_import: str | None = default("backend_import")
    device_count: int = default("device_count")
    semantic_level: int = default("semantic_level")
    max_samples: int = default("max_samples")
    hardware: Hardware = Hardware()
    resource_limits: ResourceLimits = ResourceLimits()
    skip_ops: Mapping[str, str] = attrs.field(factory=dict)
    tolerance_overrides: Mapping[tuple[str, str], Tolerance] = attrs.field(factory=dict)
    container_formats: frozenset[str] = frozenset()
    custom_container_decoders: Mapping[str, str] = attrs.field(factory=dict)
    autocast_policy: Mapping[str, str] = attrs.field(factory=dict)  # op -> class, where it differs from the default
    custom_test_dirs: tuple[Path, ...] = ()  # resolved folders (relative entries against the manifest's folder)
    show_traceback: bool = default("show_traceback")
    hypothesis: HypothesisSettings = HypothesisSettings()
    compile: CompileSettings = CompileSettings()

    # -- planning queries -------------------------------------------------------------------------

    def claim_for(self, dtype: torch.dtype) -> DtypeClaim | None:
        return next((c for c in self.dtype_claims if c.dtype == dtype), None)

    def dtype_status(self, dtype: torch.dtype, op_name: str | None = None) -> DtypeStatus:
        """Whether `dtype` is claimed for `op_name` (an OpInfo name), or the reason it is not."""
        claim = self.claim_for(dtype)
        return DtypeStatus.NOT_LISTED if claim is None else claim.status_for(op_name)

    @property
    def claimed_dtypes(self) -> tuple[torch.dtype, ...]:
        """Dtypes claimed for at least some ops."""
        return tuple(c.dtype for c in self.dtype_claims if c.claimed)

    def declares(self, capability: str) -> bool:
        return capability in self.capabilities

    def ieee754_claimed_for(self, op_name: str) -> bool:
        """IEEE-754 special-value claims: all ops, or the ops matching the ieee754 regexes."""
        if "ieee754" not in self.capabilities:
            return False
        return not self.ieee754_op_patterns or any(p.search(op_name) for p in self.ieee754_op_patterns)

    def autocast_class(self, op_name: str, device_type: str) -> str:
        """What torch.autocast on `device_type` does to an op of the autocast suite (vocabulary.AUTOCAST_OPS): the
        manifest's `autocast_policy` entry, else torch's published policy (CPU's on CPU, CUDA's elsewhere)."""
        cuda, cpu = vocabulary.AUTOCAST_OPS[op_name]
        return self.autocast_policy.get(op_name, cpu if device_type == "cpu" else cuda)

    def skip_reason(self, op_name: str) -> str | None:
        return self.skip_ops.get(op_name)

    def tolerance_override(self, categories: str | Sequence[str], dtype: torch.dtype) -> Tolerance | None:
        """The manifest's tolerance for a comparison in `dtype` whose categories are `categories` (most specific
        first), or None where none is overridden. Field by field, a more specific category wins: `default`, then
        each category from the last named to the first (`backward:float32 {"atol": 1e-3}` over
        `float32 {"rtol": 1e-2}` gives both)."""
        name = dtypes.canonical_name(dtype)
        named = (categories,) if isinstance(categories, str) else tuple(categories)
        found = [tol for category in ("default", *reversed(named))
                 if (tol := self.tolerance_overrides.get((category, name))) is not None]
        if not found:
            return None
        rtol = next((tol.rtol for tol in reversed(found) if tol.rtol is not None), None)
        atol = next((tol.atol for tol in reversed(found) if tol.atol is not None), None)
        return Tolerance(atol=atol, rtol=rtol)

    # -- identity ---------------------------------------------------------------------------------

    def as_json(self) -> dict[str, object]:
        """The normalised claims as plain JSON, in a fixed key order (no source path)."""
        return {
            "manifest_version": self.manifest_version,
            "device_name": self.device_name,
            "backend_import": self.backend_import,
            "supported_dtypes": {c.name: c.as_json() for c in self.dtype_claims},
            "device_count": self.device_count,
            "semantic_level": self.semantic_level,
            "max_samples": self.max_samples,
            "hardware": attrs.asdict(self.hardware),
            "resource_limits": attrs.asdict(self.resource_limits),
            "capabilities": sorted(self.capabilities),
            "ieee754_op_patterns": [p.pattern for p in self.ieee754_op_patterns],
            "skip_ops": dict(sorted(self.skip_ops.items())),
            "tolerance_overrides": {
                f"{cat}:{dt}": attrs.asdict(tol) for (cat, dt), tol in sorted(self.tolerance_overrides.items())
            },
            "supported_container_formats": sorted(self.container_formats),
            "custom_container_decoders": dict(sorted(self.custom_container_decoders.items())),
            "custom_test_dirs": [self._relative(p) for p in self.custom_test_dirs],
            **({"autocast_policy": dict(sorted(self.autocast_policy.items()))} if self.autocast_policy else {}),
            "show_traceback": self.show_traceback,
            "hypothesis": self.hypothesis.as_json(),
            # left out at its default, so the fingerprint of a manifest without it stays what it was
            **({"compile": self.compile.as_json()} if self.compile != CompileSettings() else {}),
        }

    def _relative(self, folder: Path) -> str:
        """A folder relative to the manifest, so the fingerprint does not depend on the checkout path."""
        if self.source is None:
            return str(folder)
        return os.path.relpath(folder, self.source.parent)

    def fingerprint(self) -> str:
        """sha256 of the normalised claims: equal for manifests that claim the same things."""
        canonical = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()
