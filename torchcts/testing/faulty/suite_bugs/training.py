"""Seeded bugs for the training suite (properties/suites/training.py): kernels a training step needs.

Each corrupts what only a training step shows: state a forward pass leaves for later (batch norm's
running statistics) or a gradient summed over repeated indices (an embedding's backward), so a
model's forward values stay right while its training goes wrong.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug, argument as _argument


# -- batch_norm_keeps_running_var: training batch norm never writes its running variance -------------------------------

def _training_with_stats(func, args, kwargs) -> bool:
    return bool(_argument(func, args, kwargs, "training")) and isinstance(
        _argument(func, args, kwargs, "running_var"), torch.Tensor)


def _running_var_reset(func, args, kwargs, result):
    _argument(func, args, kwargs, "running_var").fill_(1.0)  # its initial value: as if never written
    return result


# -- embedding_backward_overwrites_repeats: a repeated index keeps one gradient instead of their sum -------------------

def _repeated_indices(func, args, kwargs) -> bool:
    indices = _argument(func, args, kwargs, "indices")
    return isinstance(indices, torch.Tensor) and indices.numel() > indices.unique().numel()


def _overwritten(func, args, kwargs, result):
    grad_output, indices = _argument(func, args, kwargs, "grad_output"), _argument(func, args, kwargs, "indices")
    rows = grad_output.reshape(-1, result.shape[-1])
    return torch.zeros_like(result).index_put_((indices.reshape(-1),), rows, accumulate=False)


BUGS = (
    Bug("batch_norm_keeps_running_var", ("aten.native_batch_norm.default",),
        "batch norm runs in training mode with running statistics",
        "the running variance is left at its initial 1 (the running mean is updated)",
        _training_with_stats, _running_var_reset, suite="training"),
    Bug("embedding_backward_overwrites_repeats", ("aten.embedding_dense_backward.default",),
        "an index occurs more than once in the batch",
        "a repeated index's weight row gets one occurrence's gradient instead of their sum",
        _repeated_indices, _overwritten, suite="training"),
)
