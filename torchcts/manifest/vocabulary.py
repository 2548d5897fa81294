"""The words a manifest may use as names: capabilities, container formats, tolerance categories.

One table per vocabulary, each entry with a one-line meaning; validation, `check-manifest`,
the templates' tests and docs/manifest.md all read from here. The keys themselves, with their
types, defaults and effects, are in `torchcts.manifest.schema`.
"""

from __future__ import annotations

MANIFEST_VERSION = 1

SEMANTIC_LEVELS: dict[int, str] = {
    1: "core primitive behaviour",
    2: "normal correctness on common surfaces",
    3: "mainstream semantics: mutation, aliasing, RNG, metadata, generated variants",
    4: "broad production behaviour: training and autograd-adjacent, channels_last, sparse, nested, autocast, fp8",
    5: "advanced numerics: the distributions of random ops",
    6: "specialised backend integration: compiler, device API, allocator, quantization",
    7: "heavy workloads and multi-device",
    8: "release-depth stress and adversarial inputs",
}

CAPABILITIES: dict[str, str] = {
    "inference": "forward ops produce the CPU oracle's results",
    "training": "autograd: gradients match the CPU oracle's",
    "serialization": "torch.save / torch.load round-trip device tensors",
    "compile": "torch.compile runs on the device and matches eager",
    "rng": "random ops run and honour manual_seed",
    "device_generator": "torch.Generator(device=...) exists and is reproducible",
    "rng_distributions": "random distributions have the right statistics",
    "double_backward": "second-order gradients",
    "gradcheck": "numerical gradient checks in float64",
    "gradient_checkpointing": "torch.utils.checkpoint recomputes correctly",
    "autocast": "torch.autocast on the device type",
    "fused_optimizer": "fused optimizer kernels (fused=True)",
    "dataloader": "DataLoader feeding the device, pin/transfer paths",
    "module_hooks": "nn.Module forward/backward hooks",
    "channels_last": "channels_last and channels_last_3d memory formats",
    "sparse": "sparse layouts: COO, CSR, CSC, BSR, BSC",
    "nested": "nested (jagged and strided) tensors",
    "foreach": "torch._foreach_* multi-tensor ops",
    "fp8": "float8 dtypes and scaled matmul",
    "quantized_container_plumbing": "packed quantized containers move and copy intact",
    "native_quantization": "torch quantized dtypes and quantized ops",
    "custom_quantized_decode": "backend-provided decoders for packed quantized formats",
    "pinned_memory": "pinned host memory and non_blocking copies",
    "streams": "device streams",
    "events": "device events and timing",
    "deterministic": "torch.use_deterministic_algorithms is honoured",
    "guard_alloc": "allocator guards: out-of-memory is raised, not a crash",
    "device_api": "torch.<device> module API: device_count, synchronize, memory stats",
    "multi_device": "tensors and copies across two or more devices",
    "ieee754": "IEEE-754 special values (NaN, inf, -0.0, subnormals) propagate as on CPU",
}

# Capability names from earlier manifest versions, with what replaced them.
STALE_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "generator": ("device_generator",),
    "quantized": ("quantized_container_plumbing", "native_quantization", "custom_quantized_decode"),
}

# Packed quantized container formats a backend may declare (supported_container_formats); each is defined, with its
# byte layout, in torchcts.containers.formats (docs/quantized.md).
CONTAINER_FORMATS: tuple[str, ...] = (
    "int2_ternary",
    "int4_symmetric",
    "int4_symmetric_msb_first",
    "int4_asymmetric",
    "int4_asymmetric_msb_first",
    "uint4",
    "uint4_msb_first",
    "nf4",
    "fp4_e2m1",
    "fp4_bnb",
    "af4",
    "mxfp4",
    "nvfp4",
    "fp6_e3m2",
    "fp6_e2m3",
    "mxfp6_e3m2",
    "mxfp6_e2m3",
    "fp8_e4m3fn",
    "fp8_e5m2",
    "fp8_e4m3fnuz",
    "fp8_e5m2fnuz",
    "int8_symmetric",
    "int8_asymmetric",
    "uint8",
    "e8m0fnu",
    "mxfp8_e4m3",
    "mxfp8_e5m2",
    "mxint8",
)

# What torch.autocast does to an op (the `autocast_policy` key): cast its floating inputs (not float64) to the
# autocast dtype, or to float32, or to the widest floating dtype among them; or leave them alone.
AUTOCAST_CLASSES: dict[str, str] = {
    "lower_precision": "floating inputs (not float64) are cast to the autocast dtype",
    "float32": "floating inputs (not float64) are cast to float32",
    "promote": "floating inputs are cast to the widest floating dtype among them",
    "unchanged": "autocast leaves the op's inputs alone",
}

