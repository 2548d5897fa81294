"""Values: every dtype gets ordinary values and its own special values; shrinking isolates one special value."""

import math

import pytest
import torch
from hypothesis import find, given, settings
from hypothesis import strategies as st

from torchcts import dtypes
from torchcts.strategies import special_values, values


@pytest.mark.parametrize("dtype", dtypes.CLAIMABLE_DTYPES, ids=str)
def test_special_values_are_exactly_representable(dtype):
    table = special_values(dtype)
    assert table
    if dtype.is_floating_point:
        stored = torch.tensor(table, dtype=torch.float64).to(dtype).to(torch.float64)
        for want, got in zip(table, stored.tolist()):
            assert (math.isnan(want) and math.isnan(got)) or (want == got and math.copysign(1, want) == math.copysign(1, got))


def test_special_values_cover_what_backends_get_wrong():
    f32 = special_values(torch.float32)
    assert any(math.isnan(v) for v in f32)
    assert {math.inf, -math.inf, 0.5, 2.5, torch.finfo(torch.float32).max} <= set(f32)
    assert any(v == 0 and math.copysign(1, v) < 0 for v in f32)  # -0.0
    assert any(0 < v < torch.finfo(torch.float32).smallest_normal for v in f32)  # subnormal
    assert {-128, 127} <= set(special_values(torch.int8))
    assert {0, 2**64 - 1} <= set(special_values(torch.uint64))
    assert not any(math.isinf(v) for v in special_values(torch.float8_e4m3fn))  # e4m3fn has no inf
    assert any(isinstance(v, complex) and math.isnan(v.real) for v in special_values(torch.complex64))


@pytest.mark.parametrize("dtype", dtypes.CLAIMABLE_DTYPES, ids=str)
def test_values_have_the_requested_shape_and_dtype(dtype):
    @settings(max_examples=20)
    @given(values((3, 4), dtype))
    def check(t):
        assert t.shape == (3, 4) and t.dtype == dtype and t.is_contiguous()

    check()


def test_nan_failure_shrinks_to_a_single_nan():
    t = find(values((4, 5), torch.float32), lambda t: bool(t.isnan().any()))
    assert int(t.isnan().sum()) == 1
    assert not t[~t.isnan()].isinf().any()


def test_integer_extreme_failure_shrinks_to_one_extreme():
    t = find(values((8,), torch.int32), lambda t: bool((t == torch.iinfo(torch.int32).min).any()))
    assert int((t == torch.iinfo(torch.int32).min).sum()) == 1


def test_values_without_specials_are_finite():
    @settings(max_examples=100)
    @given(values((16,), torch.float16, special=False))
    def check(t):
        assert t.isfinite().all()

    check()


@given(st.integers(0, 2**32 - 1))
def test_same_draws_give_the_same_values(seed):
    from torchcts.strategies.values import Fill, fill_tensor

    a = fill_tensor((3, 3), torch.bfloat16, Fill.NORMAL, seed)
    b = fill_tensor((3, 3), torch.bfloat16, Fill.NORMAL, seed)
    assert torch.equal(a, b)
