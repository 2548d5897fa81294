"""Cases drawn from an OpInfo's own sample inputs, re-laid-out and with special values mixed in.

`opinfo_samples` picks one of the op's samples (shrinking toward the first), then, per dense
tensor in it, may re-lay it out in memory and (where special values are claimed) put NaN, inf,
-0.0 and friends into floating tensors, and division-safe integer extremes into an integer
input. Other integer tensors (indices, sizes) keep their values, so they stay in range; a tensor
the variant writes to never gets an overlapping layout. From semantic level 2, data tensors may
also get ties or broadcast (stride-0) dimensions, and the sample a size change: a dimension
emptied or grown past a tile boundary (with the dimensions that must agree with it), or every
tensor raised to 4-d channels_last where the op acts elementwise.

A transform can make a case the CPU itself rejects (`Tensor.view` needs compatible strides).
With `validate=True` the transformed case is run on CPU once; if CPU rejects it but accepts the
untransformed sample, the case falls back to the sample as given and says so. These CPU runs go
through `probes` (a caller that expects CPU crashes runs them in a forked child).
"""

from __future__ import annotations

import collections
import hashlib
import math
import re
from typing import Any, Callable

import attrs
import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts import dtypes as dtype_names
from torchcts.plan.catalog import op_id
from torchcts.strategies.fingerprint import fingerprint
from torchcts.strategies.layouts import describe_layout, draw_relayout
from torchcts.strategies.placement import copy_exact
from torchcts.strategies.seeding import seed_of, seeded_globals
from torchcts.strategies import probes, value_transforms
from torchcts.strategies.fingerprint import same_bits
from torchcts.strategies.values import apply_special_picks, apply_special_table, is_float_like, special_picks

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
    with seeded_globals(seed, fill_uninitialized=True):
        if level >= REFERENCE_INPUTS_LEVEL and op.reference_inputs_func is not None:
            samples = op.reference_inputs("cpu", dtype, requires_grad=False)
        else:
            samples = op.sample_inputs("cpu", dtype, requires_grad=False)
        pool = tuple(samples if not max_samples else _first(samples, max_samples))
    _pools[key] = pool
    if len(_pools) > _POOL_CACHE_SIZE:
        _pools.popitem(last=False)
    return pool


_pinned: dict[tuple[str, torch.dtype], frozenset[str]] = {}


