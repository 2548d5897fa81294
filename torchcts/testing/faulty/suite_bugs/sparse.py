"""Seeded bugs for the sparse suite: duplicates, index order and compressed-row bookkeeping.

Each acts on sparse CPU data the faulty device holds and fires only for sparse operands in the
state it names (uncoalesced COO with duplicates, CSR with at least two rows), so dense OpInfo
items never see them.
"""

from __future__ import annotations

import torch

from torchcts.testing.faulty.bug_model import Bug


def _coo_key(indices: torch.Tensor, size: torch.Size) -> torch.Tensor:
    """Each COO entry's row-major position in the sparse dims."""
    key = torch.zeros(indices.shape[1], dtype=torch.long)
    for d in range(indices.shape[0]):
        key = key * size[d] + indices[d]
    return key


def _has_duplicates(t) -> bool:
    if not isinstance(t, torch.Tensor) or t.layout != torch.sparse_coo or t.is_coalesced() or t._nnz() < 2:
        return False
    return bool(_coo_key(t._indices(), t.shape).unique().numel() < t._nnz())


def _first_of_each_index(t: torch.Tensor) -> torch.Tensor:
    """`t` keeping only the first stored entry of each index (what a sum that skips duplicates sees)."""
    key = _coo_key(t._indices(), t.shape)
    order = torch.argsort(key, stable=True)
    ordered = key[order]
    first = torch.ones_like(ordered, dtype=torch.bool)
    first[1:] = ordered[1:] != ordered[:-1]
    keep = order[first].sort().values
    return torch.sparse_coo_tensor(t._indices()[:, keep], t._values()[keep], t.shape)


def _sum_without_duplicates(func, args, kwargs, result):
    return func(_first_of_each_index(args[0]), *args[1:], **kwargs)


def _coalesce_fires(func, args, kwargs) -> bool:
    t = args[0]
    return t.layout == torch.sparse_coo and not t.is_coalesced() and t._nnz() >= 2


def _reversed_entries(func, args, kwargs, result):
    if result._nnz() < 2:
        return result
    return torch.sparse_coo_tensor(result._indices().flip(1), result._values().flip(0), result.shape,
                                   is_coalesced=True)


def _summed_nothing(func, args, kwargs, result):
    """The input's entries sorted by index, duplicates kept (not summed), flagged coalesced."""
    t = args[0]
    order = torch.argsort(_coo_key(t._indices(), t.shape), stable=True)
    return torch.sparse_coo_tensor(t._indices()[:, order], t._values()[order], t.shape, is_coalesced=True)


def _dense_matrices_to_compressed(func, args, kwargs) -> bool:
    t = args[0]
    return (isinstance(t, torch.Tensor) and t.layout == torch.strided and t.dim() >= 2 and min(t.shape[-2:]) > 1
            and kwargs.get("layout") in (torch.sparse_csr, torch.sparse_csc) and not kwargs.get("dense_dim"))


def _compressed_of_column_major_reading(func, args, kwargs, result):
    t = args[0]
    misread = t.transpose(-2, -1).contiguous().view(t.shape)  # each matrix's storage read column-major
    return func(misread, *args[1:], **kwargs)


def _csr_operand(func, args) -> int | None:
    """Position of the sparse CSR matrix operand of mm (first) or addmm (second), or None."""
    position = 1 if "addmm" in str(func) else 0
    t = args[position] if len(args) > position else None
    if isinstance(t, torch.Tensor) and t.layout == torch.sparse_csr and t.dim() == 2 and t.shape[0] >= 2:
        return position
    return None


def _without_last_row(func, args, kwargs, result):
    position = _csr_operand(func, args)
    s = args[position]
    crow = s.crow_indices().clone()
    kept = int(crow[-2])
    crow[-1] = kept
    cut = torch.sparse_csr_tensor(crow, s.col_indices()[:kept], s.values()[:kept], s.shape)
    return func(*args[:position], cut, *args[position + 1:], **kwargs)


BUGS = (
    Bug("sparse_sum_drops_duplicates", ops=("aten._sparse_sum.default", "aten._sparse_sum.dim",
                                            "aten._sparse_sum.dim_dtype", "aten.sum.default"),
        condition="the input is an uncoalesced COO tensor holding an index more than once",
        description="sums only the first stored entry of each index, ignoring its duplicates",
        fires=lambda func, args, kwargs: _has_duplicates(args[0]), perturb=_sum_without_duplicates, suite="sparse"),
    Bug("coalesce_unsorted", ops=("aten._coalesce.default",),
        condition="coalescing an uncoalesced COO tensor with at least two stored entries",
        description="returns the coalesced entries in descending index order, still flagged coalesced",
        fires=_coalesce_fires, perturb=_reversed_entries, suite="sparse"),
    Bug("coalesce_keeps_duplicates", ops=("aten._coalesce.default",),
        condition="coalescing an uncoalesced COO tensor holding an index more than once",
        description="sorts the entries but keeps each duplicate as its own entry (values not summed), flagged "
                    "coalesced", fires=lambda func, args, kwargs: _has_duplicates(args[0]), perturb=_summed_nothing,
        suite="sparse"),
    Bug("dense_to_compressed_reads_column_major", ops=("aten._to_sparse.default",),
        condition="a strided tensor of matrices (both sides > 1, no dense dims) converted to CSR or CSC",
        description="reads each dense matrix in column-major order: the compressed tensor's row and column indices "
                    "come from the transposed storage", fires=_dense_matrices_to_compressed,
        perturb=_compressed_of_column_major_reading, suite="sparse"),
    Bug("csr_mm_drops_last_row", ops=("aten.mm.default", "aten.addmm.default"),
        condition="the sparse operand of mm/addmm is a CSR matrix with at least two rows",
        description="skips the last compressed row of the CSR operand (its row of the product is missing)",
        fires=lambda func, args, kwargs: _csr_operand(func, args) is not None, perturb=_without_last_row,
        suite="sparse"),
)