# The ops the autocast suite calls, each with its class in torch's published policies: (CUDA's, CPU's).
# A manifest's `autocast_policy` overrides these by op; a CPU target defaults to CPU's column, any other to CUDA's.
AUTOCAST_OPS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(("mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "linear", "conv1d", "conv2d",
                     "conv_transpose2d", "prelu"), ("lower_precision", "lower_precision")),
    **dict.fromkeys(("prod", "cdist", "mse_loss", "l1_loss", "smooth_l1_loss", "nll_loss", "kl_div",
                     "binary_cross_entropy_with_logits"), ("float32", "float32")),
    **dict.fromkeys(("softmax", "log_softmax", "layer_norm", "group_norm", "exp", "log", "pow", "sum", "cumsum"),
                    ("float32", "unchanged")),
    **dict.fromkeys(("cat", "stack"), ("promote", "promote")),
    **dict.fromkeys(("dot", "atan2", "addcmul"), ("promote", "unchanged")),
}

# Comparison categories of the tolerance model, each with the comparisons that read it (docs/manifest.md lists them;
# tests/engine/test_tolerance_categories.py shows an override of each changing a real comparison). A comparison names
# its categories most specific first; `default` applies under every one (oracle.tolerance: the merge rule).
TOLERANCE_READERS: dict[str, str] = {
    "default": "every comparison that takes a tolerance, below its own categories (not the fixed rtol/atol "
               "of the streams, events and multi_device observations)",
    "elementwise": "comparisons of ops in no other category (OpInfo suites, path-shapes)",
    "reduction": "comparisons of reductions (sum, mean, cumsum, softmax, ...)",
    "matmul": "comparisons of matmul ops (mm, bmm, addmm, linear, einsum, ...; path-shapes `matmul`)",
    "conv": "comparisons of convolutions (OpInfo suites, path-shapes `conv`)",
    "norm": "comparisons of norms and normalizations (layer_norm, batch_norm, norm, ...)",
    "sdpa": "comparisons of attention ops (scaled_dot_product_attention)",
    "loss": "comparisons of loss functions",
    "linalg": "comparisons of linalg ops (linalg.*, cholesky, svd, det, ...)",
    "fft": "comparisons of fft.* ops",
    "matmul_backward": "gradients of matmul ops (backward, double_backward, path_shapes_backward), above `backward`",
    "backward": "gradients (backward, double_backward, path_shapes_backward), training, gradient_checkpointing, "
                "module_hooks",
    "optimizer": "foreach_optimizer and fused_optimizer (parameters and state after the steps)",
    "compile": "compile_modules, and every comparison of a run under `--compile`, above the op's category",
    "quant_decode": "quantized_decoders: an element within it passes besides those within one ULP",
}
TOLERANCE_CATEGORIES: tuple[str, ...] = tuple(TOLERANCE_READERS)

# Categories a manifest may not override: what no rtol/atol can mean there (a one-line error at validation).
REFUSED_TOLERANCE_CATEGORIES: dict[str, str] = {
    "exact": "exact comparisons (integers, bools, views) hold CPU's bits by contract; no tolerance loosens them",
    "copy": "copies and transfers are compared bit for bit (copies, pinned_memory); no tolerance loosens them",
    "serialization": "a saved and loaded tensor is compared bit for bit with what was saved; no tolerance applies",
    "statistical": "rng_distributions judges draws by goodness-of-fit p-values at a fixed false-positive budget "
                   "and fixed invariants (the support; dropout's scale within 4 eps of x / (1 - p)), never against "
                   "CPU's values",
}

TOLERANCE_KEYS: tuple[str, ...] = ("atol", "rtol")

MEMORY_MODELS: tuple[str, ...] = ("discrete", "unified")

# The manifest's `hypothesis` block names Hypothesis's verbosities and health checks as strings (the
# manifest imports no Hypothesis; tests/engine/test_hypothesis_settings.py checks them against Hypothesis).
HYPOTHESIS_VERBOSITIES: tuple[str, ...] = ("quiet", "normal", "verbose", "debug")
HYPOTHESIS_HEALTH_CHECKS: tuple[str, ...] = ("data_too_large", "filter_too_much", "too_slow", "large_base_example",
                                             "function_scoped_fixture", "differing_executors", "nested_given")
# Hypothesis settings TorchCTS sets itself for every item, and why (a manifest naming one is told this).
HYPOTHESIS_OWNED: dict[str, str] = {
    "database": "TorchCTS keeps no example database; failing cases go to the corpus (--corpus-dir)",
    "phases": "TorchCTS runs every phase; --no-shrink leaves out shrinking",
    "report_multiple_bugs": "TorchCTS reports one failure per item",
    "backend": "TorchCTS draws with Hypothesis's own backend, so derandomized runs stay repeatable",
    "stateful_step_count": "TorchCTS's properties are not stateful tests",
}
