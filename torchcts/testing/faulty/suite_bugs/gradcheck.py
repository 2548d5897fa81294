"""Seeded bugs for the gradient-check suites (properties/suites/gradcheck.py): backward kernels wrong where only
gradcheck's dtype or a double backward reaches them.

One is a float64-only backward kernel (a hand-written float64 path, the dtype gradcheck runs in); the other is a
backward kernel that reuses its incoming gradient's buffer for its result, which only a backward that records a
graph (`create_graph=True`) can see: autograd saved that gradient for the second derivative.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug, argument as _argument


# -- log_softmax_backward_float64_drops_sum: the float64 kernel forgets the softmax-weighted sum ----------------------

def _float64_log_softmax_backward(func, args, kwargs) -> bool:
    return _argument(func, args, kwargs, "grad_output").dtype == torch.float64


def _sum_dropped(func, args, kwargs, result):
    grad_output, output = _argument(func, args, kwargs, "grad_output"), _argument(func, args, kwargs, "output")
    return grad_output - output.exp() * grad_output  # right: grad_output - exp(output) * grad_output.sum(dim)


# -- backward_reuses_grad_output: the result is written into grad_output's buffer -------------------------------------

def _recording_backward(func, args, kwargs) -> bool:
    """Called by autograd's engine in a backward pass with create_graph=True (grad mode on inside a backward), with a
    grad_output whose buffer could hold the result (dense, same shape and dtype as the output)."""
    grad_output, output = _argument(func, args, kwargs, "grad_output"), _argument(func, args, kwargs, "output")
    return (torch.is_grad_enabled() and torch._C._current_graph_task_id() != -1
            and isinstance(grad_output, torch.Tensor) and grad_output.layout == torch.strided
            and grad_output.is_contiguous() and grad_output.shape == output.shape
            and grad_output.dtype == output.dtype and grad_output.numel() > 0)


def _written_into_grad_output(func, args, kwargs, result):
    _argument(func, args, kwargs, "grad_output").copy_(result)
    return result


BUGS = (
    Bug("log_softmax_backward_float64_drops_sum", ("aten._log_softmax_backward_data.default",),
        "float64 gradients",
        "the float64 kernel returns grad_output - exp(output) * grad_output, leaving out the sum of grad_output "
        "over the softmax dimension",
        _float64_log_softmax_backward, _sum_dropped, suite="gradcheck"),
    Bug("backward_reuses_grad_output", ("aten.tanh_backward.default", "aten.sigmoid_backward.default"),
        "a backward pass with create_graph=True, grad_output dense and shaped like the result",
        "writes the gradient into grad_output's buffer: first-order gradients are right, but the grad_output autograd "
        "saved for the second derivative now holds the gradient, so second-order gradients are wrong",
        _recording_backward, _written_into_grad_output, suite="double_backward"),
)
