"""The installed aten overload a name spells ("aten.add.Tensor"), for the strategies that draw an overload's
arguments from its schema or from traced calls, and for coverage's lists of overloads."""

from __future__ import annotations

from typing import Any

import torch

from torchcts.core.overload_names import split_name


def resolve(name: str) -> Any:
    """The installed `torch.ops.aten.<packet>.<overload>`, or None when this torch has no such overload."""
    packet, overload = split_name(name)
    try:
        return getattr(getattr(torch.ops.aten, packet), overload)
    except (AttributeError, RuntimeError):
        return None
