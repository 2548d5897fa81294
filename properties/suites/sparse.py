"""Sparse tensors on the device: COO/CSR/CSC/BSR/BSC built from their parts, round trips, coalescing, sparse-dense ops.

Every scenario is a torch-only program (`torchcts.engine.programs`): the case holds the sparse
tensor's parts as dense tensors (indices, plain indices, values, size, layout: see
`strategies.sparse_parts.sparse_parts`), the program builds the sparse tensor on the device itself and
returns dense forms (`to_dense()`, indices, values) and invariants (nnz, `is_coalesced()`, index
dtypes, whether indices are sorted); the device must give CPU's result. Sparse leaves compare by
layout, dtype and shape only, so every value goes through a dense form. COO parts repeat indices
with their own values (uncoalesced), so kernels that drop, keep one of, or reorder duplicates are
seen. What CPU itself refuses for a dtype and layout (CSR `mm` of int64, any bool `mm`) is
`cpu_contract` for that case.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints, Lists, OneOf, Optional, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Scenario, Tolerance, scenario_suite
from torchcts.strategies import Case, values
from torchcts.strategies.sparse import SPARSE_LAYOUTS, sparse_tensors
from torchcts.strategies.sparse_parts import sparse_matrix_parts, sparse_parts

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("COO/CSR/CSC/BSR/BSC construction, round trips, coalescing, sparse-dense ops vs the dense oracle, result "
          "invariants")

DTYPES = ("float32", "float64", "complex64", "int64", "bool", "float16", "bfloat16")
_COO, _CSR, _CSC = torch.sparse_coo, torch.sparse_csr, torch.sparse_csc
MAX_DIMS, MAX_SIDE = 3, 4  # the sparse tensors' (sparse_parts' defaults, the round trip's dense inputs)
COO_MOST_ENTRIES = 6  # stored COO entries (coo_with_duplicates' max_nnz)
MM_COLUMNS = Ints(1, 3)
ALPHAS, BETAS, SCALARS = (1, 2, -1), (1, 0, 2), (2, -1, 0)


# -- the programs: each builds its sparse tensor from the parts, then observes ------------------------

def construct(indices, plain, values, size, layout):
    """The tensor built from its parts: itself (layout, dtype, shape), dense form, nnz, dims, index dtypes."""
    if layout == torch.sparse_coo:
        s = torch.sparse_coo_tensor(indices, values, size, check_invariants=True)
        index_dtypes = (s._indices().dtype,)
    else:
        s = torch.sparse_compressed_tensor(indices, plain, values, size, layout=layout, check_invariants=True)
        row_major = layout in (torch.sparse_csr, torch.sparse_bsr)
        compressed = s.crow_indices() if row_major else s.ccol_indices()
        index_dtypes = (compressed.dtype, (s.col_indices() if row_major else s.row_indices()).dtype)
    return s, s.to_dense(), s._nnz(), s.sparse_dim(), s.dense_dim(), index_dtypes


def coalesce(indices, plain, values, size, layout):
    """Coalescing duplicates: the sum per index, indices unique and sorted (row-major), flags and nnz."""
    s = torch.sparse_coo_tensor(indices, values, size, check_invariants=True)
    c = s.coalesce()
    idx = c.indices()
    key = idx.new_zeros(idx.shape[1])  # each entry's row-major position in the sparse dims
    for d in range(idx.shape[0]):
        key = key * size[d] + idx[d]
    strictly_sorted = bool((key[1:] > key[:-1]).all())
    return (c.to_dense(), idx, c.values(), c._nnz(), c.is_coalesced(), strictly_sorted, s.is_coalesced(),
            s.to_dense())


def to_sparse_round_trip(input, layout, blocksize, dense_dim):
    """dense -> `to_sparse(layout=...)` -> parts, sortedness, dense again, and COO of it."""
    s = input.to_sparse(layout=layout, blocksize=blocksize, dense_dim=dense_dim)
    if layout == torch.sparse_coo:
        c = s.coalesce()
        parts = (c.indices(), c.values())
        ordered = s.is_coalesced()
    else:
        row_major = layout in (torch.sparse_csr, torch.sparse_bsr)
        compressed = s.crow_indices() if row_major else s.ccol_indices()
        plain = s.col_indices() if row_major else s.row_indices()
        counts = compressed.diff(dim=-1)
        # plain indices strictly increasing within each compressed row (or column), of each batch
        owner = torch.repeat_interleave(torch.arange(counts.numel(), device=counts.device), counts.reshape(-1))
        key = owner * 2**31 + plain.reshape(-1)
        ordered = bool((counts >= 0).all()) and bool((compressed[..., 0] == 0).all()) and \
            bool((key[1:] > key[:-1]).all())
        parts = (compressed, plain, s.values())
        c = s.to_sparse_coo().coalesce()
    return s, parts, ordered, s._nnz(), s.to_dense(), c.indices(), c.values()


def sparse_mm(indices, plain, values, size, layout, other, bias, alpha, beta):
    """sparse (m, k) @ dense (k, n): mm and addmm(bias, s, other, beta, alpha)."""
    if layout == torch.sparse_coo:
        s = torch.sparse_coo_tensor(indices, values, size, check_invariants=True)
    else:
        s = torch.sparse_compressed_tensor(indices, plain, values, size, layout=layout, check_invariants=True)
    return torch.mm(s, other), torch.addmm(bias, s, other, beta=beta, alpha=alpha)


def sparse_elementwise(indices, plain, values, size, layout, other, scalar):
    """dense + sparse, sparse * dense, sparse * scalar (and COO sparse + sparse), in dense form."""
    if layout == torch.sparse_coo:
        s = torch.sparse_coo_tensor(indices, values, size, check_invariants=True)
        extra = ((s + s).to_dense(), (s * other).to_dense())
    else:
        s = torch.sparse_compressed_tensor(indices, plain, values, size, layout=layout, check_invariants=True)
        extra = ((s * other).to_dense(),) if layout == torch.sparse_csr else ()
    return (other + s, (s * scalar).to_dense()) + extra


def sparse_sum(indices, plain, values, size, layout, dims):
    """Full sums (`torch.sparse.sum`, `sum`) and, for COO, `torch.sparse.sum` over `dims`, in dense form."""
    if layout == torch.sparse_coo:
        s = torch.sparse_coo_tensor(indices, values, size, check_invariants=True)
        part = torch.sparse.sum(s, dim=dims)
        return torch.sparse.sum(s), s.sum(), part.to_dense() if part.layout == torch.sparse_coo else part
    s = torch.sparse_compressed_tensor(indices, plain, values, size, layout=layout, check_invariants=True)
    return (s.sum(),)


PROGRAMS = {program.__name__: program for program in
            (construct, coalesce, to_sparse_round_trip, sparse_mm, sparse_elementwise, sparse_sum)}
_ACCUMULATING = ("coalesce", "sparse_mm", "sparse_sum")  # sums of several values: another order rounds otherwise


# -- the cases -------------------------------------------------------------------------------------

_PART_NAMES = ("input", "plain", "values", "size", "layout")  # sparse_parts' tuple: indices (the input) first


def _case(cts, values, what) -> Case:
    """The case of the item's scenario from its named values."""
    return scenario_case(cts.item.op, cts.dtype, PARAMS[cts.item.op], values, what)


