"""Cases drawn from an OpInfo's own sample inputs, re-laid-out and with special values mixed in.

`opinfo_samples` picks one of the op's samples (shrinking toward the first), then, per dense
tensor in it, may re-lay it out in memory and (where special values are claimed) put NaN, inf,
-0.0 and friends into floating tensors. Integer tensors (indices, sizes) keep their values, so
they stay in range; a tensor the variant writes to never gets an overlapping layout. From
semantic level 5, data tensors may also get ties, broadcast (stride-0) dimensions, or (when the
sample holds a single tensor) an emptied or tile-boundary-grown shape.

A transform can make a case the CPU itself rejects (`Tensor.view` needs compatible strides).
With `validate=True` the transformed case is run on CPU once; if CPU rejects it but accepts the
untransformed sample, the case falls back to the sample as given and says so.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import random
import re
from typing import Any, Callable, Iterator

import numpy as np

import attrs
import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts import dtypes as dtype_names
from torchcts.opinfo_catalog import op_id
from torchcts.strategies.fingerprint import fingerprint
from torchcts.strategies.layouts import describe_layout, draw_relayout
from torchcts.strategies.placement import copy_exact
from torchcts.strategies import value_transforms
from torchcts.strategies.values import apply_special_picks, is_float_like, special_picks

VARIANTS = ("function", "method", "inplace", "out")
# Ops whose cases keep the sample's own layout: those that address their input's storage
# directly (the result depends on the layout by definition), and those whose CPU kernel -- the
# oracle -- reads a non-contiguous argument wrongly (found by TorchCTS's validation run with
# torch 2.13: native_group_norm reads a strided weight as if contiguous, into the gaps).
LAYOUT_DEPENDENT_OPS = re.compile(r"as_strided|^native_group_norm$")
REFERENCE_INPUTS_LEVEL = 3  # from this semantic level on, reference_inputs join the sample pool
TRANSFORM_SLOTS = 4  # tensors per sample that may be transformed (the first four, in input/args/kwargs order)
_POOL_CACHE_SIZE = 64


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


def _variant_exists(op: Any, variant: str) -> bool:
    return {"function": True, "method": op.method_variant is not None, "inplace": op.inplace_variant is not None,
            "out": bool(op.supports_out)}[variant]


_pools: collections.OrderedDict[tuple, tuple[Any, ...]] = collections.OrderedDict()


def sample_pool(op: Any, dtype: torch.dtype, level: int = 1, max_samples: int = 0) -> tuple[Any, ...]:
    """The op's CPU samples for `dtype` (reference inputs too from level 3), made deterministically.

    OpInfo sample functions draw from torch's global RNG; they run under a seed derived from the
    op id, dtype and level, inside `fork_rng`, so every process gets the same samples and the
    caller's RNG state is untouched. Cached per process (the most recent few pools).
    """
    key = _pool_key(op, dtype, level, max_samples)
    if key in _pools:
        _pools.move_to_end(key)
        return _pools[key]
    seed = int(hashlib.sha256(repr(key).encode()).hexdigest()[:8], 16)
    with _seeded_global_rngs(seed):
        if level >= REFERENCE_INPUTS_LEVEL and op.reference_inputs_func is not None:
            samples = op.reference_inputs("cpu", dtype, requires_grad=False)
        else:
            samples = op.sample_inputs("cpu", dtype, requires_grad=False)
        pool = tuple(samples if not max_samples else _first(samples, max_samples))
    _pools[key] = pool
    if len(_pools) > _POOL_CACHE_SIZE:
        _pools.popitem(last=False)
    return pool


@contextlib.contextmanager
def _seeded_global_rngs(seed: int) -> Iterator[None]:
    """Seed torch's, Python's and NumPy's global RNGs (sample functions use all three), then restore them."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


