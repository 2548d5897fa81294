"""Seeded bugs for the gradient-checkpointing suite (properties/suites/gradient_checkpointing.py): recompute kernels.

Activation checkpointing runs a block's forward kernels a second time inside the backward pass, with
grad mode on and the RNG state the forward saw restored. Each bug fires only there (an autograd graph
task is running and grad mode is on, which a plain backward never does for these forward kernels), so
the block's plain forward and backward stay right while its checkpointed backward goes wrong.
"""

from __future__ import annotations

# imports inside functions: cycle: faulty.device imports faulty.bugs, which imports this module for its BUGS

import torch

from torchcts.testing.faulty.bug_model import Bug, argument as _argument


def _recomputing() -> bool:
    """A forward kernel runs inside a backward pass with grad mode on: checkpoint's recompute."""
    return torch._C._current_graph_task_id() != -1 and torch.is_grad_enabled()


# -- recompute_dropout_redraws: the recomputed dropout ignores the restored RNG state -------------------------------

def _recomputed_dropout(func, args, kwargs) -> bool:
    return (_recomputing() and bool(_argument(func, args, kwargs, "train"))
            and 0 < float(_argument(func, args, kwargs, "p")) < 1)


def _redrawn(func, args, kwargs, result):
    from torchcts.testing.faulty.device import draw_on_device_generator, op_devices

    return draw_on_device_generator(func, op_devices()[0], args, kwargs)  # the generator's next mask, not the replayed one


# -- recompute_addmm_adds_bias_twice: a recomputed linear layer adds its bias twice ---------------------------------

def _recomputed_addmm(func, args, kwargs) -> bool:
    return _recomputing()


def _bias_twice(func, args, kwargs, result):
    return result + _argument(func, args, kwargs, "self")


BUGS = (
    Bug("recompute_dropout_redraws", ("aten.native_dropout.default",),
        "a training-mode dropout (0 < p < 1) runs inside a backward pass with grad mode on (checkpoint's recompute)",
        "draws a fresh mask instead of the one the restored RNG state replays, so gradients flow through "
        "other elements than the forward kept",
        _recomputed_dropout, _redrawn, suite="gradient_checkpointing"),
    Bug("recompute_addmm_adds_bias_twice", ("aten.addmm.default",),
        "addmm runs inside a backward pass with grad mode on (checkpoint's recompute of a linear layer)",
        "adds the bias (`self`) twice, so the activations saved for the backward are off",
        _recomputed_addmm, _bias_twice, suite="gradient_checkpointing"),
)
