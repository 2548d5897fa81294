"""Seeded bugs for the nested suite: the jagged <-> padded conversions a jagged backend implements itself.

They act on the jagged-specific aten overloads (`_jagged_to_padded_dense_forward`,
`_padded_dense_to_jagged_forward`), which only nested tensors reach: to_padded_tensor and the
reductions and softmax over the ragged dim go through them.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug


def _lengths(offsets: torch.Tensor) -> list[int]:
    return offsets.diff().tolist()


def _last_component_held(func, args, kwargs) -> bool:
    offsets = args[1][0]
    return offsets.numel() >= 3 and int(offsets[-1]) > int(offsets[-2])


def _last_component_padding(func, args, kwargs, result):
    padding = args[3] if len(args) > 3 else kwargs.get("padding_value", 0.0)
    out = result.clone()
    out[-1] = padding
    return out


def _some_component_padded(func, args, kwargs) -> bool:
    padded, offsets = args[0], args[1][0]
    return padded.dim() >= 2 and any(n < padded.shape[1] for n in _lengths(offsets))


def _rows_one_late(func, args, kwargs, result):
    padded, offsets = args[0], args[1][0]
    out = result.clone()
    for b, (start, n) in enumerate(zip(offsets[:-1].tolist(), _lengths(offsets))):
        if 0 < n < padded.shape[1]:
            out[start:start + n] = padded[b, 1:n + 1].reshape(out[start:start + n].shape)
    return out


BUGS = (
    Bug("jagged_padding_drops_last", ops=("aten._jagged_to_padded_dense_forward.default",),
        condition="a jagged tensor of two or more components, the last one not empty, is padded",
        description="fills the last component's rows of the padded tensor with the padding value",
        fires=_last_component_held, perturb=_last_component_padding, suite="nested"),
    Bug("padded_to_jagged_off_by_one", ops=("aten._padded_dense_to_jagged_forward.default",),
        condition="a padded tensor goes back to jagged and some component is shorter than the padded length",
        description="reads each shorter component's rows one row late in its padded slot",
        fires=_some_component_padded, perturb=_rows_one_late, suite="nested"),
)
