"""Cross-checks of a parsed manifest: claims that contradict each other, or that no test could exercise.

Run after every key parsed without error; contradictions are errors, untestable claims warnings
(errors under `check-manifest --strict`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from torchcts import dtypes
from torchcts.manifest.model import DtypeClaim, HypothesisSettings
from torchcts.manifest.problems import ProblemLog


def cross_check(fields: Mapping[str, object], log: ProblemLog) -> None:
    """Claims that contradict each other (errors) or that no test could exercise (warnings)."""
    caps: frozenset[str] = fields["capabilities"]
    compile_settings = fields.get("compile")
    if compile_settings is not None and compile_settings.mode is not None and compile_settings.options:
        log.error(("compile", "options"), "torch.compile takes mode or options, not both",
                  allowed="mode None with options, or options {} with a mode")
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
