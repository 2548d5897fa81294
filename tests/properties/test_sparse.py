"""The sparse suite (`properties/suites/sparse.py`): clean on cpu and faulty, each seeded bug caught, failures stored small."""

from __future__ import annotations


import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.properties.suites.sparse import PROGRAMS, coalesce, construct
from torchcts.testing.faulty.suite_bugs.sparse import BUGS

BUG = {bug.name: bug for bug in BUGS}
CAUGHT_BY = {"sparse_sum_drops_duplicates": ("sparse_sum", "float32"), "coalesce_unsorted": ("coalesce", "float32"),
             "csr_mm_drops_last_row": ("sparse_mm", "float64"), "coalesce_keeps_duplicates": ("coalesce", "float32"),
             "dense_to_compressed_reads_column_major": ("to_sparse_round_trip", "float32")}
RAN = (Outcome.PASSED, Outcome.CPU_CONTRACT)


@pytest.mark.parametrize("scenario", sorted(PROGRAMS))
def test_every_scenario_passes_on_cpu_and_on_the_clean_faulty_device(run_suite, scenario):
    assert run_suite("sparse", scenario, "float32", max_examples=6)["outcome"] is Outcome.PASSED
    assert run_suite("sparse", scenario, "float32", device="faulty", max_examples=6)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("dtype", ["float64", "complex64", "int64", "bool", "bfloat16"])
def test_other_dtypes_pass_or_are_refused_by_cpu(run_suite, dtype):
    for scenario in ("construct", "sparse_mm"):
        record = run_suite("sparse", scenario, dtype, max_examples=4)
        assert record["outcome"] in RAN, (scenario, record)


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_each_seeded_bug_is_caught(run_suite, bug):
    scenario, dtype = CAUGHT_BY[bug]
    record = run_suite("sparse", scenario, dtype, device="faulty", bugs=(bug,), max_examples=25, shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def _coo(indices, vals, size, coalesced=False):
    return torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(vals), size, is_coalesced=coalesced)


def test_the_bugs_stay_silent_without_their_condition():
    distinct = _coo([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    duplicated = _coo([[0, 0], [1, 1]], [1.0, 2.0], (2, 2))
    fires = BUG["sparse_sum_drops_duplicates"].fires
    assert fires(None, (duplicated,), {}) and not fires(None, (distinct,), {})
    assert not fires(None, (duplicated.coalesce(),), {}) and not fires(None, (torch.ones(3),), {})
    fires = BUG["coalesce_unsorted"].fires
    assert fires(None, (distinct,), {}) and not fires(None, (distinct.coalesce(),), {})
    fires = BUG["csr_mm_drops_last_row"].fires
    dense = torch.eye(2)
    mm, addmm = torch.ops.aten.mm.default, torch.ops.aten.addmm.default
    assert fires(mm, (dense.to_sparse_csr(), dense), {}) and fires(addmm, (dense, dense.to_sparse_csr(), dense), {})
    assert not fires(mm, (dense, dense), {}) and not fires(mm, (dense.to_sparse(), dense), {})
    assert not fires(mm, (torch.ones(1, 2).to_sparse_csr(), dense), {})  # one row: no last row to lose
    fires = BUG["coalesce_keeps_duplicates"].fires
    assert fires(None, (duplicated,), {}) and not fires(None, (distinct,), {})
    kept = BUG["coalesce_keeps_duplicates"].perturb(None, (duplicated,), {}, duplicated.coalesce())
    assert kept._nnz() == 2 and kept.is_coalesced() and torch.equal(kept.to_dense(), duplicated.to_dense())
    bug, matrix = BUG["dense_to_compressed_reads_column_major"], torch.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0]])
    csr, to_sparse = {"layout": torch.sparse_csr}, torch.ops.aten._to_sparse.default
    assert bug.fires(None, (matrix,), csr) and bug.fires(None, (matrix[None],), {"layout": torch.sparse_csc})
    assert not bug.fires(None, (matrix,), {"layout": torch.sparse_coo}) and not bug.fires(None, (matrix[:1],), csr)
    assert not bug.fires(None, (matrix.to_sparse(),), csr) and not bug.fires(None, (matrix,), {**csr, "dense_dim": 1})
    misread = bug.perturb(to_sparse, (matrix,), csr, to_sparse(matrix, **csr))
    assert torch.equal(misread.to_dense(), torch.tensor([[0.0, 0.0, 1.0], [0.0, 2.0, 3.0]]))


def test_programs_build_from_parts_and_report_invariants():
    indices, vals, size = torch.tensor([[1, 0, 1], [0, 1, 0]]), torch.tensor([1.0, 2.0, 3.0]), (2, 2)
    dense, idx, stored, nnz, flagged, ordered, was_coalesced, _ = coalesce(indices, None, vals, size, torch.sparse_coo)
    assert dense.tolist() == [[0.0, 2.0], [4.0, 0.0]] and idx.tolist() == [[0, 1], [1, 0]]
    assert (nnz, flagged, ordered, was_coalesced) == (2, True, True, False)
    csr = torch.tensor([[0.0, 5.0], [6.0, 0.0]]).to_sparse_csr()
    s, dense, nnz, *_, index_dtypes = construct(csr.crow_indices(), csr.col_indices(), csr.values(), (2, 2),
                                                torch.sparse_csr)
    assert s.layout == torch.sparse_csr and dense.tolist() == [[0.0, 5.0], [6.0, 0.0]] and nnz == 2
    assert index_dtypes == (torch.int64, torch.int64)
    with pytest.raises(RuntimeError):  # invalid parts are refused, never read out of bounds
        construct(torch.tensor([[5]]), None, torch.tensor([1.0]), (2,), torch.sparse_coo)


@pytest.mark.slow
def test_a_failure_is_stored_small_and_replays(run_suite, tmp_path, replays_failing):
    bug = "sparse_sum_drops_duplicates"
    record = run_suite("sparse", "sparse_sum", "float32", device="faulty", bugs=(bug,), max_examples=20,
                       corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED
    stored = record["counterexample"]
    assert stored["elements"] <= 8, stored  # two duplicate entries of one index
    replays_failing(stored["path"], bug, tmp_path)
