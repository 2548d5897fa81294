"""Sparse tensors (COO, CSR, CSC, BSR, BSC) built from a dense tensor whose values they hold.

Every form is constructed directly from its index and value tensors, so each draw is valid by
construction (nothing is filtered) and the stored values are bit copies of the dense ones:
NaN, inf and -0.0 included. What torch 2.13 (CPU) does with them, and so what a check can rely on:

- `to_dense()` of every layout accumulates the stored values onto a +0.0 tensor, so it returns
  +0.0 where the stored value is -0.0 (also for a -0.0 real or imaginary part). Everything else
  comes back bit for bit, except that on some kernel paths (COO; CSR and CSC in most shapes)
  complex values are added as `1 * v`, a complex product that puts NaN in the partner of an inf or
  NaN part (inf+0j -> inf+nanj). `values()` and `to_sparse_coo()` keep every stored value.
- `coalesce()` sums duplicate entries starting from the first one, not from +0.0, so the splits
  of duplicates below, (v, -0.0), (v, 0) and (v, False), give v back: x + (-0.0) == x for real
  floats, and the bool sum is a logical or. It adds complex entries as `1 * v` too, which also
  turns -0.0 parts into +0.0, so for complex only finite entries without -0.0 parts are split.
- Sparse `to_dense` is not implemented for uint16/32/64 or the float8 dtypes (nor COO for
  complex32); those are refused with InvalidArgument, see `supported_layouts`.
- `Tensor.to_sparse` refuses a COO sparse_dim of 0 for a tensor of dim > 0 and batched compressed
  forms whose batch dims hold no element; this module does not generate the first, and builds the
  second directly (torch accepts it then).
"""

from __future__ import annotations

import functools
import math

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.strategies.values import values

SPARSE_LAYOUTS = (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)
COMPRESSED_LAYOUTS = SPARSE_LAYOUTS[1:]
_ROW_COMPRESSED = (torch.sparse_csr, torch.sparse_bsr)
_BLOCKED = (torch.sparse_bsr, torch.sparse_bsc)
_MAX_EXPLICIT_ZEROS = 3
_MAX_DUPLICATES = 3


def normalize_layouts(layouts) -> tuple[torch.layout, ...]:
    """`layouts` as a tuple of sparse torch layouts; names such as "csr" or "sparse_csr" are accepted."""
    if isinstance(layouts, (torch.layout, str)):
        layouts = (layouts,)
    try:
        items = tuple(layouts)
    except TypeError:
        raise InvalidArgument(f"layouts must be a sequence of sparse layouts, got {layouts!r}") from None
    result = []
    for item in items:
        layout = item
        if isinstance(item, str):
            name = item.removeprefix("torch.")
            layout = getattr(torch, name if name.startswith("sparse_") else f"sparse_{name}", None)
        if layout not in SPARSE_LAYOUTS:
            raise InvalidArgument(f"{item!r} is not a sparse layout; expected some of {SPARSE_LAYOUTS}")
        result.append(layout)
    if not result:
        raise InvalidArgument("layouts must name at least one sparse layout")
    return tuple(dict.fromkeys(result))


@functools.cache
def _layout_works(layout: torch.layout, dtype: torch.dtype) -> bool:
    """Whether torch builds, coalesces and densifies a tiny `layout` tensor of `dtype` (probed once)."""
    try:
        dense = torch.zeros((2, 2), dtype=dtype)
        if layout == torch.sparse_coo:
            s = torch.sparse_coo_tensor(torch.tensor([[0, 0], [1, 1]]), dense[0], (2, 2))
            s.to_dense(), s.coalesce().to_dense()
        else:
            stored = dense[0].reshape((2, 1, 1) if layout in _BLOCKED else (2,))
            torch.sparse_compressed_tensor(torch.tensor([0, 1, 2]), torch.tensor([0, 1]), stored, (2, 2),
                                           layout=layout).to_dense()
        return True
    except (RuntimeError, NotImplementedError, TypeError):
        return False


def supported_layouts(dtype: torch.dtype, layouts=SPARSE_LAYOUTS) -> tuple[torch.layout, ...]:
    """Those of `layouts` whose tensors of `dtype` torch can build and densify."""
    return tuple(layout for layout in normalize_layouts(layouts) if _layout_works(layout, dtype))


