"""Sparse tensors as their parts (indices, values, size) for programs that build them on the device themselves.

`sparse_parts` and `sparse_matrix_parts` draw forms from `torchcts.strategies.sparse` and hand
over their parts; `coo_with_duplicates` draws uncoalesced COO parts whose repeated indices carry
real values (a sum that drops duplicates is visible).
"""

from __future__ import annotations

import math

import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.strategies.sparse import (
    _ROW_COMPRESSED, SPARSE_LAYOUTS, sparse_forms, sparse_tensors, supported_layouts,
)
from torchcts.strategies.values import values


def sparse_parts_of(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, tuple[int, ...],
                                               torch.layout]:
    """(indices, plain indices or None, values, size, layout) of a sparse tensor, as contiguous dense copies.

    COO: its indices as stored (`_indices()`, duplicates and order kept) and None. CSR/BSR: crow and
    col indices; CSC/BSC: ccol and row indices. `torch.sparse_coo_tensor(indices, values, size)` or
    `torch.sparse_compressed_tensor(indices, plain, values, size, layout=layout)` builds it again.
    """
    if not isinstance(s, torch.Tensor) or s.layout not in SPARSE_LAYOUTS:
        raise InvalidArgument(f"s must be a sparse tensor of one of {SPARSE_LAYOUTS}, got {s!r}")
    if s.layout == torch.sparse_coo:
        parts = (s._indices(), None, s._values())
    elif s.layout in _ROW_COMPRESSED:
        parts = (s.crow_indices(), s.col_indices(), s.values())
    else:
        parts = (s.ccol_indices(), s.row_indices(), s.values())
    copies = tuple(p.detach().contiguous().clone() if p is not None else None for p in parts)
    return (*copies, tuple(s.shape), s.layout)


@st.composite
def coo_with_duplicates(draw, dtype: torch.dtype, shape: tuple[int, ...], *, max_nnz: int = 6,
                        special: bool = True) -> torch.Tensor:
    """An uncoalesced COO tensor of `shape` whose entries repeat and come in any order, each with its own value.

    Unlike `sparse_forms` (whose duplicates add a neutral zero, so the sum is exact), every stored
    entry holds a drawn value, so a kernel that drops or reorders duplicates gives another answer.
    The first `sparse_dim` dims (drawn, >= 1) are sparse, the rest dense (hybrid). Shrinks toward
    few entries, all at the first position (duplicates of one index), no dense dims, small values.
    """
    ndim = len(shape)
    sparse_dim = ndim - draw(st.integers(0, max(ndim - 1, 0)), label="dense dims") if ndim else 0
    grid = tuple(shape[:sparse_dim])
    cells = math.prod(grid)
    nnz = draw(st.integers(0, max_nnz if cells else 0), label="stored entries")
    flat = draw(st.lists(st.integers(0, max(cells - 1, 0)), min_size=nnz, max_size=nnz), label="entry positions")
    indices = torch.zeros((sparse_dim, nnz), dtype=torch.long)
    if nnz:
        rest = torch.tensor(flat, dtype=torch.long)
        for d in reversed(range(sparse_dim)):
            indices[d] = rest % grid[d]
            rest = rest // grid[d]
    vals = draw(values((nnz, *shape[sparse_dim:]), dtype, special=special), label="entry values")
    return torch.sparse_coo_tensor(indices, vals, shape, is_coalesced=False)


def sparse_parts(dtype: torch.dtype, *, layouts=SPARSE_LAYOUTS, min_dims: int = 1, max_dims: int = 3,
                 max_side: int = 4, special: bool = True, density: float = 0.25):
    """Parts (see `sparse_parts_of`) of a sparse tensor of `dtype` in one of `layouts`, for a case.

    COO: `coo_with_duplicates` (uncoalesced, real duplicate values). Compressed layouts:
    `sparse_tensors` in those layouts, at most `density` nonzero (batched, hybrid and blocked
    forms; at least 2-d).
    Shrinks toward the first of `layouts`, then as those strategies do.
    """
    usable = supported_layouts(dtype, layouts)
    if not usable:
        raise InvalidArgument(f"torch {torch.__version__} cannot densify {dtype} tensors of any of {layouts}")
    for name, value in (("min_dims", min_dims), ("max_dims", max_dims), ("max_side", max_side)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgument(f"{name} must be a non-negative int, got {value!r}")
    compressed = tuple(layout for layout in usable if layout != torch.sparse_coo)
    if compressed and max_dims < 2:
        raise InvalidArgument(f"compressed layouts {compressed} need max_dims >= 2, got {max_dims}")
    if min_dims > max_dims:
        raise InvalidArgument(f"min_dims={min_dims} is above max_dims={max_dims}")
    side = st.integers(0, max_side).map(lambda k: (k + 1) % (max_side + 1))  # shrinks toward 1, then 0

    @st.composite
    def parts(draw):
        layout = draw(st.sampled_from(usable), label="layout")
        if layout == torch.sparse_coo:
            ndim = draw(st.integers(min_dims, max_dims), label="dims")
            shape = tuple(draw(side, label="side") for _ in range(ndim))
            s = draw(coo_with_duplicates(dtype, shape, special=special))
        else:
            found = sparse_tensors(dtype, layouts=(layout,), max_dims=max_dims, max_side=max_side, special=special,
                                   density=density)
            s = draw(found if min_dims <= 2 else found.filter(lambda t: t.dim() >= min_dims))
        return sparse_parts_of(s)

    return parts()


def sparse_matrix_parts(dtype: torch.dtype, *, layouts=(torch.sparse_csr, torch.sparse_coo, torch.sparse_csc),
                        max_side: int = 4, density: float = 0.5, special: bool = True):
    """Parts (see `sparse_parts_of`) of a 2-d sparse matrix with sides 1 to `max_side` and at least one nonzero.

    For matrix products: no empty or all-zero matrices (other strategies draw those), so rows and
    columns that hold entries are the common case. COO: `coo_with_duplicates` (at least one
    entry); compressed: a drawn dense matrix with 1 to `density` of its elements nonzero, in the
    layout (`sparse_forms`). Shrinks toward the first of `layouts`, a 1 x 1 matrix, one entry.
    """
    usable = list(supported_layouts(dtype, layouts))
    if not usable:
        raise InvalidArgument(f"torch {torch.__version__} cannot densify {dtype} tensors of any of {layouts}")
    if not isinstance(max_side, int) or isinstance(max_side, bool) or max_side < 1:
        raise InvalidArgument(f"max_side must be an int >= 1, got {max_side!r}")
    if not isinstance(density, (int, float)) or not 0 < density <= 1:
        raise InvalidArgument(f"density must be a number in (0, 1], got {density!r}")

    @st.composite
    def parts(draw):
        layout = draw(st.sampled_from(usable), label="layout")
        shape = (draw(st.integers(1, max_side), label="rows"), draw(st.integers(1, max_side), label="columns"))
        numel = shape[0] * shape[1]
        if layout == torch.sparse_coo:
            s = draw(coo_with_duplicates(dtype, shape, special=special).filter(lambda t: t._nnz() > 0))
            return sparse_parts_of(s)
        positions = draw(st.lists(st.integers(0, numel - 1), min_size=1, max_size=max(1, math.ceil(density * numel)),
                                  unique=True), label="nonzero positions")
        dense = torch.zeros(shape, dtype=dtype)
        dense.view(-1)[torch.tensor(positions)] = draw(values((len(positions),), dtype, special=special),
                                                       label="nonzeros")
        return sparse_parts_of(draw(sparse_forms(dense, (layout,))))

    return parts()
