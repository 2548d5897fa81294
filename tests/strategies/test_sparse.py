"""Sparse forms hold their dense source bit for bit, in every layout and form, and shrink simply."""

import math

import pytest
import torch
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.strategies.sparse import SPARSE_LAYOUTS, sparse_forms, sparse_tensors
from torchcts.strategies.fingerprint import same_bits
from torchcts.strategies.values import special_values, values

pytestmark = [pytest.mark.filterwarnings("ignore:Sparse .* tensor support is in beta"),
              pytest.mark.filterwarnings("ignore:Sparse invariant checks are implicitly disabled"),
              pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")]

COMPRESSED = SPARSE_LAYOUTS[1:]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
          torch.int64, torch.int8, torch.uint8, torch.bool]


def densified_as_torch_does(out: torch.Tensor, dense: torch.Tensor) -> bool:
    """Whether `out` is `dense` as torch 2.13's sparse to_dense() may return it: values added onto +0.0
    (so -0.0 -> +0.0), and complex values, on some kernel paths (COO, CSR, CSC), added as 1 * v, whose
    parts are (re - im * 0, im + re * 0): NaN in the partner of an inf or NaN part. Elementwise."""
    if not (dense.dtype.is_floating_point or dense.dtype.is_complex):
        return same_bits(out, dense)
    if not dense.dtype.is_complex:
        return same_bits(out, dense + 0.0)
    re, im = torch.view_as_real(dense).unbind(-1)
    plain = torch.view_as_complex(torch.stack([re + 0.0, im + 0.0], -1))
    times_one = torch.view_as_complex(torch.stack([re - im * 0 + 0.0, im + re * 0 + 0.0], -1))
    if out.shape != dense.shape or out.dtype != dense.dtype:
        return False
    return all(same_bits(o, p) or same_bits(o, t) for o, p, t in zip(out.reshape(-1), plain.reshape(-1),
                                                                     times_one.reshape(-1)))


def exact_dense(s: torch.Tensor) -> torch.Tensor:
    """Densify by copying the coalesced stored values into place, which keeps -0.0 (to_dense adds to +0.0)."""
    coo = (s if s.layout == torch.sparse_coo else s.to_sparse_coo()).coalesce()
    out = torch.zeros(s.shape, dtype=s.dtype)
    if coo.sparse_dim() == 0:
        return coo.values()[0].clone() if coo._nnz() else out
    out[tuple(coo.indices())] = coo.values()
    return out


def rebuilt_with_invariant_checks(s: torch.Tensor) -> torch.Tensor:
    if s.layout == torch.sparse_coo:
        return torch.sparse_coo_tensor(s._indices(), s._values(), s.shape, check_invariants=True)
    row = s.layout in (torch.sparse_csr, torch.sparse_bsr)
    compressed, plain = (s.crow_indices(), s.col_indices()) if row else (s.ccol_indices(), s.row_indices())
    return torch.sparse_compressed_tensor(compressed, plain, s.values(), s.shape, layout=s.layout,
                                          check_invariants=True)


def batch_dims(s: torch.Tensor) -> int:
    if s.layout == torch.sparse_coo:
        return 0
    row = s.layout in (torch.sparse_csr, torch.sparse_bsr)
    return (s.crow_indices() if row else s.ccol_indices()).dim() - 1


@st.composite
def mostly_zero(draw, min_dims=0, dtypes=DTYPES):
    """A dense tensor (values with special values) where a drawn part is set to +0.0."""
    dtype = draw(st.sampled_from(dtypes))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=min_dims, max_size=4)))
    dense = draw(values(shape, dtype))
    seed = draw(st.integers(0, 2**16))
    keep = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < draw(st.sampled_from([0.0, 0.3, 1.0]))
    return torch.where(keep, dense, torch.zeros((), dtype=dtype))


def small_find(strategy, condition):
    return find(strategy, condition, settings=settings(max_examples=2000, database=None,
                                                       suppress_health_check=list(HealthCheck)))