def cpu_pinned_paths(op: Any, dtype: torch.dtype) -> frozenset[str]:
    """Paths ("args[1]", "kwargs.indices") of sample tensors the op takes on CPU whatever the device.

    OpInfo builds such arguments on CPU even when asked for another device (`tensor_split`'s
    indices tensor): the op's samples are made once for the meta device, and tensors that are
    still on CPU there are pinned. `place(..., keep_on_cpu=...)` leaves them on CPU.
    """
    key = (op_id(op), dtype)
    if key not in _pinned:
        found: set[str] = set()
        try:
            with seeded_globals(0, fill_uninitialized=True):
                for sample in _first(op.sample_inputs("meta", dtype, requires_grad=False), 64):
                    _map_sample(sample, lambda where, t, written: found.add(where) or t
                                if t.device.type == "cpu" else t, False)
        except Exception:  # a sample function that cannot make meta samples: nothing is known to be pinned
            found = set()
        _pinned[key] = frozenset(found)
    return _pinned[key]


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
    `value_changes` allows, from semantic level 2, ties, broadcast, resized dimensions and
    4-d channels_last views (`torchcts.strategies.value_transforms`).

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
    changes_values = value_changes and level >= VALUE_CHANGES_LEVEL
    allowed = (_KIND_RELAYOUT if layout_free else 0) | (_KIND_SPECIAL if special_values else 0)
    if changes_values:
        allowed |= _KIND_TIE | (_KIND_BROADCAST if layout_free else 0)
    integers_kept = value_transforms.INTEGER_VALUES_KEPT.search(op.name)

    draw_seed = seed_of("draw", *_pool_key(op, dtype, level, max_samples))

    @st.composite
    def draw_case(draw) -> Case:
        # Transforms run the op on CPU (to validate or size a case): a random op then reads the
        # global RNGs, which must not carry state from earlier items into this draw.
        with seeded_globals(draw_seed):
            return _draw_case(draw)

    def _draw_case(draw) -> Case:
        pool = sample_pool(op, dtype, level, max_samples)
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
        if changes_values:
            size_change = draw(_SIZE_CHANGE, label="size change")
            if size_change % _SIZE_MODES:
                start, note = _size_changed(op, variant, dtype, original, size_change, repeats_safe, layout_free)
                notes.extend([note] if note else [])
        counter = iter(range(10**6))

        def transform(where: str, t: torch.Tensor, written: bool) -> torch.Tensor:
            if not _dense(t):
                return t
            t = copy_exact(t)
            slot = next(counter)
            if slot >= TRANSFORM_SLOTS:
                return t
            kind = kinds[slot] & allowed  # each bit one transform (see _KIND_*); 0, the shrink target: none
            if not repeats_safe:
                kind &= ~(_KIND_TIE | _KIND_BROADCAST)
            data = t.dtype == dtype or (is_float_like(t.dtype) and is_float_like(dtype))
            changes: list[str] = []
            choice = draw(_CHOICE, label=f"{where} transform choice") if kind & _NEEDS_CHOICE else 0
            laid_out = t
            if kind & _KIND_TIE and data:
                t, note = value_transforms.with_tie(t, choice)
                changes.append(note)
            if kind & _KIND_SPECIAL and data:
                t, note = _with_specials(draw, where, t, integers_kept)
                changes.append(note)
            t = value_transforms.in_layout_of(laid_out, t)  # value changes keep the drawn layout
            if kind & _KIND_BROADCAST and data and not written:
                t, note = value_transforms.broadcast_along(t, choice)
                changes.append(note)
            elif kind & _KIND_RELAYOUT:
                t = draw_relayout(draw, t, allow_overlap=not written)
                changes.append(describe_layout(t))
            notes.extend(f"{where}: {change}" for change in changes if change)
            return t

        sample = _map_sample(start, transform, writes_input)
        case = Case(op_id(op), variant, dtype, sample, index, tuple(notes))
        verdict_key = (_pool_key(op, dtype, level, max_samples), variant, index)
        if validate and notes and _runs_on_cpu(op, variant, sample) is False \
                and _original_runs(op, variant, original, verdict_key):
            plain = _map_sample(original, lambda where, t, written: copy_exact(t) if _dense(t) else t, writes_input)
            case = Case(op_id(op), variant, dtype, plain, index, ("transforms dropped: CPU rejects them",))
        return case

    return draw_case()


def _with_specials(draw, where: str, t: torch.Tensor, integers_kept: bool) -> tuple[torch.Tensor, str]:
    """Special values in a data tensor: a few at drawn positions, or the whole table from a drawn start.

    Integers get them only in the op's input (other integer tensors are indices and sizes), never
    where the op sizes or orders by value, and without INT_MIN (see `division_safe_specials`).
    """
    if not is_float_like(t.dtype) and (where != "input" or integers_kept or t.dtype == torch.bool):
        return t, ""
    safe = not is_float_like(t.dtype)
    spread = draw(_SPREAD, label=f"{where} special spread")
    if spread:
        return apply_special_table(t, spread - 1, division_safe=safe)
    return apply_special_picks(t, draw(special_picks(2), label=f"{where} special values"), division_safe=safe)


