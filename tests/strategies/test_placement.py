"""Placement keeps sizes, strides, storage offset and storage contents exactly, on every device."""

import pytest
import torch
from hypothesis import given, settings

from torchcts.strategies import copy_exact, fingerprint, place, relayouts, tensors
from torchcts.strategies.fingerprint import reachable_storage


@settings(max_examples=100)
@given(tensors(torch.float32))
def test_copy_exact_keeps_layout_and_bits(t):
    copy = copy_exact(t)
    assert (copy.shape, copy.stride(), copy.storage_offset()) == (t.shape, t.stride(), t.storage_offset())
    assert copy.untyped_storage().data_ptr() != t.untyped_storage().data_ptr() or t.numel() == 0
    assert fingerprint(copy) == fingerprint(t)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_place_is_faithful_on_real_devices(device):
    @settings(max_examples=50)
    @given(tensors(torch.float16, max_dims=4))
    def check(t):
        placed = place({"x": t, "pair": (t, 3)}, device)
        assert placed.faithful, placed.mismatches
        moved = placed.value["x"]
        assert moved.device.type == device
        assert (moved.shape, moved.stride(), moved.storage_offset()) == (t.shape, t.stride(), t.storage_offset())
        assert placed.value["pair"][1] == 3

    check()


def test_place_preserves_gaps_and_offset_in_device_storage():
    t = relayouts(torch.arange(6.0).reshape(2, 3))
    from hypothesis import find

    strided = find(t, lambda v: v.storage_offset() > 0 and v.stride(-1) > 1)
    moved = place(strided, "cpu").value
    assert torch.equal(reachable_storage(moved).isnan(), reachable_storage(strided).isnan())


def test_place_moves_sample_inputs():
    from torch.testing._internal.opinfo.core import SampleInput

    sample = SampleInput(torch.ones(2, 3).t(), args=(torch.zeros(3, 1),), kwargs={"alpha": 2})
    placed = place(sample, "meta")
    assert placed.faithful
    assert placed.value.input.device.type == "meta" and placed.value.input.stride() == (1, 3)
    assert placed.value.args[0].device.type == "meta" and placed.value.kwargs["alpha"] == 2


def same_storage(a, b):
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata  # data_ptr is 0 for every meta tensor


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_place_keeps_tensors_that_share_storage_sharing_it(device):
    from torch.testing._internal.opinfo.core import SampleInput

    x = torch.arange(6.0)
    sample = SampleInput(x, args=(torch.tensor([0, 1]),), kwargs={"out": x[1:3]})  # out= overlaps input
    placed = place(sample, device).value
    assert same_storage(placed.input, placed.kwargs["out"]) and placed.kwargs["out"].storage_offset() == 1
    assert not same_storage(placed.input, x) and not same_storage(placed.args[0], placed.input)
    if device == "cpu":  # an aliased input error input is rejected on the copy as on the original
        with pytest.raises(RuntimeError, match="unsupported operation"):
            torch.take(placed.input, placed.args[0], out=placed.kwargs["out"])


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_place_keeps_a_deliberately_foreign_tensor_off_the_device(device):
    foreign = torch.empty(3, device="meta")
    placed = place({"x": torch.ones(3), "spacing": [foreign]}, device).value
    assert placed["x"].device.type == device
    assert placed["spacing"][0].device.type != device and placed["spacing"][0].shape == (3,)
