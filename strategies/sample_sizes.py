"""Size changes of a whole OpInfo sample (semantic level 2): a dimension emptied or grown past a tile
boundary, together with the dimensions that must agree with it, or every tensor raised to 4-d
channels_last where the op acts elementwise.

One drawn integer (`SIZE_CHANGE`) picks the change and its details; 0 modulo the number of modes,
the shrink target, is no change. A change that does not fit the op leaves the sample as it is.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from hypothesis import strategies as st

from torchcts.strategies import probes, value_transforms
from torchcts.strategies.cpu_acceptance import runs_on_cpu
from torchcts.strategies.fingerprint import same_bits
from torchcts.strategies.sample_walk import copied, dense_tensors, is_dense, map_sample
from torchcts.strategies.values import is_float_like
from torchcts.strategies.variants import call_variant

# A size change of the whole sample: n % 5 picks none, emptied, grown (twice the weight: tile
# bugs need a particular size in a particular dimension) or raised; the rest of n chooses.
SIZE_CHANGE = st.integers(0, 2**20)
_NONE, _EMPTY, _GROW, _RAISE = 0, 1, 2, 3
_MODE_OF = (_NONE, _EMPTY, _GROW, _GROW, _RAISE)
_SIZE_MODES = len(_MODE_OF)
# Grown sizes: exact tile multiples (off-by-one at the boundary) and one past them (a partial
# last tile), for warp/vector-sized (32), block-sized (1024) and larger (4096) tiles.
GROWN_SIZES = (32, 33, 1024, 1025, 4096, 4097)
GROW_BUDGET = 2**17  # elements in a grown case's tensors, and in its outputs


def size_changed(op: Any, variant: str, dtype: torch.dtype, sample: Any, size_change: int, repeats_safe: bool,
                 layout_free: bool) -> tuple[Any, str]:
    """The sample with a dimension emptied or grown past a tile boundary, or raised to 4-d
    channels_last; the sample itself (and no note) when `size_change` picks none or the change
    does not fit the op.

    Which dimensions must agree with the chosen one is not known, so every dimension of the same
    size changes with it (a lone tensor tries the dimension alone first); the CPU must
    accept the result. A grown case must also stay within `GROW_BUDGET` elements in and out (the
    output size is found on the meta device, without computing). Ops that index without bounds
    checks (`_unsafe_*`) and samples holding index tensors keep their sizes.
    """
    mode, choice = _MODE_OF[size_change % _SIZE_MODES], size_change // _SIZE_MODES
    if mode == _NONE:
        return sample, ""
    tensors = dense_tensors(sample)
    if "unsafe" in op.name or _holds_indices(sample, dtype):
        return sample, ""
    if mode == _RAISE:
        return _raised(op, variant, sample, tensors, layout_free)
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
            sizes = [s for s in GROWN_SIZES if s > side and _numel_after(tensors, group, s) <= GROW_BUDGET]
            if not sizes:
                continue
            size = sizes[choice % len(sizes)]
        changed = _resize_tensors(sample, group, size)
        if grow and not _within_budget(op, variant, changed):
            continue
        if runs_on_cpu(op, variant, changed) is not False:  # None: CPU died on it; the isolated check accounts it
            what = f"dim {d} of tensor {k}" + (f" and {len(group) - 1} related" if len(group) > 1 else "")
            return changed, f"{what} {'grown to' if grow else 'cut to'} {size}"
    return sample, ""


def _raised(op: Any, variant: str, sample: Any, tensors: list[torch.Tensor], layout_free: bool) -> tuple[Any, str]:
    """Every tensor viewed as 4-d channels_last, when all have one shape and the op acts elementwise."""
    # only tensors of one shape (an elementwise op's operands): a kernel given some tensors
    # reshaped and others not may trust the mismatch and crash
    if not layout_free or not tensors or tensors[0].dim() > 3 or any(t.shape != tensors[0].shape for t in tensors):
        return sample, ""
    raised = map_sample(sample, lambda where, t, written: value_transforms.raised_to_4d(t) if is_dense(t) else t,
                        False)
    if not _acts_elementwise(op, variant, sample, raised):
        return sample, ""
    return raised, "raised to 4-d, channels_last"


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
        if is_dense(t) and not is_float_like(t.dtype) and t.dtype != torch.bool:
            found.append(t.dtype != dtype or (dtype == torch.int64 and where != "input"))
        return t

    map_sample(sample, look, False)
    return any(found)


def _numel_after(tensors: list[torch.Tensor], group: set, size: int) -> int:
    total = 0
    for k, t in enumerate(tensors):
        shape = [size if (k, d) in group else side for d, side in enumerate(t.shape)]
        total += math.prod(shape)
    return total


def _resize_tensors(sample: Any, group: set, size: int) -> Any:
    """The sample with each (tensor, dim) of `group` resized to `size` (`value_transforms.resized`)."""
    counter = iter(range(10**6))

    def change(where: str, t: torch.Tensor, written: bool) -> torch.Tensor:
        if not is_dense(t):
            return t
        k = next(counter)
        for dim in sorted(d for j, d in group if j == k):
            t = value_transforms.resized(t, dim, size)
        return t

    return map_sample(sample, change, False)


def _within_budget(op: Any, variant: str, sample: Any) -> bool:
    """Whether the sample and the op's outputs on it (sized on the meta device) stay within GROW_BUDGET."""
    if sum(t.numel() for t in dense_tensors(sample)) > GROW_BUDGET:
        return False
    try:
        result = call_variant(op, variant, map_sample(sample, lambda where, t, written: t.to("meta") if is_dense(t) else t,
                                                      False))
    except Exception:  # no meta kernel, or a data-dependent output: the size is unknown, so no growth
        return False
    outputs = [t for t in torch.utils._pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
    return sum(t.numel() for t in outputs) <= GROW_BUDGET


def _acts_elementwise(op: Any, variant: str, sample: Any, raised: Any) -> bool:
    """Whether the op's result on the 4-d views is its result on the sample, viewed the same way."""
    def compare() -> None:  # raises unless elementwise: the probe may run in another process
        if not _same_viewed(call_variant(op, variant, copied(sample)), call_variant(op, variant, copied(raised))):
            raise _NotElementwise

    return probes.probe(compare, raised) is True


class _NotElementwise(Exception):
    pass


def _same_viewed(expected: Any, got: Any) -> bool:
    pairs = list(zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(got)))
    if not pairs or len(pairs) != len(torch.utils._pytree.tree_leaves(expected)):
        return False
    for want, have in pairs:
        if not isinstance(want, torch.Tensor) or not isinstance(have, torch.Tensor) or not (is_dense(want) and is_dense(have)):
            return False
        if have.dim() != 4 or have.numel() != want.numel() or have.dtype != want.dtype:
            return False
        if not same_bits(have.reshape(want.shape), want):
            return False
    return True
