"""Re-layouts change where values sit in memory, never the values; overlap only when allowed."""

import pytest
import torch
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts import dtypes
from torchcts.strategies import describe_layout, is_overlapping, relayouts, tensors, values
from torchcts.strategies.fingerprint import same_bits
from torchcts.strategies.layouts import strided_view


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8,
                                   torch.bool, torch.complex64, torch.float8_e5m2], ids=str)
def test_relayouts_preserve_values_bit_for_bit(dtype):
    @settings(max_examples=60)
    @given(st.data())
    def check(data):
        source = data.draw(values(data.draw(st.lists(st.integers(0, 4), max_size=4).map(tuple)), dtype))
        moved = data.draw(relayouts(source))
        assert same_bits(moved, source, nan_payloads=True)

    check()


def test_every_layout_kind_is_reachable():
    source = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    strategy = relayouts(source)
    assert find(strategy, lambda t: t.storage_offset() > 0).storage_offset() == 1
    find(strategy, lambda t: t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous())
    find(strategy, lambda t: t.stride(-1) > 1)  # steps / gaps
    find(strategy, lambda t: list(t.stride()) != sorted(t.stride(), reverse=True))  # permuted storage
    five_d = torch.arange(32.0).reshape(2, 2, 2, 2, 2)
    find(relayouts(five_d), lambda t: t.is_contiguous(memory_format=torch.channels_last_3d) and not t.is_contiguous())
    with_size_one = torch.randn(3, 1, 4)
    find(relayouts(with_size_one), lambda t: t.stride(1) == 0)  # find raises NoSuchExample if unreachable


def test_zero_strides_on_larger_dims_only_where_constant_and_allowed():
    constant_rows = torch.tensor([1.0, float("nan"), -0.0]).expand(4, 3).contiguous()
    overlapped = find(relayouts(constant_rows), lambda t: t.stride(0) == 0)
    assert is_overlapping(overlapped) and same_bits(overlapped, constant_rows, nan_payloads=True)

    @settings(max_examples=100)
    @given(relayouts(constant_rows, allow_overlap=False))
    def never_overlapping(t):
        assert not is_overlapping(t)

    never_overlapping()

    varying = torch.arange(12.0).reshape(4, 3)

    @settings(max_examples=100)
    @given(relayouts(varying))
    def never_zero_stride(t):
        assert 0 not in t.stride()

    never_zero_stride()


def test_gaps_hold_a_sentinel_a_wrong_kernel_would_read():
    t = strided_view(torch.zeros(3), order=(0,), steps=(2,), offset=1)
    storage = torch.as_strided(t, (t.storage_offset() + 5,), (1,), 0)
    assert storage.isnan().tolist() == [True, False, True, False, True, False]


def test_shrinks_to_a_contiguous_copy():
    source = torch.randn(3, 4)
    t = find(relayouts(source), lambda t: True)
    assert t.is_contiguous() and t.storage_offset() == 0 and describe_layout(t) == "contiguous"


def test_non_contiguous_failure_shrinks_to_a_handful_of_elements():
    t = find(tensors(torch.float32), lambda t: not t.is_contiguous())
    assert t.numel() <= 4
    assert not t.is_contiguous()


def test_relayouts_reject_non_strided_tensors():
    with pytest.raises(InvalidArgument):
        find(relayouts(torch.eye(3).to_sparse()), lambda t: True)