def _parts(parts, **more) -> dict:
    """The named values of a sparse tensor's parts (`sparse_parts`' tuple), with `more` after them."""
    return {**dict(zip(_PART_NAMES, parts)), **more}


def _special(dtype):
    # CPU densifies complex inf/NaN entries as 1 * v (inf+0j -> inf+nanj): a CPU quirk, not a contract
    return not dtype.is_complex


def _construct_cases(cts):
    return sparse_parts(cts.dtype, special=_special(cts.dtype)).map(
        lambda p: _case(cts, _parts(p), f"{p[4]} of size {p[3]}"))


def _coalesce_cases(cts):
    return sparse_parts(cts.dtype, layouts=(_COO,), special=_special(cts.dtype)).map(
        lambda p: _case(cts, _parts(p), f"COO of size {p[3]}, {p[0].shape[1]} stored entries"))


@st.composite
def _round_trip_cases(draw, cts):
    layout = draw(st.sampled_from(SPARSE_LAYOUTS), label="target layout")
    s = draw(sparse_tensors(cts.dtype, layouts=(layout,), max_dims=MAX_DIMS, max_side=MAX_SIDE,
                            special=_special(cts.dtype)))
    dense = s.to_dense()
    ndim = dense.dim()
    blocksize = None
    if layout in (torch.sparse_bsr, torch.sparse_bsc):
        rows, cols = dense.shape[-2:] if ndim >= 2 else (1, 1)
        blocksize = tuple(draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0] or [1]), label="block")
                          for n in (rows, cols))
    most = ndim - 1 if layout == _COO else ndim - 2
    dense_dim = draw(st.integers(0, max(most, 0)), label="dense dims") if ndim else 0
    return _case(cts, {"input": dense, "layout": layout, "blocksize": blocksize, "dense_dim": dense_dim},
                 f"{ndim}-d dense to {layout}, blocksize {blocksize}, {dense_dim} dense dims")