@pytest.mark.parametrize("layout", SPARSE_LAYOUTS, ids=str)
@settings(max_examples=60)
@given(data=st.data())
def test_forms_hold_the_dense_source_bit_for_bit(layout, data):
    dense = data.draw(mostly_zero(min_dims=0 if layout == torch.sparse_coo else 2))
    s = data.draw(sparse_forms(dense, layouts=(layout,)))
    assert s.layout == layout and s.dtype == dense.dtype and s.shape == dense.shape
    rebuilt_with_invariant_checks(s)
    assert densified_as_torch_does(s.to_dense(), dense)
    assert same_bits(exact_dense(s), dense)  # the stored values keep -0.0 too


@settings(max_examples=80)
@given(data=st.data())
def test_coo_is_coalesced_or_really_has_duplicates(data):
    dense = data.draw(mostly_zero())
    s = data.draw(sparse_forms(dense, layouts=(torch.sparse_coo,)))
    indices, nnz = s._indices(), s._nnz()
    if s.is_coalesced():
        assert torch.equal(s.coalesce().indices(), indices)
    else:
        distinct = 1 if s.sparse_dim() == 0 else torch.unique(indices, dim=1).shape[1]
        assert distinct < nnz
    assert same_bits(s.coalesce().to_dense(), s.to_dense())
    assert densified_as_torch_does(s.to_dense(), dense)
    assert same_bits(exact_dense(s), dense)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@settings(max_examples=30)
@given(data=st.data())
def test_special_values_survive_every_form(dtype, data):
    """Every special value (NaN, inf, -0.0, extremes), stored and duplicated: exact where torch allows."""
    specials = torch.tensor([v for v in special_values(dtype) if v not in (True, False) or dtype == torch.bool],
                            dtype=torch.complex128 if dtype.is_complex else None).to(dtype)
    dense = specials.repeat(2).reshape(2, -1)
    s = data.draw(sparse_forms(dense))
    assert densified_as_torch_does(s.to_dense(), dense)
    assert same_bits(exact_dense(s), dense)


def test_a_duplicated_negative_zero_coalesces_to_negative_zero():
    dense = torch.tensor([-0.0])
    s = small_find(sparse_forms(dense), lambda s: not s.is_coalesced())
    assert s._nnz() == 2 and same_bits(s.coalesce().values(), dense)


@pytest.mark.parametrize("layout", [torch.sparse_bsr, torch.sparse_bsc], ids=str)
@settings(max_examples=50)
@given(data=st.data())
def test_blocksize_divides_the_sparse_dims(layout, data):
    s = data.draw(sparse_forms(data.draw(mostly_zero(min_dims=2)), layouts=(layout,)))
    n_batch = batch_dims(s)
    rows, cols = s.shape[n_batch:n_batch + 2]
    block_rows, block_cols = s.values().shape[n_batch + 1:n_batch + 3]
    assert block_rows >= 1 and block_cols >= 1 and rows % block_rows == 0 and cols % block_cols == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.int16, torch.complex32], ids=str)
@settings(max_examples=40)
@given(data=st.data())
def test_sparse_tensors_are_valid_and_within_limits(dtype, data):
    s = data.draw(sparse_tensors(dtype, max_dims=3, max_side=5, density=0.5))
    assert s.dtype == dtype and s.dim() <= 3 and all(side <= 5 for side in s.shape)
    assert s.layout in SPARSE_LAYOUTS and (dtype != torch.complex32 or s.layout != torch.sparse_coo)
    rebuilt_with_invariant_checks(s)
    if dtype != torch.complex32:  # torch has no nonzero counting for it
        assert int((s.to_dense() != 0).sum()) <= math.ceil(0.5 * s.shape.numel())


