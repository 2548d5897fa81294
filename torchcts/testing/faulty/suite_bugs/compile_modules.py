"""Seeded bugs for the whole-model compile suite (properties/suites/compile_modules.py): the device's compiled kernels.

The faulty device is a Python tensor subclass, so under `torch.compile` dynamo traces into its dispatch
(`device.run_on_cpu`) and compiles each op's CPU call, with the active bugs' checks, into a graph of its
own. These bugs fire only while dynamo captures that graph (`torch.compiler.is_compiling()`), so the
perturbation is baked into the compiled code: the device's compiled path computes a wrong result while
its eager path, which the `training` suite checks, stays right. Each models a class of compiler bug a
real backend ships: an epilogue lost in fusion, a reduction normalised by the wrong count.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug

_COMPILED = "the op runs in code torch.compile captured (dynamo traces the device's dispatch)"


def _compiled(func, args, kwargs) -> bool:
    return torch.compiler.is_compiling()


# -- compiled_addmm_drops_bias: the fused linear kernel loses its bias epilogue ----------------------------------------

def _without_bias(func, args, kwargs, result):
    # addmm(input, mat1, mat2, *, beta=1, alpha=1): the compiled kernel keeps alpha * mat1 @ mat2 only
    return torch.mm(args[1], args[2]) * kwargs.get("alpha", 1)


# -- compiled_batch_norm_biased_running_var: the running variance is updated with the biased batch variance ------------

def _compiled_training_with_stats(func, args, kwargs) -> bool:
    # one value per channel: CPU's unbiased update is undefined there, so the bug stays silent
    return (torch.compiler.is_compiling() and bool(args[5]) and isinstance(args[4], torch.Tensor)
            and args[0].numel() > args[0].shape[1])


def _biased_running_var(func, args, kwargs, result):
    # native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps) -> (out, mean, invstd)
    input, running_var, momentum, eps = args[0], args[4], args[6], args[7]
    count = input.numel() // input.shape[1]
    biased = result[2].pow(-2) - eps  # the batch variance the kernel normalised by
    # CPU updated with biased * count / (count - 1); the compiled kernel forgets Bessel's correction
    running_var.sub_(momentum * biased / (count - 1))
    return result


BUGS = (
    Bug("compiled_addmm_drops_bias", ("aten.addmm.default",), _COMPILED,
        "the compiled linear kernel returns alpha * mat1 @ mat2 without beta * input (a bias epilogue lost in "
        "fusion); eager addmm is right",
        _compiled, _without_bias, suite="compile_modules"),
    Bug("compiled_batch_norm_biased_running_var", ("aten.native_batch_norm.default",),
        f"{_COMPILED}, in training mode with running statistics",
        "the compiled batch norm updates its running variance with the biased batch variance (no n/(n-1) "
        "correction); eager batch norm is right",
        _compiled_training_with_stats, _biased_running_var, suite="compile_modules"),
)
