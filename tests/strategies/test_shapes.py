"""Shapes: scalars, empty and size-1 dims, broadcastable sets, tile sizes within the budget."""

import math

import pytest
import torch
from hypothesis import find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument, NoSuchExample

from torchcts.strategies import TILE_BOUNDARY_SIZES, broadcastable_shapes, mutually_broadcastable_shapes, shapes


@given(shapes(min_dims=1, max_dims=3, max_side=4))
def test_shapes_respect_bounds(shape):
    assert 1 <= len(shape) <= 3
    assert all(0 <= side <= 4 for side in shape)


def test_shapes_reach_scalars_empty_and_size_one_dims():
    assert find(shapes(), lambda s: len(s) == 0) == ()
    assert 0 in find(shapes(), lambda s: 0 in s)
    assert find(shapes(min_dims=2), lambda s: True) == (1, 1)  # the shrink target: size-1 dims


def test_tile_sizes_only_when_allowed_and_within_budget():
    shape = find(shapes(tile_sizes=True, max_numel=5000), lambda s: any(side in TILE_BOUNDARY_SIZES for side in s))
    assert math.prod(shape) <= 5000

    @settings(max_examples=200)
    @given(shapes(tile_sizes=False))
    def no_tiles(shape):
        assert all(side <= 5 for side in shape)

    no_tiles()


@given(shapes(tile_sizes=True, max_numel=4096, max_dims=3))
def test_tile_shapes_never_exceed_the_element_budget(shape):
    assert math.prod(shape) <= 4096


@given(st.data())
def test_broadcastable_shapes_broadcast_to_the_target(data):
    target = data.draw(shapes(max_dims=4), label="target")
    shape = data.draw(broadcastable_shapes(target), label="shape")
    assert torch.broadcast_shapes(shape, target) == torch.Size(target)


@given(mutually_broadcastable_shapes(3))
def test_mutually_broadcastable_shapes_report_their_result(drawn):
    inputs, result = drawn
    assert torch.broadcast_shapes(*inputs) == torch.Size(result)


def test_invalid_arguments_are_rejected_eagerly():
    with pytest.raises(InvalidArgument):
        shapes(min_dims=3, max_dims=2)
    with pytest.raises(InvalidArgument):
        shapes(max_side=0)


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_shapes_for_follows_level_and_resource_limits():
    from torchcts.manifest import parse_manifest
    from torchcts.strategies import shapes_for

    small, _ = parse_manifest({"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
                               "capabilities": {}, "resource_limits": {"max_tensor_size_mb": 0.01}})
    with pytest.raises(NoSuchExample):  # no tile sizes below level 5
        find(shapes_for(level=4), lambda s: any(side in TILE_BOUNDARY_SIZES for side in s))
    big = find(shapes_for(level=5), lambda s: 1024 in s)
    assert math.prod(big) <= 2**17

    @settings(max_examples=100)
    @given(shapes_for(small, level=8, dtype=torch.float32))
    def within_limit(shape):
        assert math.prod(shape) * 4 <= 0.01 * 2**20

    within_limit()
