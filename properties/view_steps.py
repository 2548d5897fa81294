"""Chains of view ops as plain data, drawn valid for a tensor: the views suite's cases.

A step is `(method name, arguments, pick)`: the program calls `getattr(view, name)(*arguments)`
and, for ops returning a tuple of views (`split`, `chunk`, `unbind`), takes element `pick`. Steps
are plain data (names, ints, tuples), so a case stores, replays and exports without code. Each
family draws steps valid for the shape the chain has reached, checked on CPU as it goes; every
family shrinks toward its first, simplest step on the first dimension.
"""

from __future__ import annotations

from typing import Callable

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import Bound, Either, Ints, Lists, OneOf, Optional, Tuples

Step = tuple[str, tuple, "int | None"]

# the drawn ranges a stored chain's bound is derived from (`chain_bound`, `chain_fits`)
LEAD_SIZE = Ints(0, 3)  # expand: sizes of new leading dimensions
LEAD_DIMS = 2  # expand: at most this many new leading dimensions a step
BROADCAST_SIZE = Ints(1, 3)  # expand: what a size-1 dimension becomes
UNFOLD_STEP = Ints(1, 3)
DIAGONAL_OFFSET = Ints(-3, 3)
STRIDED_STRIDE = Ints(0, 3)  # as_strided: strides, 1..STRIDED_DIMS dimensions of at most STRIDED_SIDE
STRIDED_DIMS = Ints(1, 2)
STRIDED_SIDE = 3
# methods each family's steps call: a stored step names one of its scenario's families' methods, nothing else
METHODS = {
    "reshape": ("reshape", "view", "flatten", "unsqueeze", "squeeze", "unflatten"),
    "transpose": ("permute", "transpose", "movedim", "t", "swapaxes"),
    "slice": ("reshape", "narrow", "select", "unbind", "split", "chunk"),
    "expand": ("expand", "broadcast_to"),
    "strided": ("unfold", "diagonal", "as_strided"),
}
# how many times its input's elements one step of a family can make a view hold: expand adds LEAD_DIMS leading
# dimensions of LEAD_SIZE.high (a size-1 dimension broadcast to BROADCAST_SIZE.high <= LEAD_SIZE.high stood for a
# side or lead that could have held as many), unfold at most 1.5 (windows of 2 or 3 in a side of 4), the others none
_GROWTH = {"expand": LEAD_SIZE.high ** LEAD_DIMS, "strided": 2}
MAX_DIMS = 12  # dimensions a chain can reach (4 + LEAD_DIMS per expand or unfold step, well within this)


def apply_steps(t: torch.Tensor, steps: tuple[Step, ...]) -> torch.Tensor:
    """What the programs do with `steps` (on CPU, in the strategies)."""
    for name, args, pick in steps:
        t = getattr(t, name)(*args)
        if pick is not None:
            t = t[pick]
    return t


def _dim(draw, t: torch.Tensor, label: str, *, longer_than: int = -1) -> int | None:
    """A dimension of `t` (longer than `longer_than`), maybe as a negative index; None when there is none."""
    dims = [d for d in range(t.dim()) if t.shape[d] > longer_than]
    if not dims:
        return None
    dim = draw(st.sampled_from(dims), label=label)
    return dim - t.dim() if draw(st.booleans(), label=f"{label} negative") else dim


def _divisor_shape(draw, numel: int) -> tuple[int, ...]:
    """A shape of `numel` elements in 1 to 3 dimensions, maybe with one -1."""
    if numel == 0:
        return draw(st.sampled_from([(0,), (0, 1), (1, 0, 2)]), label="empty shape")
    sizes, left = [], numel
    for _ in range(draw(st.integers(0, 2), label="extra dims")):
        divisors = [d for d in range(1, left + 1) if left % d == 0]
        side = draw(st.sampled_from(divisors), label="side")
        sizes.append(side)
        left //= side
    sizes.append(left)
    if draw(st.booleans(), label="infer one size"):
        sizes[draw(st.integers(0, len(sizes) - 1), label="inferred")] = -1
    return tuple(sizes)


