"""The per-capability probes: each declared capability's cheapest check, one small function each.

`CAPABILITY_PROBES` maps every capability of the manifest vocabulary to its probe. A probe gets a
`ProbeEnv` (the device, a small float dtype the manifest claims, the step runner, the manifest),
runs a few steps on a handful of elements, and compares with the CPU where there is a value to
compare (loosely: a probe asks "does it work at all", the properties ask "is it exact"). It
raises `StepFailed` at the first wrong step, or `NoProbe` when it has nothing to say here (no
custom decoders declared). A test keeps the table and the vocabulary equal.

The probes live by what they exercise: `compute_probes` (forward, autograd, compile, random numbers),
`data_probes` (layouts, containers, dtypes), `device_probes` (memory, streams, the device module); `ProbeEnv`
in `probe.env`. A new capability: its probe function in one of them and its line here.
"""

from __future__ import annotations

from typing import Callable

from torchcts.probe import compute_probes as compute
from torchcts.probe import data_probes as data
from torchcts.probe import device_probes as device
from torchcts.probe.device_probes import HUGE_ALLOCATION_BYTES  # noqa: F401  (re-exported)
from torchcts.probe.env import ProbeEnv

CAPABILITY_PROBES: dict[str, Callable[[ProbeEnv], None]] = {
    "inference": compute.inference,
    "training": compute.training,
    "serialization": device.serialization,
    "compile": compute.torch_compile,
    "rng": compute.rng,
    "device_generator": compute.device_generator,
    "rng_distributions": compute.rng_distributions,
    "double_backward": compute.double_backward,
    "gradcheck": compute.gradcheck,
    "gradient_checkpointing": compute.gradient_checkpointing,
    "autocast": compute.autocast,
    "fused_optimizer": compute.fused_optimizer,
    "dataloader": device.dataloader,
    "module_hooks": compute.module_hooks,
    "channels_last": data.channels_last,
    "sparse": data.sparse,
    "nested": data.nested,
    "foreach": data.foreach,
    "fp8": data.fp8,
    "quantized_container_plumbing": data.quantized_container_plumbing,
    "native_quantization": data.native_quantization,
    "custom_quantized_decode": data.custom_quantized_decode,
    "pinned_memory": device.pinned_memory,
    "streams": device.streams,
    "events": device.events,
    "deterministic": device.deterministic,
    "guard_alloc": device.guard_alloc,
    "device_api": device.device_api,
    "multi_device": device.multi_device,
    "ieee754": data.ieee754,
}
