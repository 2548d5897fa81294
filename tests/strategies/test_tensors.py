"""Dense tensors: dtype and shape honoured, overlap only when allowed, shrink toward the plain case."""

import pytest
import torch
from hypothesis import find, given, settings

from torchcts import dtypes
from torchcts.strategies import is_overlapping, tensors
from torchcts.strategies.layouts import _constant_along


@pytest.mark.parametrize("dtype", dtypes.CLAIMABLE_DTYPES, ids=str)
def test_tensors_of_every_claimable_dtype(dtype):
    @settings(max_examples=25)
    @given(tensors(dtype, max_dims=3))
    def check(t):
        assert t.dtype == dtype and t.device.type == "cpu" and t.dim() <= 3

    check()


@given(tensors(torch.float32, shape=(2, 3)))
def test_a_fixed_shape_is_kept(t):
    assert t.shape == (2, 3)


@settings(max_examples=200)
@given(tensors(torch.float32, allow_overlap=False))
def test_no_overlap_when_the_tensor_may_be_written(t):
    assert not is_overlapping(t)
    t.add_(1)  # writable in place


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_overlapping_sliding_windows_are_reachable():
    t = find(tensors(torch.float32, min_dims=2), lambda t: is_overlapping(t) and not any(s == 0 for s in t.stride()))
    assert t.stride()[-2:] == (1, 1)
    assert torch.equal(t[..., 1, 0], t[..., 0, 1])  # the same memory seen twice


def test_plain_case_is_the_shrink_target():
    t = find(tensors(torch.float32, min_dims=2), lambda t: True)
    assert t.shape == (1, 1) and t.is_contiguous() and t.storage_offset() == 0 and t.isfinite().all()


def test_nan_failure_shrinks_to_a_single_nan_in_a_small_tensor():
    t = find(tensors(torch.float32, min_dims=1), lambda t: bool(t.isnan().any()))
    assert int(t.isnan().sum()) == 1 and t.numel() == 1


def test_failure_needing_a_transposed_matrix_shrinks_to_a_small_one():
    t = find(tensors(torch.float32, min_dims=2), lambda t: t.dim() == 2 and t.stride(0) < t.stride(1) and t.stride(0) > 0)
    assert t.numel() <= 4


def test_expanded_inputs_have_constant_values_along_zero_stride_dims():
    @settings(max_examples=200)
    @given(tensors(torch.float32, max_dims=3))
    def check(t):
        for dim, (size, stride) in enumerate(zip(t.shape, t.stride())):
            if stride == 0 and size > 1:
                assert _constant_along(t, dim)

    check()