@st.composite
def _mm_cases(draw, cts):
    parts = draw(sparse_matrix_parts(cts.dtype, special=_special(cts.dtype)), label="sparse matrix")
    m, k = parts[3]
    n = draw(MM_COLUMNS.strategy(), label="columns of the dense operand")
    other = draw(_dense((k, n), cts.dtype), label="dense operand")
    bias = draw(_dense((m, n), cts.dtype), label="bias")
    alpha, beta = draw(st.sampled_from(ALPHAS), label="alpha"), draw(st.sampled_from(BETAS), label="beta")
    if cts.dtype == torch.bool:
        alpha, beta = True, True
    return _case(cts, _parts(parts, other=other, bias=bias, alpha=alpha, beta=beta),
                 f"{parts[4]} {tuple(parts[3])} @ dense ({k}, {n}), alpha {alpha}, beta {beta}")


@st.composite
def _elementwise_cases(draw, cts):
    # compressed: 2-d only; dense + hybrid CSR/CSC is wrong on CPU (torch 2.13) and can crash it
    coo = sparse_parts(cts.dtype, layouts=(_COO,), special=_special(cts.dtype))
    compressed = sparse_parts(cts.dtype, layouts=(_CSR, _CSC), max_dims=2, special=_special(cts.dtype))
    parts = draw(st.one_of(coo, compressed), label="sparse operand")
    other = draw(_dense(parts[3], cts.dtype), label="dense operand")
    scalar = True if cts.dtype == torch.bool else draw(st.sampled_from(SCALARS), label="scalar")
    return _case(cts, _parts(parts, other=other, scalar=scalar),
                 f"{parts[4]} of size {parts[3]} with dense and {scalar}")


@st.composite
def _sum_cases(draw, cts):
    parts = draw(sparse_parts(cts.dtype, special=_special(cts.dtype)))
    ndim = len(parts[3])
    dims = tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1, max_size=ndim), label="summed dims"))) \
        if ndim else ()
    return _case(cts, _parts(parts, dims=dims), f"{parts[4]} of size {parts[3]}, sum over {dims}")


def _dense(shape, dtype):
    return values(tuple(shape), dtype, special=_special(dtype))


# -- bounds of the stored values (`cases.bounds`): what the strategies above draw ------------------------------------

# indices, plain indices, values (a batched blocked layout's values: (batch, blocks, block rows, block columns))
_PART = Tensors(COO_MOST_ENTRIES * MAX_SIDE ** (MAX_DIMS - 1), MAX_DIMS + 1)
_DENSE = Tensors(MAX_SIDE ** MAX_DIMS, MAX_DIMS)
_SIZE = Lists(Ints(0, MAX_SIDE), 1, MAX_DIMS)
_PARTS = {"plain": Optional(_PART), "values": _PART, "size": _SIZE}


def _parts_build(params: dict) -> bool:
    """The stored parts build a sparse tensor of the stored size that passes torch's invariant checks (on CPU, where
    the case is read): indices within the size, compressed indices ordered, values of the right shape; the programs
    densify it, and a device kernel given out-of-bounds indices may write past its memory."""
    indices, plain, values, size, layout = (params[name] for name in ("input", "plain", "values", "size", "layout"))
    if layout == _COO:
        torch.sparse_coo_tensor(indices, values, size, check_invariants=True)
        return plain is None
    torch.sparse_compressed_tensor(indices, plain, values, size, layout=layout, check_invariants=True)
    return True