def _pool_key(op: Any, dtype: torch.dtype, level: int, max_samples: int) -> tuple:
    return (op_id(op), dtype, level >= REFERENCE_INPUTS_LEVEL, max_samples)


def _first(iterable, count: int) -> list:
    items = []
    for item in iterable:
        items.append(item)
        if len(items) == count:
            break
    return items


def opinfo_samples(op: Any, dtype: torch.dtype, device: str | torch.device | None = None, manifest: Any = None,
                   level: int = 1, *, variant: str = "function", relayout: bool = True,
                   special_values: bool | None = None, value_changes: bool = True,
                   validate: bool = True) -> st.SearchStrategy[Case]:
    """Cases for `op` (an OpInfo) and `dtype`, drawn from the op's own sample inputs.

    `manifest` (optional) caps the pool at its `max_samples` and decides special values: they
    are mixed in only where it claims `ieee754` for the op (`special_values` overrides). `device`
    is not used to build cases (they are always built on CPU; place them with
    `torchcts.strategies.place`); it is accepted so the call reads like the plan's item.
    `value_changes` allows, from semantic level 5, ties, broadcast, emptied and grown data
    tensors (`torchcts.strategies.value_transforms`).

    Shrinks toward the first sample, unchanged.
    """
    if variant not in VARIANTS:
        raise InvalidArgument(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
    if not _variant_exists(op, variant):
        raise InvalidArgument(f"{op_id(op)} has no {variant} variant")
    if dtype not in op.supported_dtypes("cpu"):
        raise InvalidArgument(f"{op_id(op)} does not support {dtype} on CPU")
    if special_values is None:
        special_values = manifest is None or manifest.ieee754_claimed_for(op.name)
    max_samples = manifest.max_samples if manifest is not None else 0
    layout_free = relayout and not LAYOUT_DEPENDENT_OPS.search(op.name)
    writes_input = variant == "inplace" or op.name.endswith("_")
    allowed = (_KIND_RELAYOUT if layout_free else 0) | (_KIND_SPECIAL if special_values else 0)
    if value_changes and level >= VALUE_CHANGES_LEVEL:
        allowed |= _KIND_TIE | _KIND_EMPTY | _KIND_GROW | (_KIND_BROADCAST if layout_free else 0)

    @st.composite
    def draw_case(draw) -> Case:
        pool = sample_pool(op, dtype, level, max_samples)
        if not pool:
            raise NoSamples(f"{op_id(op)} yields no sample inputs for {dtype}")
        index = draw(st.integers(0, len(pool) - 1), label="sample index")
        # A fixed number of transform slots, drawn whatever the sample holds: every untransformed
        # case is then a draw sequence of the same length, and shrinking reaches sample 0.
        kinds = draw(_SLOT_KINDS, label="transform slots")
        original = pool[index]
        lone = _count_dense(original) == 1
        notes: list[str] = []
        counter = iter(range(10**6))

        def transform(where: str, t: torch.Tensor, written: bool) -> torch.Tensor:
            if not _dense(t):
                return t
            t = copy_exact(t)
            slot = next(counter)
            if slot >= TRANSFORM_SLOTS:
                return t
            kind = kinds[slot] & allowed  # each bit one transform (see _KIND_*); 0, the shrink target: none
            data = t.dtype == dtype or (is_float_like(t.dtype) and is_float_like(dtype))
            changes: list[str] = []
            choice = draw(_CHOICE, label=f"{where} transform choice") if kind & _NEEDS_CHOICE else 0
            # Shape changes only where nothing else in the sample must agree with the shape (a
            # lone data tensor): CPU kernels trust related arguments, and some crash, not raise.
            if kind & _KIND_EMPTY and data and lone:
                t, note = value_transforms.emptied(t, choice)
                changes.append(note)
            elif kind & _KIND_GROW and data and lone:
                t, note = value_transforms.grown(t, choice, _GROW_BUDGET)
                changes.append(note)
            if kind & _KIND_TIE and data:
                t, note = value_transforms.with_tie(t, choice, choice // 7 + 1)
                changes.append(note)
            # Special values go into floating data only: integer extremes make CPU kernels that
            # trust values die (SIGFPE on min / -1 in gcd/lcm/floor_divide) or allocate by value
            # (bincount of INT_MAX wants 16 GB). They wait for crash isolation.
            if kind & _KIND_SPECIAL and data and is_float_like(t.dtype):
                t, note = apply_special_picks(t, draw(special_picks(2), label=f"{where} special values"))
                changes.append(note)
            if kind & _KIND_BROADCAST and data and not written:
                t, note = value_transforms.broadcast_along(t, choice)
                changes.append(note)
            elif kind & _KIND_RELAYOUT:
                t = draw_relayout(draw, t, allow_overlap=not written)
                changes.append(describe_layout(t))
            notes.extend(f"{where}: {change}" for change in changes if change)
            return t

        sample = _map_sample(original, transform, writes_input)
        case = Case(op_id(op), variant, dtype, sample, index, tuple(notes))
        verdict_key = (_pool_key(op, dtype, level, max_samples), variant, index)
        if validate and notes and not _runs_on_cpu(op, variant, sample) and _original_runs(op, variant, original,
                                                                                         verdict_key):
            plain = _map_sample(original, lambda where, t, written: copy_exact(t) if _dense(t) else t, writes_input)
            case = Case(op_id(op), variant, dtype, plain, index, ("transforms dropped: CPU rejects them",))
        return case

    return draw_case()


def _count_dense(sample: Any) -> int:
    found = []
    _map_sample(sample, lambda where, t, written: found.append(t) or t if _dense(t) else t, False)
    return len(found)


def _dense(t: torch.Tensor) -> bool:
    return t.layout == torch.strided and not t.is_nested and not t.is_quantized


def _map_sample(sample: Any, transform: Callable[[str, torch.Tensor, bool], torch.Tensor], writes_input: bool) -> Any:
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


# What happens to each of the first TRANSFORM_SLOTS tensors: one small integer each, a bit per
# transform. Shrinking takes it to 0 (untouched), then to the fewest bits that still fail.
_KIND_RELAYOUT, _KIND_SPECIAL, _KIND_TIE, _KIND_BROADCAST, _KIND_EMPTY, _KIND_GROW = 1, 2, 4, 8, 16, 32
_NEEDS_CHOICE = _KIND_TIE | _KIND_BROADCAST | _KIND_EMPTY | _KIND_GROW
_SLOT_KINDS = st.tuples(*[st.integers(0, 63)] * TRANSFORM_SLOTS)
_CHOICE = st.integers(0, 2**16)
_GROW_BUDGET = 2**15  # elements of a grown tensor
# Semantic level (5: advanced numerics, layouts, strides) from which cases may change values or
# shapes (ties, broadcast, empty, grown past tile boundaries). Such inputs can be degenerate (a
# singular matrix, tied medians with unspecified indices), so they stay out of levels 1 to 4,
# whose validation runs must be clean.
VALUE_CHANGES_LEVEL = 5


def _runs_on_cpu(op: Any, variant: str, sample: Any) -> bool:
    probe = _map_sample(sample, lambda where, t, written: copy_exact(t) if _dense(t) else t, False)
    try:
        call_variant(op, variant, probe)
    except Exception:
        return False
    return True


_original_verdicts: collections.OrderedDict[tuple, bool] = collections.OrderedDict()


def _original_runs(op: Any, variant: str, sample: Any, key: tuple) -> bool:
    """Whether CPU accepts the untransformed sample (remembered per pool, variant and index)."""
    if key not in _original_verdicts:
        _original_verdicts[key] = _runs_on_cpu(op, variant, sample)
        if len(_original_verdicts) > 4096:
            _original_verdicts.popitem(last=False)
    return _original_verdicts[key]
