"""Seeded bugs for the foreach suite (properties/suites/foreach.py): multi-tensor kernels that go wrong
at a launch boundary, with a scalar list, or on a member the fast path should not have taken.

They act on the `aten._foreach_*` overloads themselves (the faulty device runs a foreach call as one
overload on CPU's data), so per-tensor ops are never touched. In-place overloads return nothing: their
bugs change the mutated tensors' data.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts.testing.faulty.bug_model import Bug

CHUNK_TENSORS = 32  # tensors one launch of the seeded multi-tensor kernel handles
CHUNK_ELEMENTS = 65536  # elements of one tensor one block of the seeded kernel handles


def _foreach_overloads(*, inplace: bool | None = None, overload: str | None = None) -> tuple[str, ...]:
    """The `aten._foreach_*` overloads as str(func) prints them ("aten._foreach_add.List"), without out=."""
    found = []
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::_foreach_"):
            continue
        packet, _, kind = name.removeprefix("aten::").partition(".")
        if kind.endswith("out") or (overload is not None and kind != overload):
            continue
        if inplace is not None and packet.endswith("_") != inplace:
            continue
        found.append(f"aten.{packet}.{kind or 'default'}")
    return tuple(sorted(found))


def _tensor_list(args: tuple) -> list[torch.Tensor]:
    first = args[0] if args else None
    if isinstance(first, (list, tuple)) and first and all(isinstance(t, torch.Tensor) for t in first):
        return list(first)
    return []


def _is_inplace(func) -> bool:
    return func._schema.name.endswith("_")


def _one_member(func, args: tuple, kwargs: dict, index: int, self_value: Any) -> tuple[tuple, dict]:
    """The arguments of `func` for member `index` alone: per-member lists and the scalars tensor sliced,
    the first list replaced by `[self_value]`."""
    count = len(args[0])
    names = [a.name for a in func._schema.arguments]

    def cut(name: str, value: Any) -> Any:
        if isinstance(value, (list, tuple)) and len(value) == count:
            return [value[index]]
        if name == "scalars" and isinstance(value, torch.Tensor) and value.dim() == 1 and value.numel() == count:
            return value[index:index + 1]
        return value

    rest = tuple(cut(names[i + 1] if i + 1 < len(names) else "", v) for i, v in enumerate(args[1:]))
    return ([self_value], *rest), {k: cut(k, v) for k, v in kwargs.items()}


# -- foreach_chunk_tail: the tail launch runs twice ---------------------------------------------------

def _tail_twice(func, args, kwargs, result):
    last = len(args[0]) - 1
    if _is_inplace(func):
        again_args, again_kwargs = _one_member(func, args, kwargs, last, args[0][last])
        func(*again_args, **again_kwargs)  # mutates the last tensor a second time
        return result
    again_args, again_kwargs = _one_member(func, args, kwargs, last, result[last])
    return [*result[:last], func(*again_args, **again_kwargs)[0]]


# -- foreach_scalar_list_first: the first scalar for every tensor ---------------------------------------

def _scalar_list_position(args: tuple) -> int | None:
    for position, value in enumerate(args[1:], start=1):
        if isinstance(value, (list, tuple)) and value and not any(isinstance(v, torch.Tensor) for v in value):
            return position
    return None


def _scalar_list_differs(func, args, kwargs) -> bool:
    position = _scalar_list_position(args)
    return position is not None and len(set(map(complex, args[position]))) > 1


def _first_scalar_everywhere(func, args, kwargs, result):
    position = _scalar_list_position(args)
    scalars = args[position]
    wrong = (*args[:position], [scalars[0]] * len(scalars), *args[position + 1:])
    return func(*wrong, **kwargs)


# -- foreach_noncontiguous_member: a non-contiguous member read or written as if contiguous -------------

def _contiguous_strides(shape: torch.Size) -> tuple[int, ...]:
    strides, step = [], 1
    for side in reversed(shape):
        strides.append(step)
        step *= max(side, 1)
    return tuple(reversed(strides))


def _misreadable(t: Any) -> bool:
    """Non-contiguous, no element shared (no zero stride), and its storage holds a contiguous reading."""
    if not isinstance(t, torch.Tensor) or t.is_contiguous() or t.numel() < 2 or t.layout != torch.strided:
        return False
    if any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride())):
        return False
    return t.storage_offset() + t.numel() <= t.untyped_storage().nbytes() // t.element_size()


def _as_contiguous_reading(t: torch.Tensor) -> torch.Tensor:
    return t.as_strided(t.shape, _contiguous_strides(t.shape), t.storage_offset())


def _has_misreadable_member(func, args, kwargs) -> bool:
    return any(_misreadable(t) for t in _tensor_list(args))


def _misread_members(func, args, kwargs, result):
    if _is_inplace(func):  # the right values, written back in contiguous order over the member's storage
        for t in _tensor_list(args):
            if _misreadable(t):
                values = t.clone()
                _as_contiguous_reading(t).copy_(values)
        return result

    def misread(value: Any) -> Any:
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
            return [_as_contiguous_reading(v) if _misreadable(v) else v for v in value]
        return value

    return func(*(misread(a) for a in args), **kwargs)


# -- foreach_large_tensor_tail: a tensor past one chunk loses its tail ----------------------------------

def _has_large_member(func, args, kwargs) -> bool:
    return any(t.numel() > CHUNK_ELEMENTS for t in _tensor_list(args))


def _tail_unwritten(func, args, kwargs, result):
    out = []
    for r in result:
        if isinstance(r, torch.Tensor) and r.numel() > CHUNK_ELEMENTS:
            flat = r.contiguous().reshape(-1).clone()
            flat[CHUNK_ELEMENTS:] = 0
            r = torch.empty_strided(r.shape, r.stride(), dtype=r.dtype).copy_(flat.view(r.shape))
        out.append(r)
    return out


BUGS = (
    Bug("foreach_chunk_tail", _foreach_overloads(),
        f"a foreach op over a list of more than {CHUNK_TENSORS} tensors",
        "launches the last chunk twice, the second time on the first launch's result: the last tensor gets the "
        "op applied twice (out-of-place: op(op(x)); in-place: x mutated twice)",
        lambda f, a, k: len(_tensor_list(a)) > CHUNK_TENSORS, _tail_twice, suite="foreach"),
    Bug("foreach_scalar_list_first", _foreach_overloads(inplace=False, overload="ScalarList"),
        "an out-of-place foreach op with a list of scalars that are not all equal",
        "applies the first scalar of the list to every tensor",
        _scalar_list_differs, _first_scalar_everywhere, suite="foreach"),
    Bug("foreach_noncontiguous_member", _foreach_overloads(),
        "a member of the first tensor list is non-contiguous (transposed, permuted, stepped), without zero strides",
        "takes the contiguous fast path anyway: out-of-place reads every such member of every list as if it were "
        "contiguous; in-place writes its results back in contiguous order over the member's storage",
        _has_misreadable_member, _misread_members, suite="foreach"),
    Bug("foreach_large_tensor_tail", _foreach_overloads(inplace=False),
        f"an out-of-place foreach op whose first list holds a tensor of more than {CHUNK_ELEMENTS} elements",
        f"leaves the elements of that tensor's result past the first {CHUNK_ELEMENTS} (in memory order) zero",
        _has_large_member, _tail_unwritten, suite="foreach"),
)
