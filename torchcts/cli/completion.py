"""Shell completion of the names options take: --property, --dtype, --capability and --template values.

click completes commands and options itself (`_TORCHCTS_COMPLETE=bash_source torchcts`, README
"Shell completion"); this module adds the values (--capability and --template through
`options.LazyChoice(complete=...)`). A completion runs on every Tab press, so it must not import
torch, the op database or the property registry (seconds): the names are static lists here, and
tests/cli/test_completion.py checks each against its source (the registry, `torchcts.dtypes`,
`torchcts.manifest.vocabulary`, the templates). Properties of a manifest's `custom_test_dirs` are
not completed (they need the manifest loaded); they are still accepted.
"""

from __future__ import annotations

from typing import Iterable

import click
from click.shell_completion import CompletionItem

# registry.names() of the installed suites (by level, then name)
PROPERTY_NAMES: tuple[str, ...] = (
    "forward", "copies", "errors", "layout", "deterministic", "device_generator", "dtype_semantics", "foreach",
    "foreach_floating", "foreach_optimizer", "fused_optimizer", "ieee754", "inplace", "out", "rng", "serialization",
    "training", "views", "autocast", "backward", "channels_last", "dataloader", "dispatch", "double_backward", "fp8",
    "fp8_scaled_mm", "gradcheck", "gradient_checkpointing", "module_hooks", "nested", "sparse", "rng_distributions",
    "compile_modules", "device_api", "events", "guard_alloc", "native_quantization", "pinned_memory",
    "quantized_containers", "quantized_decoders", "quantized_unpack", "streams", "multi_device", "stress")

# torchcts.dtypes.claimable_names() on the supported torch (the dtypes a --dtype may name)
DTYPE_NAMES: tuple[str, ...] = (
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16",
    "float32", "float64", "complex32", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
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
TEMPLATE_NAMES: tuple[str, ...] = ("smoke", "minimal", "inference", "training", "complete")


def _starting_with(names: Iterable[str], incomplete: str, prefix: str = "") -> list[CompletionItem]:
    return [CompletionItem(prefix + name) for name in names if name.startswith(incomplete)]


def complete_properties(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """--property: the installed suites' property names."""
    return _starting_with(PROPERTY_NAMES, incomplete)


def complete_dtypes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """--dtype: dtype names (after `torch.` too), and the last name of a comma list (`float32,bf`)."""
    head, comma, last = incomplete.rpartition(",")
    prefix = head + comma
    if last.startswith("torch."):
        return _starting_with((f"torch.{name}" for name in DTYPE_NAMES), last, prefix)
    return _starting_with(DTYPE_NAMES, last, prefix)