def _reshape_step(draw, t: torch.Tensor) -> Step:
    kind = draw(st.sampled_from(["reshape", "view", "flatten", "unsqueeze", "squeeze", "unflatten"]), label="op")
    if kind in ("reshape", "view"):
        shape = _divisor_shape(draw, t.numel())
        if kind == "view":
            try:
                t.view(shape)
            except RuntimeError:  # not expressible as a view of these strides: reshape (which copies) instead
                kind = "reshape"
        return (kind, (shape,), None)
    if kind == "flatten" and t.dim() >= 1:
        start = draw(st.integers(0, t.dim() - 1), label="start")
        return ("flatten", (start, draw(st.integers(start, t.dim() - 1), label="end")), None)
    if kind == "squeeze" and t.dim() >= 1:
        return ("squeeze", (_dim(draw, t, "dim"),), None)
    if kind == "unflatten" and t.dim() >= 1:
        dim = _dim(draw, t, "dim")
        side = t.shape[dim]
        divisors = [d for d in range(1, side + 1) if side % d == 0] or [0]
        first = draw(st.sampled_from(divisors), label="first size")
        return ("unflatten", (dim, (first, -1) if first else (0, 1)), None)
    return ("unsqueeze", (draw(st.integers(-t.dim() - 1, t.dim()), label="dim"),), None)


def _transpose_step(draw, t: torch.Tensor) -> Step:
    if t.dim() == 0:
        return ("permute", ((),), None)
    kind = draw(st.sampled_from(["transpose", "permute", "movedim", "t", "swapaxes"]), label="op")
    if kind == "t" and t.dim() <= 2:
        return ("t", (), None)
    if kind == "permute":
        return ("permute", (tuple(draw(st.permutations(range(t.dim())), label="order")),), None)
    first, second = _dim(draw, t, "first dim"), _dim(draw, t, "second dim")
    return ("movedim" if kind == "movedim" else "swapaxes" if kind == "swapaxes" else "transpose", (first, second), None)


