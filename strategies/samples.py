"""Cases drawn from an OpInfo's own sample inputs, re-laid-out and with special values mixed in.

`opinfo_samples` picks one of the op's samples (shrinking toward the first), then, per dense
tensor in it -- the input and every operand in args and kwargs, inside lists too: conditions,
masks, indices, weights -- may re-lay it out in memory and (where special values are claimed) put
NaN, inf, -0.0 and friends into floating tensors, and division-safe integer extremes into an
integer input. Other integer tensors (indices, sizes) keep their values at level 1, so they stay
in range; a tensor the op writes to never gets an overlapping layout. From semantic level 2, data
tensors may also get ties, any operand the op does not write a broadcast (stride-0) dimension
(integer and bool operands too: constant along a dimension keeps indices in range and masks
masks, except where the op needs distinct indices), and the sample a size change
(`torchcts.strategies.sample_sizes`).

With `validate=True` a transformed case the CPU rejects falls back to the sample as given
(`torchcts.strategies.cpu_acceptance`). The pool comes from `torchcts.strategies.opinfo_pool`;
`call_variant`, `sample_pool` and `cpu_pinned_paths` are importable from here too.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts import dtypes as dtype_names
from torchcts.plan.catalog import op_id
from torchcts.strategies import value_transforms
from torchcts.strategies.cpu_acceptance import original_runs, runs_on_cpu
from torchcts.strategies.fingerprint import fingerprint
from torchcts.strategies.layouts import describe_layout, draw_relayout
from torchcts.strategies.placement import copy_exact
from torchcts.strategies.opinfo_pool import pool_key, sample_pool
from torchcts.strategies.sample_sizes import SIZE_CHANGE, size_changed
from torchcts.strategies.sample_walk import copied, is_dense, map_sample
from torchcts.strategies.seeding import seed_of, seeded_globals
from torchcts.strategies.values import draw_special_values, is_float_like
from torchcts.strategies.variants import VARIANTS, variant_exists

# Names other modules and tests import from here (tests clear the pool cache through `samples._pools`)
from torchcts.strategies.opinfo_pool import REFERENCE_INPUTS_LEVEL, _pools, cpu_pinned_paths  # noqa: F401
from torchcts.strategies.variants import call_variant  # noqa: F401

# Ops whose cases keep the sample's own layout: those that address their input's storage
# directly (the result depends on the layout by definition), and those whose CPU kernel -- the
# oracle -- reads a non-contiguous argument wrongly (found by TorchCTS's validation run with
# torch 2.13: native_group_norm reads a strided weight as if contiguous, into the gaps).
LAYOUT_DEPENDENT_OPS = re.compile(r"as_strided|^native_group_norm$")
# The same, for some dtypes only (found by the validation run with torch 2.13: grid_sample's float16 and
# bfloat16 CPU kernel reads garbage -- different on every run -- from an input such as (2, 1, 32, 32) with
# strides (55296, 2, 1728, 18), while float32 and float64 read it right).
LAYOUT_DEPENDENT_DTYPES = {"nn.functional.grid_sample": (torch.float16, torch.bfloat16)}
# Ops whose integer operands must hold distinct values: with a repeated index, which write wins is
# unspecified (scatter, index_put, index_copy and put without accumulation). Their integer operands
# never get a broadcast (stride-0) dimension, which would repeat an index.
DISTINCT_INDICES_OPS = re.compile(r"(^|\.)(scatter|index_put|index_copy|put|_unsafe_index_put)_?$")
# Ops that write an operand although their name has no trailing underscore: (op pattern, where the written
# operands sit (a prefix of `map_sample`'s names), the keyword that makes them write, None: always).
# Written operands never get overlapping layouts or broadcasts.
_WRITTEN_OPERANDS = (
    (re.compile(r"^nn\.functional\.embedding$"), ("input",), "max_norm"),  # renormalises the weight rows
    (re.compile(r"batch_norm|instance_norm"), ("args", "kwargs"), None),  # running statistics (training mode)
)
# Transform slots per sample, one per tensor in input/args/kwargs order; every tensor past the last slot shares
# it (lists of many tensors: stack, multi_dot), so every operand can be transformed and the draw has a fixed length.
TRANSFORM_SLOTS = 6
# Semantic level (2: normal correctness on common surfaces) from which cases may change values
# or shapes: ties, broadcast, empty and tile-boundary sizes, 4-d channels_last. Where repeated
# values would make a result unspecified or ill-conditioned, ties, broadcast and growth are off
# (`value_transforms.repeats_are_safe`).
VALUE_CHANGES_LEVEL = 2

# What happens to each tensor: one small integer per slot, a bit per transform. Shrinking takes it
# to 0 (untouched), then to the fewest bits that still fail.
_KIND_RELAYOUT, _KIND_SPECIAL, _KIND_TIE, _KIND_BROADCAST = 1, 2, 4, 8
_NEEDS_CHOICE = _KIND_TIE | _KIND_BROADCAST
_SLOT_KINDS = st.tuples(*[st.integers(0, 15)] * TRANSFORM_SLOTS)
_CHOICE = st.integers(0, 2**16)


class NoSamples(InvalidArgument):
    """The op yields no sample inputs for this dtype; nothing can be drawn."""


@attrs.frozen(eq=False)
class Case:
    """One drawn input for one op variant and dtype, on CPU."""

    op_id: str
    variant: str
    dtype: torch.dtype
    sample: Any  # a SampleInput holding CPU tensors
    sample_index: int
    transforms: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.op_id, self.variant, self.dtype, self.sample)

    def describe(self) -> str:
        what = "; ".join(self.transforms) if self.transforms else "sample as given"
        return f"{self.op_id} ({self.variant}, {dtype_names.canonical_name(self.dtype)}) sample {self.sample_index}: {what}"


@attrs.frozen
class _Drawing:
    """What `opinfo_samples` settled for one op, variant, dtype and level before any draw."""

    op: Any
    variant: str
    dtype: torch.dtype
    level: int
    max_samples: int
    allowed: int  # the _KIND_* bits a slot may use
    layout_free: bool
    writes_input: bool
    changes_values: bool
    integers_kept: bool
    integer_broadcast: bool  # integer and bool operands may get a broadcast (stride-0) dimension
    validate: bool

    @property
    def pool_key(self) -> tuple:
        return pool_key(self.op, self.dtype, self.level, self.max_samples)


def opinfo_samples(op: Any, dtype: torch.dtype, device: str | torch.device | None = None, manifest: Any = None,
                   level: int = 1, *, variant: str = "function", relayout: bool = True,
                   special_values: bool | None = None, value_changes: bool = True,
                   validate: bool = True) -> st.SearchStrategy[Case]:
    """Cases for `op` (an OpInfo) and `dtype`, drawn from the op's own sample inputs.

    `manifest` (optional) caps the pool at its `max_samples` and decides special values: they
    are mixed in only where it claims `ieee754` for the op (`special_values` overrides). `device`
    is not used to build cases (they are always built on CPU; place them with
    `torchcts.strategies.place`); it is accepted so the call reads like the plan's item.
    `value_changes` allows, from semantic level 2, ties, broadcast, resized dimensions and
    4-d channels_last views (`torchcts.strategies.value_transforms`).

    Shrinks toward the first sample, unchanged.
    """
    if variant not in VARIANTS:
        raise InvalidArgument(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    if not variant_exists(op, variant):
        raise InvalidArgument(f"{op_id(op)} has no {variant} variant")
    if dtype not in op.supported_dtypes("cpu"):
        raise InvalidArgument(f"{op_id(op)} does not support {dtype} on CPU")
    if special_values is None:
        special_values = manifest is None or manifest.ieee754_claimed_for(op.name)
    layout_free = relayout and not LAYOUT_DEPENDENT_OPS.search(op.name) \
        and dtype not in LAYOUT_DEPENDENT_DTYPES.get(op.name, ())
    changes_values = value_changes and level >= VALUE_CHANGES_LEVEL
    allowed = (_KIND_RELAYOUT if layout_free else 0) | (_KIND_SPECIAL if special_values else 0)
    if changes_values:
        allowed |= _KIND_TIE | (_KIND_BROADCAST if layout_free else 0)
    how = _Drawing(op, variant, dtype, level, max_samples=manifest.max_samples if manifest is not None else 0,
                   allowed=allowed, layout_free=layout_free, writes_input=variant == "inplace" or op.name.endswith("_"),
                   changes_values=changes_values, validate=validate,
                   integers_kept=bool(value_transforms.INTEGER_VALUES_KEPT.search(op.name)),
                   integer_broadcast=not (value_transforms.INTEGER_VALUES_KEPT.search(op.name)
                                          or DISTINCT_INDICES_OPS.search(op.name)))
    draw_seed = seed_of("draw", *how.pool_key)

    @st.composite
    def draw_case(draw) -> Case:
        # Transforms run the op on CPU (to validate or size a case): a random op then reads the
        # global RNGs, which must not carry state from earlier items into this draw.
        with seeded_globals(draw_seed):
            return _draw_case(draw, how)

    return draw_case()


def _draw_case(draw, how: _Drawing) -> Case:
    op, dtype = how.op, how.dtype
    pool = sample_pool(op, dtype, how.level, how.max_samples)
    if not pool:
        raise NoSamples(f"{op_id(op)} yields no sample inputs for {dtype}")
    index = draw(st.integers(0, len(pool) - 1), label="sample index")
    # A fixed number of transform slots, drawn whatever the sample holds: every untransformed
    # case is then a draw sequence of the same length, and shrinking reaches sample 0.
    kinds = draw(_SLOT_KINDS, label="transform slots")
    original = pool[index]
    repeats_safe = value_transforms.repeats_are_safe(op.name, original)
    notes: list[str] = []
    start = original
    if how.changes_values:
        size_change = draw(SIZE_CHANGE, label="size change")
        start, note = size_changed(op, how.variant, dtype, original, size_change, repeats_safe, how.layout_free)
        notes.extend([note] if note else [])
    counter = iter(range(10**6))
    written_operands = _written_operands(op.name, start)

    def transform(where: str, t: torch.Tensor, written: bool) -> torch.Tensor:
        if not is_dense(t):
            return t
        t = copy_exact(t)
        slot = min(next(counter), TRANSFORM_SLOTS - 1)  # the last slot covers every further tensor
        written = written or where.startswith(written_operands)
        kind = kinds[slot] & how.allowed  # each bit one transform (see _KIND_*); 0, the shrink target: none
        if not repeats_safe:
            kind &= ~(_KIND_TIE | _KIND_BROADCAST)
        t, changes = _transformed(draw, how, where, t, written, kind)
        notes.extend(f"{where}: {change}" for change in changes if change)
        return t

    sample = map_sample(start, transform, how.writes_input)
    case = Case(op_id(op), how.variant, dtype, sample, index, tuple(notes))
    if how.validate and notes and runs_on_cpu(op, how.variant, sample) is False \
            and original_runs(op, how.variant, original, (how.pool_key, how.variant, index)):
        case = Case(op_id(op), how.variant, dtype, copied(original), index, ("transforms dropped: CPU rejects them",))
    return case


def _written_operands(op_name: str, sample: Any) -> tuple[str, ...]:
    """Where (prefixes of `map_sample` names) the op writes operands other than an in-place variant's input."""
    return tuple(where for pattern, operands, keyword in _WRITTEN_OPERANDS if pattern.search(op_name)
                 and (keyword is None or sample.kwargs.get(keyword) is not None) for where in operands)