REACHABLE = {
    "uncoalesced COO": (torch.ones(3, 2), lambda s: s.layout == torch.sparse_coo and not s.is_coalesced()),
    "hybrid COO": (torch.ones(2, 3, 2), lambda s: s.layout == torch.sparse_coo and s.dense_dim() >= 1),
    "explicit zeros": (torch.zeros(3, 3), lambda s: s.values().numel() > 0),
    "CSR": (torch.ones(2, 3), lambda s: s.layout == torch.sparse_csr),
    "CSC": (torch.ones(2, 3), lambda s: s.layout == torch.sparse_csc),
    "BSR": (torch.ones(2, 3), lambda s: s.layout == torch.sparse_bsr),
    "BSC": (torch.ones(2, 3), lambda s: s.layout == torch.sparse_bsc),
    "batched CSR": (torch.ones(2, 3, 2), lambda s: s.layout == torch.sparse_csr and batch_dims(s) == 1),
    "hybrid CSC": (torch.ones(2, 3, 2), lambda s: s.layout == torch.sparse_csc and s.dense_dim() == 1),
    "batched hybrid BSR": (torch.ones(2, 4, 6, 2), lambda s: s.layout == torch.sparse_bsr and batch_dims(s) == 1
                           and s.dense_dim() == 1),
    "BSC block (2, 3)": (torch.ones(4, 6), lambda s: s.layout == torch.sparse_bsc and s.values().shape[1:] == (2, 3)),
    "empty batch CSR": (torch.ones(0, 2, 2), lambda s: s.layout == torch.sparse_csr and batch_dims(s) == 1),
}


@pytest.mark.parametrize("name", REACHABLE)
def test_each_form_is_reachable(name):
    dense, condition = REACHABLE[name]
    s = small_find(sparse_forms(dense), condition)
    assert same_bits(s.to_dense(), dense)


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_simplest_forms_are_coalesced_coo_without_hybrid_dims():
    assert small_find(sparse_tensors(torch.float32), lambda s: True).shape == ()
    s = small_find(sparse_forms(torch.ones(2, 3, 4)), lambda s: True)
    assert s.layout == torch.sparse_coo and s.is_coalesced() and s.sparse_dim() == 3
    s = small_find(sparse_forms(torch.ones(4, 6), layouts=(torch.sparse_bsr,)), lambda s: True)
    assert s.values().shape[1:] == (1, 1)
    s = small_find(sparse_tensors(torch.float32), lambda s: s.dim() >= 2)
    assert s.layout == torch.sparse_coo and s.shape == (1, 1) and s._nnz() == 0


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_shape_no_layout_fits_falls_back_to_coo():
    s = small_find(sparse_forms(torch.arange(3.0), layouts=(torch.sparse_csr,)), lambda s: True)
    assert s.layout == torch.sparse_coo
    assert small_find(sparse_tensors(torch.float32, layouts=("csr",)), lambda s: True).layout == torch.sparse_csr


@pytest.mark.parametrize("call", [
    lambda: sparse_forms(torch.zeros(2, 2, dtype=torch.uint16)),
    lambda: sparse_forms(torch.zeros((), dtype=torch.complex32)),  # no COO for complex32, CSR needs 2 dims
    lambda: sparse_forms(torch.zeros(2, 2).to_sparse()),
    lambda: sparse_forms(torch.zeros(2, 2, device="meta")),
    lambda: sparse_forms(torch.zeros(2, 2), layouts=("bogus",)),
    lambda: sparse_tensors(torch.float32, layouts=(torch.strided,)),
    lambda: sparse_tensors(torch.float32, layouts=()),
    lambda: sparse_tensors(torch.float32, max_dims=-1),
    lambda: sparse_tensors(torch.float32, max_side=-2),
    lambda: sparse_tensors(torch.float32, density=1.5),
    lambda: sparse_tensors("float32"),
    lambda: sparse_tensors(torch.float8_e4m3fn),
    lambda: sparse_tensors(torch.float32, layouts=(torch.sparse_csr,), max_dims=1),
], ids=lambda call: "")
def test_bad_arguments_are_refused_eagerly(call):
    with pytest.raises(InvalidArgument):
        call()
