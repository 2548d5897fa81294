"""Seeded bugs the views suite (`properties/suites/views.py`) must catch: views that are not views, wrong offsets.

Each imitates what real backends got wrong: a permute implemented as a copy for higher ranks
(aliasing lost: writes through the "view" never reach the base), an `as_strided` that takes its
storage offset relative to the input view instead of the storage's start, an `expand` that
materialises a rank-increasing broadcast (no zero strides; in-place writes no longer refused), and
a `contiguous()` that keeps a channels_last layout.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug


def _permutes_rank3(func, args, kwargs) -> bool:
    x, order = args[0], tuple(args[1]) if len(args) > 1 else tuple(kwargs.get("dims", ()))
    return x.dim() >= 3 and tuple(d % x.dim() for d in order) != tuple(range(x.dim()))


def _copied(func, args, kwargs, result):
    return result.clone(memory_format=torch.preserve_format)


def _explicit_offset(args, kwargs):
    return args[3] if len(args) > 3 else kwargs.get("storage_offset")


def _offset_on_offset_view(func, args, kwargs) -> bool:
    offset = _explicit_offset(args, kwargs)
    return offset is not None and args[0].storage_offset() != 0


def _relative_offset(func, args, kwargs, result):
    x = args[0]
    return torch.as_strided(x, tuple(args[1]), tuple(args[2]), x.storage_offset() + _explicit_offset(args, kwargs))


def _rank_increasing_broadcast(func, args, kwargs) -> bool:
    x, size = args[0], tuple(args[1]) if len(args) > 1 else tuple(kwargs["size"])
    return len(size) > x.dim() and x.numel() > 0 and any(s > 1 for s in size[:len(size) - x.dim()])


def _materialised(func, args, kwargs, result):
    return result.contiguous()


def _contiguous_of_channels_last(func, args, kwargs) -> bool:
    x = args[0]
    return (kwargs.get("memory_format") == torch.contiguous_format and x.dim() == 4 and not x.is_contiguous()
            and x.is_contiguous(memory_format=torch.channels_last))


def _format_kept(func, args, kwargs, result):
    return args[0].clone(memory_format=torch.preserve_format)


BUGS = (
    Bug("permute_copies", ("aten.permute.default",),
        "a tensor of 3 or more dimensions is permuted (not the identity order)",
        "returns a copy with the permuted strides instead of a view: writes through it never reach the base",
        _permutes_rank3, _copied, suite="views"),
    Bug("as_strided_relative_offset", ("aten.as_strided.default",),
        "as_strided is given a storage offset and its input already has a non-zero storage offset",
        "adds the input's own storage offset to the requested (absolute) one",
        _offset_on_offset_view, _relative_offset, suite="views"),
    Bug("expand_materializes", ("aten.expand.default",),
        "expand adds leading dimensions longer than 1 (a rank-increasing broadcast) of a non-empty tensor",
        "materialises the broadcast as a contiguous copy: no zero strides, no aliasing, in-place writes into it "
        "no longer refused",
        _rank_increasing_broadcast, _materialised, suite="views"),
    Bug("contiguous_keeps_channels_last", ("aten.clone.default",),
        "clone with memory_format=torch.contiguous_format (contiguous()) of a 4-d channels_last tensor",
        "keeps the channels_last strides: contiguous() returns a non-contiguous tensor (right values)",
        _contiguous_of_channels_last, _format_kept, suite="views"),
)
