"""Walking the tensors of an OpInfo `SampleInput`: input, then args, then kwargs, into lists and dicts.

Every transform of a sample (re-layout, special values, resizing, copying, moving to meta) is a
function of one tensor applied by `map_sample`, which names each tensor by where it sits
("input", "args[1]", "kwargs.weight") and says whether the variant writes it.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from torchcts.strategies.placement import copy_exact


def map_sample(sample: Any, transform: Callable[[str, torch.Tensor, bool], torch.Tensor], writes_input: bool) -> Any:
    """A new SampleInput with `transform(where, tensor, written)` applied to each tensor in it."""
    from torch.testing._internal.opinfo.core import SampleInput

    def walk(where: str, value: Any, written: bool) -> Any:
        if isinstance(value, torch.Tensor):
            return transform(where, value, written)
        if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            return type(value)(walk(f"{where}[{i}]", v, written) for i, v in enumerate(value))
        if isinstance(value, dict):
            return {k: walk(f"{where}.{k}", v, written) for k, v in value.items()}
        return value

    return SampleInput(
        walk("input", sample.input, writes_input),
        args=tuple(walk(f"args[{i}]", a, False) for i, a in enumerate(sample.args)),
        kwargs={k: walk(f"kwargs.{k}", v, False) for k, v in sample.kwargs.items()},
        output_process_fn_grad=sample.output_process_fn_grad,
        broadcasts_input=sample.broadcasts_input,
        name=sample.name,
    )


def is_dense(t: torch.Tensor) -> bool:
    """Whether `t` is an ordinary strided tensor (not sparse, nested or quantized): the ones transformed."""
    return t.layout == torch.strided and not t.is_nested and not t.is_quantized


def dense_tensors(sample: Any) -> list[torch.Tensor]:
    """The sample's dense tensors, in walking order."""
    found: list[torch.Tensor] = []
    map_sample(sample, lambda where, t, written: found.append(t) or t if is_dense(t) else t, False)
    return found


def copied(sample: Any) -> Any:
    """The sample with every dense tensor copied exactly (layout included), so running the op cannot change it."""
    return map_sample(sample, lambda where, t, written: copy_exact(t) if is_dense(t) else t, False)


def sample_input(input: Any, *args: Any, **kwargs: Any) -> Any:
    """torch's `SampleInput(input, *args, **kwargs)`, its module imported at the first call: importing it imports
    torch's device-test machinery (dynamo, inductor: seconds), which loading the suites and planning never need."""
    from torch.testing._internal.opinfo.core import SampleInput

    return SampleInput(input, *args, **kwargs)
