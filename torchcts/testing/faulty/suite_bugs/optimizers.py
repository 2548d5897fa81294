"""Seeded bugs for the optimizer suites (properties/suites/optimizers.py): fused optimizer kernels.

A fused kernel takes whole lists (parameters, gradients, each state) and updates them in one call;
its bugs live in the list handling and in the state it leaves for the next step, which a loop over
single tensors never has: a kernel that handles tensors past a list position twice, and one that
does not keep its momentum buffers.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug, argument as _argument

HANDLED_ONCE = 4  # fused_adam_repeats_past_four: list positions past this one are updated twice


# -- fused_adam_repeats_past_four: a second chunk of the list gets the update applied twice ----------------------------

def _long_list(func, args, kwargs) -> bool:
    return len(_argument(func, args, kwargs, "self", ())) > HANDLED_ONCE


def _tail_twice(func, args, kwargs, result):
    """Run the kernel again on the list positions past HANDLED_ONCE (every list as long as `self` is cut)."""
    length = len(_argument(func, args, kwargs, "self"))
    names = [a.name for a in func._schema.arguments]

    def cut(value):
        return list(value[HANDLED_ONCE:]) if isinstance(value, (list, tuple)) and len(value) == length else value

    args = tuple(cut(a) for a in args)
    kwargs = {k: cut(v) for k, v in kwargs.items() if k in names}
    func(*args, **kwargs)
    return result


# -- fused_sgd_forgets_momentum: the momentum buffers are zeroed after each step -----------------------------------------

def _momentum(func, args, kwargs) -> bool:
    momentum = _argument(func, args, kwargs, "momentum", 0.0)
    return bool(_argument(func, args, kwargs, "momentum_buffer_list", ())) and float(momentum) != 0.0


def _buffers_zeroed(func, args, kwargs, result):
    for buffer in _argument(func, args, kwargs, "momentum_buffer_list"):
        buffer.zero_()
    return result


BUGS = (
    Bug("fused_adam_repeats_past_four", ("aten._fused_adam_.default", "aten._fused_adamw_.default"),
        f"the fused Adam/AdamW kernel is given more than {HANDLED_ONCE} parameters",
        f"parameters (and their states) past the first {HANDLED_ONCE} are updated twice in one step",
        _long_list, _tail_twice, suite="optimizers"),
    Bug("fused_sgd_forgets_momentum", ("aten._fused_sgd_.default",),
        "the fused SGD kernel runs with momentum",
        "its momentum buffers are zeroed after the step (the next step starts without momentum)",
        _momentum, _buffers_zeroed, suite="optimizers"),
)
