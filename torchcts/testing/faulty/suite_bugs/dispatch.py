"""Seeded bugs for the dispatch property (properties/test_dispatch.py): kernels of overloads no OpInfo reaches.

Each acts on one overload the property generates cases for and no OpInfo property calls by name, under
a condition of its arguments, so only schema-generated calls can catch it: a functional copy that loses
an element of strided inputs, and an `out=` backward kernel that ignores its argument. Arguments are
read by name (a generated call passes later arguments by keyword once it leaves one at its default).
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts.testing.faulty.bug_model import Bug


def _argument(func: Any, args: tuple, kwargs: dict, name: str, default: Any = None) -> Any:
    """The value of argument `name` of a call of `func`, positional or keyword, else `default`."""
    for position, arg in enumerate(func._schema.arguments):
        if arg.name == name:
            if name in kwargs:
                return kwargs[name]
            return args[position] if position < len(args) else default
    return default


# -- lift_fresh_copy_strided_tail: a copy of a non-contiguous input drops its last element -----------------------------

def _strided_input(func, args, kwargs) -> bool:
    t = _argument(func, args, kwargs, "self")
    return isinstance(t, torch.Tensor) and t.numel() > 1 and not t.is_contiguous()


def _zero_last(func, args, kwargs, result):
    flat = result.reshape(-1).clone()
    flat[-1] = flat[-1].logical_not() if flat.dtype == torch.bool else flat[-1] + 1
    return flat.reshape(result.shape)


# -- hardshrink_backward_default_lambd: the out= kernel shrinks with lambd=0.5 whatever it is given ---------------------

def _lambd_given(func, args, kwargs) -> bool:
    lambd = _argument(func, args, kwargs, "lambd", 0.5)
    return isinstance(lambd, (int, float)) and float(lambd) != 0.5


def _default_lambd(func, args, kwargs, result):
    grad_input = _argument(func, args, kwargs, "grad_input")
    torch.ops.aten.hardshrink_backward.grad_input(_argument(func, args, kwargs, "grad_out"),
                                                  _argument(func, args, kwargs, "self"), 0.5, grad_input=grad_input)
    return result


BUGS = (
    Bug("lift_fresh_copy_strided_tail", ("aten.lift_fresh_copy.default",),
        "the input is non-contiguous (transposed, stepped, offset) with more than one element",
        "returns a copy whose last element is one more (negated for bool)",
        _strided_input, _zero_last, suite="dispatch"),
    Bug("hardshrink_backward_default_lambd", ("aten.hardshrink_backward.grad_input",),
        "the out= form is called with lambd other than 0.5",
        "computes the gradient with lambd=0.5 whatever lambd is given, writing it into grad_input",
        _lambd_given, _default_lambd, suite="dispatch"),
)
