"""A short, readable account of what a manifest claims (the output of `check-manifest`)."""

from __future__ import annotations

from torchcts import dtypes
from torchcts.manifest import vocabulary as vocab
from torchcts.manifest.model import Manifest


def summary_lines(manifest: Manifest) -> list[str]:
    """What the manifest claims, one fact per line."""
    everywhere = [c.name for c in manifest.dtype_claims if c.claimed and c.op_pattern is None]
    scoped = [f"{c.name} (ops matching {_shortened(c.op_pattern.pattern)!r})" for c in manifest.dtype_claims if c.op_pattern]
    refused = [c.name for c in manifest.dtype_claims if not c.claimed]
    listed = {c.dtype for c in manifest.dtype_claims}
    unlisted = [dtypes.canonical_name(d) for d in dtypes.CLAIMABLE_DTYPES if d not in listed]
    claimed_caps = [c for c in vocab.CAPABILITIES if manifest.declares(c)]
    unclaimed_caps = [c for c in vocab.CAPABILITIES if not manifest.declares(c)]
    settings = manifest.hypothesis
    deadline = "none" if settings.deadline_ms is None else f"{settings.deadline_ms:g} ms"
    lines = [
        f"device: {manifest.device_name}, backend_import: {manifest.backend_import or 'none'}, "
        f"device_count: {manifest.device_count}",
        f"semantic level: {manifest.semantic_level} ({vocab.SEMANTIC_LEVELS[manifest.semantic_level]})",
        f"dtypes claimed for every op ({len(everywhere)}): {_join(everywhere)}",
    ]
    if scoped:
        lines.append(f"dtypes claimed for some ops ({len(scoped)}): {_join(scoped)}")
    lines += [
        f"dtypes not supported ({len(refused)}): {_join(refused)}",
        f"dtypes not listed ({len(unlisted)}): {_join(unlisted)}",
        f"capabilities claimed ({len(claimed_caps)}/{len(vocab.CAPABILITIES)}): {_join(claimed_caps)}",
        f"capabilities not claimed ({len(unclaimed_caps)}): {_join(unclaimed_caps)}",
        f"skip_ops: {len(manifest.skip_ops)}, tolerance overrides: {len(manifest.tolerance_overrides)}, "
        f"container formats: {len(manifest.container_formats)}, custom test dirs: {len(manifest.custom_test_dirs)}",
        f"samples per item: {manifest.max_samples or 'no cap'}, "
        f"show_traceback: {'on' if manifest.show_traceback else 'off'}",
        f"hypothesis: max_examples {settings.max_examples}, deadline {deadline}, "
        f"derandomize {'on' if settings.derandomize else 'off'}, seed {settings.seed if settings.seed is not None else 'none'}"
        + "".join(f", {name} {value}" for name, value in settings.as_json().items()
                  if name in ("verbosity", "print_blob", "suppress_health_check")),
        f"fingerprint: {manifest.fingerprint()[:16]}",
    ]
    return lines


def _join(names: list[str]) -> str:
    return ", ".join(names) if names else "-"


def _shortened(pattern: str, limit: int = 200) -> str:
    """A claim regex cut for display (the manifest may hold one of up to 100,000 characters)."""
    return pattern if len(pattern) <= limit else f"{pattern[:limit]}... ({len(pattern)} characters)"
