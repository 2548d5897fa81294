"""The sample pool cache keeps the most recent pools, more of them while they are small, and a pool made
again after eviction is the same pool."""

from __future__ import annotations

import pytest
import torch

from torchcts.plan.catalog import find_op
from torchcts.strategies import fingerprint, opinfo_pool

OPS = ("abs", "exp", "sin", "cos", "neg")


@pytest.fixture
def empty_cache():
    opinfo_pool._pools.clear()
    yield
    opinfo_pool._pools.clear()


def _make_all() -> None:
    for name in OPS:
        opinfo_pool.sample_pool(find_op(name), torch.float32, 2, 4)


def test_small_pools_are_kept_up_to_the_count_limit(empty_cache, monkeypatch):
    monkeypatch.setattr(opinfo_pool, "_POOL_CACHE_SIZE", 2)
    monkeypatch.setattr(opinfo_pool, "_POOL_CACHE_MAX", 4)
    _make_all()
    assert [key[0] for key in opinfo_pool._pools] == list(OPS[1:])  # the oldest went first


def test_past_the_byte_budget_only_the_most_recent_are_kept(empty_cache, monkeypatch):
    monkeypatch.setattr(opinfo_pool, "_POOL_CACHE_SIZE", 2)
    monkeypatch.setattr(opinfo_pool, "_POOL_CACHE_BYTES", 0)
    _make_all()
    assert [key[0] for key in opinfo_pool._pools] == list(OPS[-2:])


def test_a_pool_made_again_is_the_same(empty_cache, monkeypatch):
    op = find_op("abs")
    first = [fingerprint(s) for s in opinfo_pool.sample_pool(op, torch.float32, 2, 4)]
    monkeypatch.setattr(opinfo_pool, "_POOL_CACHE_SIZE", 0)
    monkeypatch.setattr(opinfo_pool, "_POOL_CACHE_BYTES", 0)
    _make_all()
    assert opinfo_pool.pool_key(op, torch.float32, 2, 4) not in opinfo_pool._pools
    assert [fingerprint(s) for s in opinfo_pool.sample_pool(op, torch.float32, 2, 4)] == first


def test_storage_bytes_count_each_storage_once():
    base = torch.zeros(10)
    from torch.testing._internal.opinfo.core import SampleInput

    pool = (SampleInput(base, args=(base[2:],)), SampleInput(torch.ones(3, dtype=torch.float64)))
    assert opinfo_pool._storage_bytes(pool) == 10 * 4 + 3 * 8
