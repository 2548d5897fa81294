"""Nested tensors unbind into their components bit for bit, in both layouts, and shrink simply."""

import pytest
import torch
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.strategies.nested import nested_components, nested_forms, nested_tensors
from torchcts.strategies.fingerprint import same_bits
from torchcts.strategies.values import values

pytestmark = [pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental"),
              pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")]

BOTH = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.int64, torch.int8,
        torch.uint8, torch.bool]
JAGGED_ONLY = [torch.complex32, torch.uint16, torch.uint32, torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2]


def all_same_bits(parts, components) -> bool:
    return len(parts) == len(components) and all(same_bits(p, c) for p, c in zip(parts, components))


@st.composite
def ragged_components(draw, dtypes, ragged_dim=0, min_dims=1):
    """1-4 components of one dtype that differ only in `ragged_dim` (lengths 0-4), with special values."""
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(st.lists(st.integers(0, 3), min_size=max(min_dims, ragged_dim + 1), max_size=3))
    components = []
    for _ in range(draw(st.integers(1, 4))):
        shape[ragged_dim] = draw(st.integers(0, 4))
        components.append(draw(values(tuple(shape), dtype)))
    return components


def small_find(strategy, condition):
    return find(strategy, condition, settings=settings(max_examples=2000, database=None,
                                                       suppress_health_check=list(HealthCheck)))


@pytest.mark.parametrize("layout", [torch.jagged, torch.strided], ids=str)
@settings(max_examples=60)
@given(data=st.data())
def test_unbind_gives_the_components_bit_for_bit(layout, data):
    components = data.draw(ragged_components(BOTH + (JAGGED_ONLY if layout == torch.jagged else [])))
    nt = data.draw(nested_forms(components, layouts=(layout,)))
    assert nt.is_nested and nt.layout == layout and nt.dtype == components[0].dtype
    assert all_same_bits(nt.unbind(), components)
    copies = nested_components(nt)
    assert all_same_bits(copies, components) and all(c.is_contiguous() for c in copies)


@settings(max_examples=40)
@given(data=st.data())
def test_a_ragged_inner_dim_is_held_by_both_layouts(data):
    components = data.draw(ragged_components(BOTH, ragged_dim=1, min_dims=2))
    nt = data.draw(nested_forms(components))
    assert all_same_bits(nt.unbind(), components)


@settings(max_examples=40)
@given(data=st.data())
def test_strided_holds_what_jagged_refuses(data):
    dtype = data.draw(st.sampled_from(BOTH))
    scalars = [data.draw(values((), dtype)) for _ in range(data.draw(st.integers(1, 3)))]
    two_ragged = [data.draw(values((n, n + 1), dtype)) for n in (1, 2)]
    for components in (scalars, two_ragged):
        nt = data.draw(nested_forms(components))
        assert nt.layout == torch.strided and all_same_bits(nt.unbind(), components)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.complex32, torch.uint64], ids=str)
@settings(max_examples=40)
@given(data=st.data())
def test_nested_tensors_respect_their_limits(dtype, data):
    nt = data.draw(nested_tensors(dtype, max_components=3, max_ragged=5, max_inner_dims=2, max_side=3))
    parts = nested_components(nt)
    assert nt.dtype == dtype and 1 <= len(parts) <= 3
    assert all(p.dtype == dtype and p.dim() <= 3 and p.shape[0] <= 5 and p.shape[1:] == parts[0].shape[1:]
               and all(side <= 3 for side in p.shape[1:]) for p in parts)
    assert dtype not in JAGGED_ONLY or nt.layout == torch.jagged


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@pytest.mark.parametrize("layout", [torch.jagged, torch.strided], ids=str)
def test_zero_length_components_are_reachable(layout):
    some = small_find(nested_tensors(torch.float32, layouts=(layout,)),
                      lambda nt: len(nt.unbind()) > 1 and 0 in [c.shape[0] for c in nt.unbind()]
                      and any(c.shape[0] for c in nt.unbind()))
    every = small_find(nested_tensors(torch.float32, layouts=(layout,)),
                       lambda nt: len(nt.unbind()) > 1 and all(c.shape[0] == 0 for c in nt.unbind()))
    assert some.layout == every.layout == layout


def test_each_jagged_form_is_reachable():
    strategy = nested_tensors(torch.float32, layouts=(torch.jagged,))
    holey = small_find(strategy, lambda nt: nt._lengths is not None)
    assert not holey.is_contiguous()
    assert small_find(strategy, lambda nt: nt._lengths is None and nt.is_contiguous()).layout == torch.jagged


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_simplest_is_one_jagged_component_of_length_one():
    nt = small_find(nested_tensors(torch.float32), lambda nt: True)
    assert nt.layout == torch.jagged and [tuple(c.shape) for c in nt.unbind()] == [(1,)]
    assert small_find(nested_forms([torch.ones(2, 3), torch.ones(1, 3)]), lambda nt: True).layout == torch.jagged


@pytest.mark.parametrize("call", [
    lambda: nested_forms([], layouts=(torch.jagged,)),
    lambda: nested_forms([torch.tensor(1.0)], layouts=(torch.jagged,)),
    lambda: nested_forms([torch.ones(2, 3), torch.ones(3, 4)], layouts=(torch.jagged,)),
    lambda: nested_forms([torch.ones(2, dtype=torch.uint16)], layouts=(torch.strided,)),
    lambda: nested_forms([torch.ones(2), torch.ones(2, dtype=torch.int64)]),
    lambda: nested_forms([torch.ones(2), torch.ones(2, 1)]),
    lambda: nested_forms(torch.ones(2, 3)),
    lambda: nested_forms([torch.ones(2, device="meta")]),
    lambda: nested_forms([torch.ones(2)], layouts=(torch.sparse_coo,)),
    lambda: nested_forms([torch.ones(2)], layouts=()),
    lambda: nested_tensors(torch.float32, max_components=0),
    lambda: nested_tensors(torch.float32, max_ragged=-1),
    lambda: nested_tensors(torch.float32, max_inner_dims=1.5),
    lambda: nested_tensors(torch.complex32, layouts=(torch.strided,)),
    lambda: nested_tensors("float32"),
], ids=lambda call: "")
def test_bad_arguments_are_refused_eagerly(call):
    with pytest.raises(InvalidArgument):
        call()