def _slice_step(draw, t: torch.Tensor) -> Step:
    dim = _dim(draw, t, "dim", longer_than=0)
    if dim is None:
        return ("reshape", (tuple(t.shape),), None)  # nothing to slice (0-d or empty): the identity view
    side = t.shape[dim]
    kind = draw(st.sampled_from(["narrow", "select", "split", "chunk", "unbind"]), label="op")
    if kind == "narrow":
        start = draw(st.integers(0, side), label="start")
        return ("narrow", (dim, start, draw(st.integers(0, side - start), label="length")), None)
    if kind == "select":
        return ("select", (dim, draw(st.integers(-side, side - 1), label="index")), None)
    if kind == "unbind":
        return ("unbind", (dim,), draw(st.integers(0, side - 1), label="pick"))
    size = draw(st.integers(1, side), label="size")
    parts = len(torch.empty(side).chunk(size)) if kind == "chunk" else -(-side // size)
    return (kind, (size, dim), draw(st.integers(0, parts - 1), label="pick"))


def _expand_step(draw, t: torch.Tensor) -> Step:
    lead = tuple(draw(st.lists(LEAD_SIZE.strategy(), max_size=LEAD_DIMS), label="new leading sizes"))
    sizes = [draw(BROADCAST_SIZE.strategy(), label="broadcast size") if side == 1 and draw(st.booleans(), label="expand it")
             else (-1 if draw(st.booleans(), label="as -1") else side) for side in t.shape]
    name = draw(st.sampled_from(["expand", "broadcast_to"]), label="op")
    if name == "broadcast_to":
        return ("broadcast_to", (tuple(lead) + tuple(t.shape[d] if s == -1 else s for d, s in enumerate(sizes)),), None)
    return ("expand", (tuple(lead) + tuple(sizes),), None)


def _strided_step(draw, t: torch.Tensor) -> Step:
    kind = draw(st.sampled_from(["unfold", "diagonal", "as_strided"]), label="op")
    if kind == "unfold" and t.dim() >= 1:
        dim = _dim(draw, t, "dim")
        size = draw(st.integers(0, t.shape[dim]), label="size")
        return ("unfold", (dim, size, draw(UNFOLD_STEP.strategy(), label="step")), None)
    if kind == "diagonal" and t.dim() >= 2:
        first = draw(st.integers(0, t.dim() - 1), label="first dim")
        second = draw(st.sampled_from([d for d in range(t.dim()) if d != first]), label="second dim")
        return ("diagonal", (draw(DIAGONAL_OFFSET.strategy(), label="offset"), first, second), None)
    return ("as_strided",) + _as_strided_args(draw, t)


def _as_strided_args(draw, t: torch.Tensor) -> tuple[tuple, None]:
    """Sizes, strides and an absolute storage offset that stay inside the storage `t` can reach."""
    span = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1 if t.numel() else 0
    if span == 0:
        return ((0,), (1,), 0), None
    offset = draw(st.integers(0, span - 1), label="storage offset")
    sizes, strides, room = [], [], span - 1 - offset
    for _ in range(draw(STRIDED_DIMS.strategy(), label="dims")):
        stride = draw(STRIDED_STRIDE.strategy(), label="stride")
        most = room // stride + 1 if stride else STRIDED_SIDE
        size = draw(st.integers(1, max(1, min(STRIDED_SIDE, most))), label="size")
        room -= (size - 1) * stride
        sizes.append(size)
        strides.append(stride)
    return (tuple(sizes), tuple(strides), offset), None


FAMILIES: dict[str, Callable] = {
    "reshape": _reshape_step,
    "transpose": _transpose_step,
    "slice": _slice_step,
    "expand": _expand_step,
    "strided": _strided_step,
}


def draw_view_chain(draw, t: torch.Tensor, families: tuple[str, ...], *, min_steps: int = 1,
                    max_steps: int = 3) -> tuple[Step, ...]:
    """A chain of `min_steps` to `max_steps` view steps from `families`, each valid where the chain stands.

    A plain function of `draw` (no strategy object per call: building one per draw is slow)."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        raise ValueError(f"draw_view_chain: families from {sorted(FAMILIES)}, got {families!r}")
    steps, current = [], t
    for index in range(draw(st.integers(min_steps, max_steps), label="steps")):
        family = draw(st.sampled_from(families), label=f"family {index}")
        step = FAMILIES[family](draw, current)
        current = apply_steps(current, (step,))
        steps.append(step)
    return tuple(steps)


# -- bounds of a stored chain ----------------------------------------------------------------------------------------

def most_elements(input_elements: int, families: tuple[str, ...], steps: int) -> int:
    """The most elements a view `steps` steps of `families` deep can hold, from an input of `input_elements`."""
    growth = max(_GROWTH.get(family, 1) for family in families)
    return max(input_elements, STRIDED_SIDE ** STRIDED_DIMS.high) * growth ** steps


def chain_bound(families: tuple[str, ...], min_steps: int, max_steps: int, most: int) -> Bound:
    """What a stored chain of `families` steps may be: [method, arguments, pick] steps, the methods of those
    families, every integer (a dim, size, index, offset, stride) within +-`most` (the most elements a view reaches);
    `chain_fits` then checks the chain against the stored input."""
    number = Ints(-most, most)
    methods = tuple(dict.fromkeys(name for family in families for name in METHODS[family]))
    step = Tuples((OneOf(methods), Lists(Either((number, Lists(number, 0, MAX_DIMS))), 0, 3), Optional(number)))
    return Lists(step, min_steps, max_steps)


_SIZED = ("expand", "broadcast_to", "reshape", "view", "as_strided")  # methods whose first argument is the sizes


def chain_fits(t: torch.Tensor, steps, most: int) -> bool:
    """Whether `steps` apply to `t` as views of at most `most` elements each (a stored chain the program can run
    without allocating more than its strategy could make it): sizes a step asks for are counted before it runs."""
    for name, args, pick in steps:
        if name in _SIZED and args and isinstance(args[0], (list, tuple)):
            asked = 1
            for size in args[0]:
                asked *= max(abs(size), 1)
            if asked > most:
                return False
        try:
            t = apply_steps(t, ((name, tuple(args), pick),))
        except (RuntimeError, IndexError, TypeError, ValueError):
            return False
        if t.numel() > most:
            return False
    return True
