"""Seeded bugs for the module-hooks suite (properties/suites/module_hooks.py): kernels a module's hooks depend on.

A module's hook logic is torch's Python; the device runs two things for it. Full backward hooks pass
a module's inputs and outputs through an autograd Function (`BackwardHookFunction`) that returns them
as aliases, which autograd makes as same-shape views with grad mode off; and a hook's own ops run while
the engine executes that Function's node. Each bug corrupts one of these, so a model without hooks
stays right while its hooked twin goes wrong.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug, argument as _argument


# -- hook_alias_ignores_strides: the pass-through alias of a non-contiguous tensor reads it as contiguous --------------

def _same_shape_alias_without_grad(func, args, kwargs) -> bool:
    self, size = _argument(func, args, kwargs, "self"), _argument(func, args, kwargs, "size")
    return (not torch.is_grad_enabled() and isinstance(self, torch.Tensor) and list(size) == list(self.shape)
            and not self.is_contiguous())


def _contiguous_alias(func, args, kwargs, result):
    self = _argument(func, args, kwargs, "self")
    strides, step = [], 1
    for size in reversed(self.shape):
        strides.insert(0, step)
        step *= size
    return self.as_strided(self.shape, strides, self.storage_offset())  # an alias still, over the wrong elements


# -- backward_hook_scales_twice: a scaling run inside a module's backward hook lands twice -----------------------------

def _in_backward_hook(func, args, kwargs) -> bool:
    node = torch._C._current_autograd_node()
    other = _argument(func, args, kwargs, "other")
    scalar = isinstance(other, (int, float)) or isinstance(other, torch.Tensor) and other.dim() == 0
    return node is not None and node.name() == "BackwardHookFunctionBackward" and scalar


def _scaled_again(func, args, kwargs, result):
    return func(result, _argument(func, args, kwargs, "other"))


BUGS = (
    Bug("hook_alias_ignores_strides", ("aten.view.default",),
        "a same-shape view of a non-contiguous tensor with grad mode off (the alias a full backward hook wraps a "
        "module's input or output in)",
        "the alias gets contiguous strides over the same storage, so it reads the elements in the wrong order",
        _same_shape_alias_without_grad, _contiguous_alias, suite="module_hooks"),
    Bug("backward_hook_scales_twice", ("aten.mul.Tensor",),
        "a multiplication by a scalar while the autograd engine runs a module's backward hook",
        "the factor is applied twice: a hook that scales grad_input or grad_output acts as if it fired twice",
        _in_backward_hook, _scaled_again, suite="module_hooks"),
)