_VALID = ("the parts build a valid sparse tensor of the stored size", _parts_build)


def _parts_params(layouts: tuple[torch.layout, ...], *more: tuple[str, object]) -> CaseParams:
    return CaseParams({**_PARTS, "layout": OneOf(layouts), **dict(more)}, input=_PART, rules=(_VALID,))


PARAMS = {
    "construct": _parts_params(SPARSE_LAYOUTS),
    "coalesce": _parts_params((_COO,)),
    "to_sparse_round_trip": CaseParams({"layout": OneOf(SPARSE_LAYOUTS), "blocksize": Optional(Lists(Ints(
        1, MAX_SIDE), 2, 2)), "dense_dim": Ints(0, MAX_DIMS - 1)}, input=_DENSE),
    "sparse_mm": _parts_params((_CSR, _COO, _CSC), ("other", Tensors(MAX_SIDE * MM_COLUMNS.high, 2)),
                               ("bias", Tensors(MAX_SIDE * MM_COLUMNS.high, 2)), ("alpha", OneOf((*ALPHAS, True))),
                               ("beta", OneOf((*BETAS, True)))),
    "sparse_elementwise": _parts_params((_COO, _CSR, _CSC), ("other", _DENSE), ("scalar", OneOf((*SCALARS, True)))),
    "sparse_sum": _parts_params(SPARSE_LAYOUTS, ("dims", Lists(Ints(0, MAX_DIMS - 1), 0, MAX_DIMS))),
}


_CASES = {"construct": _construct_cases, "coalesce": _coalesce_cases, "to_sparse_round_trip": _round_trip_cases,
          "sparse_mm": _mm_cases, "sparse_elementwise": _elementwise_cases, "sparse_sum": _sum_cases}


# the aten overloads sparse dispatches on a device (traced on the faulty device, 4 examples an item; the
# coverage audit reads them: docs/coverage/audit.md)
_OVERLOADS = (
    "aten._coalesce.default", "aten._indices.default", "aten._local_scalar_dense.default", "aten._nnz.default",
    "aten._sparse_coo_tensor_with_dims_and_tensors.default", "aten._sparse_sum.dim", "aten._to_dense.default",
    "aten._to_sparse.default", "aten.add.Tensor", "aten.addmm.default", "aten.all.default", "aten.arange.start_out",
    "aten.ccol_indices.default", "aten.col_indices.default", "aten.crow_indices.default", "aten.dense_dim.default",
    "aten.empty.memory_format", "aten.eq.Scalar", "aten.expand.default", "aten.ge.Scalar", "aten.gt.Tensor",
    "aten.index_select.default", "aten.indices.default", "aten.is_coalesced.default", "aten.is_pinned.default",
    "aten.max.dim", "aten.min.dim", "aten.mm.default", "aten.mul.Tensor", "aten.new_zeros.default",
    "aten.repeat_interleave.Tensor", "aten.row_indices.default", "aten.select.int", "aten.slice.Tensor",
    "aten.sparse_compressed_tensor.comp_plain_value_size", "aten.sparse_dim.default", "aten.sub.Tensor",
    "aten.sum.default", "aten.values.default", "aten.view.default",
)


# CPU's dense forms and invariants within the dtype's tolerance; a scenario that sums several values widens 4x below
# 32 bits and for sums of many inputs; a failure names the scenario and the case.
_SUMS = Tolerance(dtype_widen={"float16": 4.0, "bfloat16": 4.0}, said="{scenario} of {first}")
_OBSERVES = Tolerance(inputs=False, said="{scenario} of {first}")

test_sparse = scenario_suite(
    "sparse", capability="sparse", level=4, dtypes=DTYPES, overloads=_OVERLOADS,
    scenarios=[Scenario(name, PARAMS[name], program, _SUMS if name in _ACCUMULATING else _OBSERVES,
                        cases=lambda cts: _CASES[cts.item.op](cts))
               for name, program in PROGRAMS.items()])
