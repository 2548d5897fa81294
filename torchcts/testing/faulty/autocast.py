"""`torch.autocast(device_type="faulty")`: the device's autocast kernels, following CUDA's published policy.

A backend makes autocast work by registering, on its Autocast dispatch key, a fallthrough for every
op and a casting kernel for each op its policy names. The faulty device does the same from Python:
each kernel casts the op's floating device tensors (float64 and CPU tensors left alone, as CUDA does)
to the autocast dtype, to float32, or to the widest dtype among them, then calls the op again below
the Autocast key. The policy is CUDA's for the ops of the autocast suite (vocabulary.AUTOCAST_OPS) and
the aten ops they decompose into. Seeded autocast bugs act at the step `AUTOCAST_STEP`: `bugs.after`
sees (op, class) and the dtype chosen, and may choose another (None: no cast).
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

from torchcts.testing.faulty import bugs
from torchcts.testing.faulty.bug_model import AUTOCAST_STEP
from torchcts.testing.faulty.trace import note_step

_KEY = "AutocastPrivateUse1"

# aten packets -> class, CUDA's policy (aten/src/ATen/autocast_mode.cpp) for the suite's ops and their pieces
POLICY: dict[str, str] = {
    **dict.fromkeys(("mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "linear", "conv1d", "conv2d", "conv3d",
                     "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution", "_convolution",
                     "prelu", "addmv", "addr", "mv"), "lower_precision"),
    **dict.fromkeys(("softmax", "log_softmax", "layer_norm", "native_layer_norm", "group_norm", "exp", "log", "pow",
                     "sum", "cumsum", "prod", "cdist", "mse_loss", "l1_loss", "smooth_l1_loss", "nll_loss",
                     "nll_loss_nd", "kl_div", "binary_cross_entropy_with_logits"), "float32"),
    **dict.fromkeys(("cat", "stack", "dot", "atan2", "addcmul"), "promote"),
}

_libraries: list[torch.library.Library] = []


def _eligible(value: Any, policy: str) -> bool:
    return (isinstance(value, torch.Tensor) and value.is_floating_point() and value.device.type != "cpu"
            and (value.dtype != torch.float64 or policy == "promote"))


def _target_dtype(op_name: str, policy: str, args: tuple, kwargs: dict) -> torch.dtype | None:
    if policy == "lower_precision":
        chosen = torch.get_autocast_dtype("faulty")
    elif policy == "float32":
        chosen = torch.float32
    else:
        floating = [t.dtype for t in tree_leaves((args, kwargs))
                    if isinstance(t, torch.Tensor) and t.is_floating_point()]
        chosen = functools.reduce(torch.promote_types, floating) if floating else None
    note_step(AUTOCAST_STEP)
    return bugs.after(AUTOCAST_STEP, (op_name, policy), {}, chosen)


def _kernel(overload: Any, op_name: str, policy: str):
    exclude = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)

    def kernel(*args, **kwargs):
        dtype = _target_dtype(op_name, policy, args, kwargs)
        with torch._C._ExcludeDispatchKeyGuard(exclude):
            if dtype is not None:
                args, kwargs = tree_map(lambda v: v.to(dtype) if _eligible(v, policy) else v, (args, kwargs))
            return overload(*args, **kwargs)

    return kernel


def register() -> None:
    """A fallthrough for every op on the device's Autocast key, and a casting kernel for each op of POLICY."""
    fallthrough = torch.library.Library("_", "IMPL")
    fallthrough.fallback(torch.library.fallthrough_kernel, _KEY)
    kernels = torch.library.Library("aten", "IMPL")
    for op_name, policy in POLICY.items():
        packet = getattr(torch.ops.aten, op_name)
        for name in packet.overloads():
            if "out" in name.split("_"):  # out= forms: autocast leaves them to the caller's dtypes, as CUDA does
                continue
            qualified = op_name if name == "default" else f"{op_name}.{name}"
            kernels.impl(qualified, _kernel(getattr(packet, name), op_name, policy), _KEY)
    _libraries.extend((fallthrough, kernels))
