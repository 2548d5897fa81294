"""The names a Tab completes (`torchcts.cli.completion`): written by scripts/generate_registry_listings.py from
their sources (`torchcts.cli.completion_listing`); do not edit. tests/cli/test_completion.py fails when stale."""

from __future__ import annotations

# registry.names() of the installed suites (by level, then name)
PROPERTY_NAMES: tuple[str, ...] = (
    "forward", "copies", "errors", "layout", "deterministic", "device_generator", "dtype_semantics", "foreach",
    "foreach_floating", "foreach_optimizer", "fused_optimizer", "ieee754", "inplace", "out", "rng", "serialization",
    "training", "views", "autocast", "backward", "channels_last", "dataloader", "dispatch", "double_backward",
    "fp8", "fp8_scaled_mm", "gradcheck", "gradient_checkpointing", "module_hooks", "nested", "sparse",
    "rng_distributions", "compile_modules", "device_api", "events", "guard_alloc", "native_quantization",
    "pinned_memory", "quantized_containers", "quantized_decoders", "quantized_unpack", "streams", "multi_device",
    "stress",
)

# torchcts.dtypes.claimable_names() on the supported torch (what --dtype may name)
DTYPE_NAMES: tuple[str, ...] = (
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16",
    "float32", "float64", "complex32", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu",
)

# torchcts.manifest.vocabulary.CAPABILITIES, in its order
CAPABILITY_NAMES: tuple[str, ...] = (
    "inference", "training", "serialization", "compile", "rng", "device_generator", "rng_distributions",
    "double_backward", "gradcheck", "gradient_checkpointing", "autocast", "fused_optimizer", "dataloader",
    "module_hooks", "channels_last", "sparse", "nested", "foreach", "fp8", "quantized_container_plumbing",
    "native_quantization", "custom_quantized_decode", "pinned_memory", "streams", "events", "deterministic",
    "guard_alloc", "device_api", "multi_device", "ieee754",
)

# torchcts.manifest.template_names.TEMPLATE_NAMES (`init --template`)
TEMPLATE_NAMES: tuple[str, ...] = (
    "smoke", "minimal", "inference", "training", "complete",
)