def _size_changed(op: Any, variant: str, dtype: torch.dtype, sample: Any, size_change: int, repeats_safe: bool,
                  layout_free: bool) -> tuple[Any, str]:
    """The sample with a dimension emptied or grown past a tile boundary, or raised to 4-d
    channels_last; the sample itself (and no note) when the change does not fit the op.

    Which dimensions must agree with the chosen one is not known, so every dimension of the same
    size changes with it (a lone tensor tries the dimension alone first); the CPU must
    accept the result. A grown case must also stay within `_GROW_BUDGET` elements in and out (the
    output size is found on the meta device, without computing). Ops that index without bounds
    checks (`_unsafe_*`) and samples holding index tensors keep their sizes.
    """
    mode, choice = _MODE_OF[size_change % _SIZE_MODES], size_change // _SIZE_MODES
    tensors = _dense_tensors(sample)
    if "unsafe" in op.name or _holds_indices(sample, dtype):
        return sample, ""
    if mode == _RAISE:
        # only tensors of one shape (an elementwise op's operands): a kernel given some tensors
        # reshaped and others not may trust the mismatch and crash
        if not layout_free or not tensors or tensors[0].dim() > 3 or any(t.shape != tensors[0].shape for t in tensors):
            return sample, ""
        raised = _map_sample(sample, lambda where, t, written: value_transforms.raised_to_4d(t) if _dense(t) else t,
                             False)
        if not _acts_elementwise(op, variant, sample, raised):
            return sample, ""
        return raised, "raised to 4-d, channels_last"
    grow = mode == _GROW
    if grow and not repeats_safe:
        return sample, ""
    dims = [(k, d) for k, t in enumerate(tensors) for d in range(t.dim()) if t.shape[d] > (1 if grow else 0)]
    if not dims:
        return sample, ""
    named = _named_dim(sample, tensors[0]) if tensors[0] is sample.input else None
    if choice % 2 and named is not None and (0, named) in dims:
        k, d = 0, named  # half the time, the dimension the op reduces, scans or sorts along
    else:
        k, d = dims[(choice // 2) % len(dims)]
    choice //= 2 * len(dims)
    side = tensors[k].shape[d]
    # Every dimension of that size changes together (kernels trust that related sizes agree, and
    # some crash rather than raise); a lone tensor may also change that one dimension alone.
    groups = [{(j, e) for j, t in enumerate(tensors) for e in range(t.dim()) if t.shape[e] == side}]
    if len(tensors) == 1:
        groups.insert(0, {(k, d)})
    tried: list[set] = []
    for group in groups:
        if group in tried:
            continue
        tried.append(group)
        size = 0
        if grow:
            sizes = [s for s in _GROWN_SIZES if s > side and _numel_after(tensors, group, s) <= _GROW_BUDGET]
            if not sizes:
                continue
            size = sizes[choice % len(sizes)]
        changed = _resize_tensors(sample, group, size)
        if grow and not _within_budget(op, variant, changed):
            continue
        if _runs_on_cpu(op, variant, changed) is not False:  # None: CPU died on it; the isolated check accounts it
            what = f"dim {d} of tensor {k}" + (f" and {len(group) - 1} related" if len(group) > 1 else "")
            return changed, f"{what} {'grown to' if grow else 'cut to'} {size}"
    return sample, ""


def _named_dim(sample: Any, input: torch.Tensor) -> int | None:
    """The input dimension named by the sample's `dim` keyword or first integer argument, if any."""
    dim = sample.kwargs.get("dim")
    if dim is None:
        dim = next((a for a in sample.args if isinstance(a, int) and not isinstance(a, bool)), None)
    if not isinstance(dim, int) or isinstance(dim, bool) or not -input.dim() <= dim < max(input.dim(), 1):
        return None
    return dim % input.dim() if input.dim() else None


def _holds_indices(sample: Any, dtype: torch.dtype) -> bool:
    """Whether the sample has integer tensors that are indices, offsets or lengths rather than data:
    their values refer to other tensors' sizes, which kernels trust (embedding_bag's offsets,
    segment_reduce's lengths), so resizing around them can crash the process."""
    found: list[bool] = []

    def look(where: str, t: torch.Tensor, written: bool) -> torch.Tensor:
        if _dense(t) and not is_float_like(t.dtype) and t.dtype != torch.bool:
            found.append(t.dtype != dtype or (dtype == torch.int64 and where != "input"))
        return t

    _map_sample(sample, look, False)
    return any(found)


def _dense_tensors(sample: Any) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    _map_sample(sample, lambda where, t, written: found.append(t) or t if _dense(t) else t, False)
    return found


def _numel_after(tensors: list[torch.Tensor], group: set, size: int) -> int:
    total = 0
    for k, t in enumerate(tensors):
        shape = [size if (k, d) in group else side for d, side in enumerate(t.shape)]
        total += math.prod(shape)
    return total


def _resize_tensors(sample: Any, group: set, size: int) -> Any:
    counter = iter(range(10**6))

    def change(where: str, t: torch.Tensor, written: bool) -> torch.Tensor:
        if not _dense(t):
            return t
        k = next(counter)
        for dim in sorted(d for j, d in group if j == k):
            t = value_transforms.resized(t, dim, size)
        return t

    return _map_sample(sample, change, False)


def _within_budget(op: Any, variant: str, sample: Any) -> bool:
    if sum(t.numel() for t in _dense_tensors(sample)) > _GROW_BUDGET:
        return False
    try:
        result = call_variant(op, variant, _map_sample(sample, lambda where, t, written: t.to("meta") if _dense(t) else t,
                                                       False))
    except Exception:  # no meta kernel, or a data-dependent output: the size is unknown, so no growth
        return False
    outputs = [t for t in torch.utils._pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
    return sum(t.numel() for t in outputs) <= _GROW_BUDGET


def _acts_elementwise(op: Any, variant: str, sample: Any, raised: Any) -> bool:
    """Whether the op's result on the 4-d views is its result on the sample, viewed the same way."""
    def compare() -> None:  # raises unless elementwise: the probe may run in another process
        if not _same_viewed(call_variant(op, variant, _copied(sample)), call_variant(op, variant, _copied(raised))):
            raise _NotElementwise

    return probes.probe(compare, raised) is True


class _NotElementwise(Exception):
    pass


def _same_viewed(expected: Any, got: Any) -> bool:
    pairs = list(zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(got)))
    if not pairs or len(pairs) != len(torch.utils._pytree.tree_leaves(expected)):
        return False
    for want, have in pairs:
        if not isinstance(want, torch.Tensor) or not isinstance(have, torch.Tensor) or not (_dense(want) and _dense(have)):
            return False
        if have.dim() != 4 or have.numel() != want.numel() or have.dtype != want.dtype:
            return False
        if not same_bits(have.reshape(want.shape), want):
            return False
    return True


def _copied(sample: Any) -> Any:
    return _map_sample(sample, lambda where, t, written: copy_exact(t) if _dense(t) else t, False)


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
_KIND_RELAYOUT, _KIND_SPECIAL, _KIND_TIE, _KIND_BROADCAST = 1, 2, 4, 8
_NEEDS_CHOICE = _KIND_TIE | _KIND_BROADCAST
_SLOT_KINDS = st.tuples(*[st.integers(0, 15)] * TRANSFORM_SLOTS)
_CHOICE = st.integers(0, 2**16)
_SPREAD = st.integers(0, 4)  # 0: a few special values at drawn positions; s > 0: the whole table from s - 1
# A size change of the whole sample: n % 5 picks none, emptied, grown (twice the weight: tile
# bugs need a particular size in a particular dimension) or raised; the rest of n chooses.
_SIZE_CHANGE = st.integers(0, 2**20)
_NONE, _EMPTY, _GROW, _RAISE = 0, 1, 2, 3
_MODE_OF = (_NONE, _EMPTY, _GROW, _GROW, _RAISE)
_SIZE_MODES = len(_MODE_OF)
# Grown sizes: exact tile multiples (off-by-one at the boundary) and one past them (a partial
# last tile), for warp/vector-sized (32), block-sized (1024) and larger (4096) tiles.
_GROWN_SIZES = (32, 33, 1024, 1025, 4096, 4097)
_GROW_BUDGET = 2**17  # elements in a grown case's tensors, and in its outputs
# Semantic level (2: normal correctness on common surfaces) from which cases may change values
# or shapes: ties, broadcast, empty and tile-boundary sizes, 4-d channels_last. Where repeated
# values would make a result unspecified or ill-conditioned, ties, broadcast and growth are off
# (`value_transforms.repeats_are_safe`).
VALUE_CHANGES_LEVEL = 2


def _runs_on_cpu(op: Any, variant: str, sample: Any) -> bool | None:
    """Whether CPU accepts the case (True), rejects it (False), or died or hung on it (None)."""
    def call() -> None:
        call_variant(op, variant, _map_sample(sample, lambda where, t, written: copy_exact(t) if _dense(t) else t,
                                              False))

    return probes.probe(call, sample)


_original_verdicts: collections.OrderedDict[tuple, bool | None] = collections.OrderedDict()


def _original_runs(op: Any, variant: str, sample: Any, key: tuple) -> bool:
    """Whether CPU accepts the untransformed sample (remembered per pool, variant and index)."""
    if key not in _original_verdicts:
        _original_verdicts[key] = _runs_on_cpu(op, variant, sample)
        if len(_original_verdicts) > 4096:
            _original_verdicts.popitem(last=False)
    return _original_verdicts[key] is True