def _fits(layout: torch.layout, ndim: int) -> bool:
    return layout == torch.sparse_coo or ndim >= 2


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0] or [1]


def _nonzero_bits(t: torch.Tensor) -> torch.Tensor:
    """Bool mask of the elements of `t` whose bits are not all zero (so -0.0 and NaN count, +0.0 not)."""
    if t.dtype.is_complex:
        return _nonzero_bits(torch.view_as_real(t)).any(-1)
    if t.dtype.is_floating_point:
        ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
        return t.contiguous().view(ints) != 0
    return t != 0


def _any_trailing(mask: torch.Tensor, keep: int) -> torch.Tensor:
    """`mask` reduced with any() over its dims after the first `keep` (which may hold no element)."""
    return mask if mask.dim() == keep else mask.flatten(keep).any(-1)


def _neutral(like: torch.Tensor) -> torch.Tensor:
    """Values that added to `like` give `like` exactly: -0.0 (x + -0.0 == x, also for -0.0, inf, NaN), 0, False."""
    if like.dtype.is_floating_point or like.dtype.is_complex:
        return torch.full_like(like, -0.0)
    return torch.zeros_like(like)


@st.composite
def _stored_mask(draw, needed: torch.Tensor, batched: bool = False) -> torch.Tensor:
    """`needed` (the positions that must be stored) plus a few drawn explicit zeros.

    `batched`: the last two dims are one batch entry's grid; entries storing fewer elements than
    the fullest get explicit zeros at their first free positions, since batched compressed tensors
    store the same number in every batch entry.
    """
    mask = needed.clone()
    flat = mask.view(-1)
    if flat.numel():
        extra = draw(st.lists(st.integers(0, flat.numel() - 1), max_size=min(flat.numel(), _MAX_EXPLICIT_ZEROS),
                              unique=True), label="explicit zeros")
        flat[torch.tensor(extra, dtype=torch.long)] = True
    if batched and mask.numel():  # (a grid with no element stores nothing anywhere)
        per_batch = mask.view(-1, math.prod(mask.shape[-2:]))
        target = int(per_batch.sum(-1).max())
        for row in per_batch:
            missing = target - int(row.sum())
            if missing:
                row[(~row).nonzero().view(-1)[:missing]] = True
    return mask


