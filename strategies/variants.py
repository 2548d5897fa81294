"""The four ways a case calls its op: the function, the method, the in-place method, the `out=` form.

A `Case` names its variant; `call_variant` runs an OpInfo on a sample as that variant, the same
way when drawing (to validate a case on CPU) and when a property runs the case.
"""

from __future__ import annotations

from typing import Any

import torch
from hypothesis.errors import InvalidArgument

VARIANTS = ("function", "method", "inplace", "out")


def call_variant(op: Any, variant: str, sample: Any) -> Any:
    """Run `op` on `sample` as the given variant ('function', 'method', 'inplace', 'out')."""
    if variant == "function":
        return op(sample.input, *sample.args, **sample.kwargs)
    if variant == "method":
        return op.method_variant(sample.input, *sample.args, **sample.kwargs)
    if variant == "inplace":
        return op.inplace_variant(sample.input, *sample.args, **sample.kwargs)
    if variant == "out":
        expected = op(sample.input, *sample.args, **sample.kwargs)
        out = torch.utils._pytree.tree_map_only(torch.Tensor, torch.empty_like, expected)
        return op(sample.input, *sample.args, **sample.kwargs, out=out)
    raise InvalidArgument(f"unknown variant {variant!r}; expected one of {VARIANTS}")


def variant_exists(op: Any, variant: str) -> bool:
    """Whether the OpInfo has this variant (every op has the function)."""
    return {"function": True, "method": op.method_variant is not None, "inplace": op.inplace_variant is not None,
            "out": bool(op.supports_out)}[variant]