def _transformed(draw, how: _Drawing, where: str, t: torch.Tensor, written: bool,
                 kind: int) -> tuple[torch.Tensor, list[str]]:
    """One tensor with the transforms the `kind` bits select, and what each did (in words)."""
    data = t.dtype == how.dtype or (is_float_like(t.dtype) and is_float_like(how.dtype))
    changes: list[str] = []
    choice = draw(_CHOICE, label=f"{where} transform choice") if kind & _NEEDS_CHOICE else 0
    laid_out = t
    if kind & _KIND_TIE and data:
        t, note = value_transforms.with_tie(t, choice)
        changes.append(note)
    if kind & _KIND_SPECIAL and data:
        t, note = _with_specials(draw, where, t, how.integers_kept, near_limits=how.changes_values)
        changes.append(note)
    t = value_transforms.in_layout_of(laid_out, t)  # value changes keep the drawn layout
    if kind & _KIND_BROADCAST and (data or how.integer_broadcast) and not written:
        t, note = value_transforms.broadcast_along(t, choice)
        changes.append(note)
    elif kind & _KIND_RELAYOUT:
        t = draw_relayout(draw, t, allow_overlap=not written)
        changes.append(describe_layout(t))
    return t, changes


def _with_specials(draw, where: str, t: torch.Tensor, integers_kept: bool, near_limits: bool = False
                   ) -> tuple[torch.Tensor, str]:
    """Special values in a data tensor: a few at drawn positions, or the whole table from a drawn start (with
    `near_limits`, from level 2, float16 and bfloat16 tensors at times get values near the dtype's range limits).

    Integers get them only in the op's input (other integer tensors are indices and sizes), never
    where the op sizes or orders by value, and without INT_MIN (see `division_safe_specials`).
    """
    if not is_float_like(t.dtype) and (where != "input" or integers_kept or t.dtype == torch.bool):
        return t, ""
    return draw_special_values(draw, t, where, division_safe=not is_float_like(t.dtype),
                               near_limits=near_limits)  # shrinks to few specials