def _entries(dense: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Coalesced COO indices and values of the positions of `mask` (its dims are dense's first ones)."""
    if mask.dim() == 0:  # a 0-d tensor: no index rows, one entry or none
        return torch.zeros((0, int(mask)), dtype=torch.long), dense.reshape(1)[: int(mask)]
    indices = mask.nonzero().T
    return indices, dense[tuple(indices)]


def _duplicable(vals: torch.Tensor) -> torch.Tensor:
    """Entries whose split (v, neutral) torch coalesces back into v exactly, in either order.

    Always true but for complex: torch 2.13 adds complex entries as `acc + 1 * v` (a complex
    product), which turns the partner of an infinite or NaN part into NaN and a -0.0 part into +0.0.
    """
    if not vals.dtype.is_complex:
        return torch.ones(vals.shape[0], dtype=torch.bool)
    parts = torch.view_as_real(vals).flatten(1)
    return (parts.isfinite() & ~((parts == 0) & parts.signbit())).all(-1)


@st.composite
def _coo(draw, dense: torch.Tensor, dense_dims: int, uncoalesced: bool) -> torch.Tensor:
    ndim = dense.dim()
    sparse_dim = ndim - min(dense_dims, max(ndim - 1, 0))  # >= 1 unless 0-d, as Tensor.to_sparse wants
    mask = draw(_stored_mask(_any_trailing(_nonzero_bits(dense), sparse_dim)))
    indices, vals = _entries(dense, mask)
    if not uncoalesced or not mask.numel():
        return torch.sparse_coo_tensor(indices, vals, dense.shape, is_coalesced=True)
    duplicable = _duplicable(vals).nonzero().view(-1)
    if not duplicable.numel():
        free = (~mask).view(-1).nonzero().view(-1)
        if not free.numel():  # every entry stored and none splits exactly: stay coalesced
            return torch.sparse_coo_tensor(indices, vals, dense.shape, is_coalesced=True)
        mask.view(-1)[free[0]] = True  # an explicit +0 entry, to duplicate
        indices, vals = _entries(dense, mask)
        duplicable = _duplicable(vals).nonzero().view(-1)
    picks = draw(st.lists(st.integers(0, duplicable.numel() - 1), min_size=1,
                          max_size=min(duplicable.numel(), _MAX_DUPLICATES), unique=True), label="duplicated entries")
    dup = duplicable[torch.tensor(picks, dtype=torch.long)]
    indices = torch.cat([indices, indices[:, dup]], 1)
    vals = torch.cat([vals, _neutral(vals[dup])])
    if draw(st.booleans(), label="shuffled"):
        seed = draw(st.integers(0, 2**32 - 1), label="shuffle seed")
        order = torch.randperm(indices.shape[1], generator=torch.Generator().manual_seed(seed))
        indices, vals = indices[:, order], vals[order]
    return torch.sparse_coo_tensor(indices, vals, dense.shape, is_coalesced=False)


@st.composite
def _compressed(draw, dense: torch.Tensor, layout: torch.layout, dense_dims: int) -> torch.Tensor:
    ndim = dense.dim()
    dense_dims = min(dense_dims, ndim - 2)  # the other dims beyond the two sparse ones are batch dims
    n_batch = ndim - 2 - dense_dims
    batch, dense_shape = dense.shape[:n_batch], dense.shape[n_batch + 2:]
    rows, cols = dense.shape[n_batch:n_batch + 2]
    block = (1, 1)
    if layout in _BLOCKED:
        block = (draw(st.sampled_from(_divisors(rows)), label="block rows"),
                 draw(st.sampled_from(_divisors(cols)), label="block cols"))
    grid = (rows // block[0], cols // block[1])
    # blocks: batch + (block row, block col, within-block row, within-block col) + dense dims
    blocks = dense.reshape(*batch, grid[0], block[0], grid[1], block[1], *dense_shape)
    blocks = blocks.movedim(n_batch + 2, n_batch + 1)
    mask = draw(_stored_mask(_any_trailing(_nonzero_bits(blocks), n_batch + 2), batched=True))
    row_major = layout in _ROW_COMPRESSED
    order = mask if row_major else mask.transpose(-1, -2)  # CSC/BSC list entries column by column
    where = order.nonzero()
    per_batch = where.shape[0] // math.prod(batch) if math.prod(batch) else 0
    if row_major:
        stored = blocks[tuple(where.T)]
    else:
        stored = blocks[tuple(where[:, :n_batch].T) + (where[:, -1], where[:, -2])]
    if layout not in _BLOCKED:
        stored = stored.reshape(stored.shape[0], *dense_shape)
    vals = stored.reshape(*batch, per_batch, *stored.shape[1:])
    plain = where[:, -1].reshape(*batch, per_batch)
    counts = order.sum(-1)
    compressed = torch.cat([torch.zeros(*batch, 1, dtype=torch.long), counts.cumsum(-1)], -1)
    return torch.sparse_compressed_tensor(compressed, plain, vals, dense.shape, layout=layout)


def sparse_forms(dense: torch.Tensor, layouts=SPARSE_LAYOUTS) -> st.SearchStrategy[torch.Tensor]:
    """Sparse tensors `s` holding `dense`'s values bit for bit, in one of `layouts` valid for its shape.

    Draws the layout (COO when none of `layouts` fits, e.g. CSR of a 1-d tensor), then the form:
    COO coalesced or uncoalesced (duplicate entries split as (v, -0.0) / (v, 0) / (v, False), in
    shuffled order) and hybrid (trailing dense dims); CSR/CSC/BSR/BSC plain, batched or hybrid,
    with BSR/BSC blocksizes among the divisors of the two sparse dims; a few explicit stored
    zeros. The stored values are bit copies of `dense`'s; torch's `s.to_dense()` turns -0.0 into
    +0.0 and spreads NaN within non-finite complex values (see the module docstring).
    Shrinks toward the first fitting layout (COO by default), coalesced, no hybrid or batch dims
    (batch dims first where a 3-d or larger tensor needs one of them), blocksize (1, 1), no
    explicit zeros.
    """
    if not isinstance(dense, torch.Tensor) or dense.layout != torch.strided or dense.device.type != "cpu":
        raise InvalidArgument(f"dense must be a strided CPU tensor (place the result on a device after), got {dense!r}")
    usable = supported_layouts(dense.dtype, layouts)
    fitting = [layout for layout in usable if _fits(layout, dense.dim())]
    if not fitting:
        if not _layout_works(torch.sparse_coo, dense.dtype):
            raise InvalidArgument(
                f"no sparse layout among {normalize_layouts(layouts)} (nor COO) can hold a {dense.dim()}-d "
                f"{dense.dtype} tensor in torch {torch.__version__}")
        fitting = [torch.sparse_coo]
    dense = dense.detach().contiguous()

    @st.composite
    def forms(draw):
        layout = draw(st.sampled_from(fitting), label="layout")
        # Drawn alike for every layout, so that no layout makes a shorter (simpler) choice sequence
        # than the first one: Hypothesis's shrinker prefers fewer choices over earlier ones.
        uncoalesced = draw(st.booleans(), label="uncoalesced (COO)")
        dense_dims = draw(st.integers(0, dense.dim()), label="dense dims")
        if layout == torch.sparse_coo:
            return draw(_coo(dense, dense_dims, uncoalesced))
        return draw(_compressed(dense, layout, dense_dims))

    return forms()


def sparse_tensors(dtype: torch.dtype, *, layouts=SPARSE_LAYOUTS, max_dims: int = 3, max_side: int = 6,
                   density: float = 0.25, special: bool = True) -> st.SearchStrategy[torch.Tensor]:
    """Sparse tensors of `dtype`: a drawn shape, at most `density` of it nonzero, in a form from `sparse_forms`.

    The nonzero positions are drawn, and their values come from `values` (special values
    included unless `special` is False). Shapes are at least 2-d when only compressed layouts are
    asked for. Shrinks toward few dims of side 1 (sides of 0 come later), few nonzeros and
    small-integer values, and the simplest form (see `sparse_forms`). The dense twin is `s.to_dense()` (or, keeping -0.0, the
    coalesced values put in place: torch's to_dense turns -0.0 into +0.0).
    """
    if not isinstance(dtype, torch.dtype):
        raise InvalidArgument(f"dtype must be a torch.dtype, got {dtype!r}")
    for name, value in (("max_dims", max_dims), ("max_side", max_side)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgument(f"{name} must be a non-negative int, got {value!r}")
    if not isinstance(density, (int, float)) or not 0 <= density <= 1:
        raise InvalidArgument(f"density must be a number in [0, 1], got {density!r}")
    usable = supported_layouts(dtype, layouts)
    if not usable:
        raise InvalidArgument(f"torch {torch.__version__} cannot densify {dtype} tensors of any layout "
                              f"among {normalize_layouts(layouts)}")
    min_dims = 0 if torch.sparse_coo in usable else 2
    if max_dims < min_dims:
        raise InvalidArgument(f"max_dims={max_dims} is below {min_dims}, the fewest dims {usable} can hold")
    # 0..max_side, shrinking toward 1 (0 is the last value): st.one_of would shrink to just(0)
    side = st.integers(0, max_side).map(lambda k: (k + 1) % (max_side + 1))

    @st.composite
    def tensors(draw):
        ndim = draw(st.integers(min_dims, max_dims), label="dims")
        shape = tuple(draw(side, label="side") for _ in range(ndim))
        numel = math.prod(shape)
        positions = draw(st.lists(st.integers(0, max(numel - 1, 0)), max_size=math.ceil(density * numel),
                                  unique=True), label="nonzero positions")
        dense = torch.zeros(shape, dtype=dtype)
        if positions:
            dense.view(-1)[torch.tensor(positions)] = draw(values((len(positions),), dtype, special=special),
                                                           label="nonzeros")
        return draw(sparse_forms(dense, usable))

    return tensors()


# -- a sparse tensor as its parts: what a case holds when the program builds the tensor itself -------
