"""`containers`: containers that decode, scale and zero-point tensors of the format's kinds, every packed layout."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.containers import FORMATS, decode
from torchcts.strategies.containers import PACKED_LAYOUTS, containers, relaid_packed


@pytest.mark.parametrize("name", ["uint4", "int4_symmetric_msb_first", "mxfp4", "nvfp4", "fp6_e2m3", "int2_ternary",
                                  "int8_asymmetric", "mxint8"])
@settings(max_examples=25)
@given(data=st.data())
def test_drawn_containers_are_well_formed(name, data):
    spec = FORMATS[name]
    container = data.draw(containers(name, layouts=PACKED_LAYOUTS))
    count = 1
    for side in container.shape:
        count *= side
    assert container.packed.dtype == torch.uint8 and container.packed.numel() == spec.packed_bytes(count)
    groups = container.scale.numel()
    assert count % groups == 0
    if spec.block is not None:
        assert count // groups == spec.block and container.shape[-1] % spec.block == 0
    if spec.scale == "float":
        assert container.scale.dtype in (torch.float32, torch.bfloat16, torch.float16)
    else:
        assert container.scale.element_size() == 1
    if spec.zero_point:
        low, high = spec.zero_point_range
        assert container.zero_point.shape == container.scale.shape
        assert low <= int(container.zero_point.min()) and int(container.zero_point.max()) <= high
    else:
        assert container.zero_point is None
    assert decode(container).shape == tuple(container.shape)


@settings(max_examples=60)
@given(data=st.data())
def test_every_layout_keeps_the_bytes_in_order_and_fills_around_them(data):
    packed = torch.tensor(data.draw(st.lists(st.integers(0, 255), min_size=1, max_size=24)), dtype=torch.uint8)
    layout = data.draw(st.sampled_from(PACKED_LAYOUTS))
    view = relaid_packed(data.draw, packed, layout)
    assert torch.equal(view.reshape(-1), packed)
    if layout in ("window", "interleaved", "padded_rows", "column_major"):
        assert view.storage_offset() > 0
    if (layout == "interleaved" and packed.numel() > 1) or (layout == "padded_rows" and view.shape[0] > 1):
        assert not view.is_contiguous()
    storage = torch.as_strided(view, (view.untyped_storage().nbytes(),), (1,), 0)
    assert int((storage == 0xA5).sum()) >= storage.numel() - packed.numel()


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_shrunk_container_is_the_simplest():
    from hypothesis import find

    found = find(containers("uint4", layouts=PACKED_LAYOUTS), lambda c: True)
    assert found.shape == (1,) and found.packed.is_contiguous() and found.packed.tolist() == [0]
    assert found.scale.item() == 1.0 and found.zero_point.item() == 0


@pytest.mark.parametrize("kwargs, message", [({"name": "nf5"}, "not a container format"),
                                             ({"name": "nf4", "layouts": ("tiled",)}, "each one of"),
                                             ({"name": "nf4", "max_rows": 0}, "max_rows")])
def test_arguments_are_checked_before_any_draw(kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        containers(**kwargs)
