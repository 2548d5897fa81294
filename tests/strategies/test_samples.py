"""OpInfo-derived cases: valid for the op, value-preserving, aliasing-safe, shrinking to the first sample."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.manifest import parse_manifest
from torchcts.plan.catalog import find_op
from torchcts.strategies import call_variant, is_overlapping, opinfo_samples, sample_pool
from torchcts.strategies.samples import Case

# Ops of different kinds: elementwise, broadcasting, views, reductions, indexing, sorting,
# linear algebra, convolution, shape manipulation, tensor lists.
OPS = ["add", "mul", "abs", "clamp", "where", "view", "reshape", "transpose", "sum", "mean", "amax",
       "index_select", "gather", "take", "sort", "cumsum", "matmul", "mm", "nn.functional.conv2d",
       "cat", "stack", "flip", "permute", "softmax", "masked_fill", "expand", "tril"]
DETERMINISTIC_SETTINGS = settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow])
NO_SPECIALS = dict(special_values=False)


def tensors_in(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item)


def sample_tensors(sample):
    return list(tensors_in([sample.input, list(sample.args), dict(sample.kwargs)]))


@pytest.mark.parametrize("name", OPS)
def test_relayouted_cases_give_the_cpu_answer_of_the_plain_sample(name):
    """A re-layout never changes values, so the CPU result equals the result on the op's own sample."""
    op = find_op(name)
    pool = sample_pool(op, torch.float32)

    @DETERMINISTIC_SETTINGS
    @given(opinfo_samples(op, torch.float32, **NO_SPECIALS))
    def check(case: Case):
        expected = call_variant(op, "function", pool[case.sample_index])
        actual = call_variant(op, "function", case.sample)
        # another layout may take another BLAS path: last-bit differences only
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5, equal_nan=True)

    check()


@pytest.mark.parametrize("name", ["add", "mul", "clamp", "masked_fill", "tril", "abs"])
def test_inplace_inputs_never_overlap(name):
    op = find_op(name)

    @DETERMINISTIC_SETTINGS
    @given(opinfo_samples(op, torch.float32, variant="inplace"))
    def check(case: Case):
        assert not is_overlapping(case.sample.input)
        try:
            call_variant(op, "inplace", case.sample)
        except RuntimeError as exc:  # in-place ops may refuse broadcasting the input: never overlap
            assert "single memory location" not in str(exc)

    check()


@pytest.mark.parametrize("name", ["index_select", "gather", "take", "nn.functional.embedding", "index_add"])
def test_integer_arguments_keep_their_values(name):
    op = find_op(name)
    pool = sample_pool(op, torch.float32)

    @DETERMINISTIC_SETTINGS
    @given(opinfo_samples(op, torch.float32))
    def check(case: Case):
        original = sample_tensors(pool[case.sample_index])
        for drawn, source in zip(sample_tensors(case.sample), original):
            if not (source.is_floating_point() or source.is_complex()):
                assert torch.equal(drawn, source)
        call_variant(op, "function", case.sample)  # indices still in range: CPU accepts the case

    check()


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_shrinks_to_the_first_sample_unchanged():
    case = find(opinfo_samples(find_op("add"), torch.float32), lambda c: True)
    assert case.sample_index == 0 and case.transforms == ()


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_non_contiguous_failure_shrinks_to_one_relayout_of_the_first_sample():
    op = find_op("add")
    case = find(opinfo_samples(op, torch.float32), lambda c: not c.sample.input.is_contiguous())
    can_be_non_contiguous = [isinstance(s.input, torch.Tensor) and s.input.numel() > 1 for s in sample_pool(op, torch.float32)]
    first_candidates = [i for i, ok in enumerate(can_be_non_contiguous) if ok][:3]
    assert case.sample_index in first_candidates  # shrinking is heuristic: one of the earliest that can fail
    assert len(case.transforms) == 1 and case.transforms[0].startswith("input: ")


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_nan_failure_shrinks_to_a_single_nan():
    case = find(opinfo_samples(find_op("abs"), torch.float32), lambda c: bool(c.sample.input.isnan().any()))
    assert int(case.sample.input.isnan().sum()) == 1
    assert case.sample_index == 0


def test_cases_that_cpu_rejects_fall_back_to_the_sample_layout():
    op = find_op("view")
    cases = []

    @settings(max_examples=60)
    @given(opinfo_samples(op, torch.float32, **NO_SPECIALS))
    def check(case: Case):
        cases.append(case)
        call_variant(op, "function", case.sample)  # never raises: invalid layouts were dropped

    check()
    assert any(c.transforms == ("transforms dropped: CPU rejects them",) for c in cases)
    assert any(c.transforms and "dropped" not in c.transforms[0] for c in cases)


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_manifest_caps_the_pool_and_decides_special_values():
    base = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
            "capabilities": {"inference": True}}
    plain, _ = parse_manifest(dict(base, max_samples=2))
    ieee, _ = parse_manifest(dict(base, max_samples=2, capabilities={"inference": True, "ieee754": r"^abs$"}))
    op = find_op("abs")

    @settings(max_examples=40)
    @given(opinfo_samples(op, torch.float32, manifest=plain))
    def no_specials(case: Case):
        assert case.sample_index < 2
        assert not any("at " in t for t in case.transforms)
        assert case.sample.input.isfinite().all()

    no_specials()
    find(opinfo_samples(op, torch.float32, manifest=ieee), lambda c: bool(c.sample.input.isinf().any()))


def test_pool_is_deterministic_and_leaves_global_rngs_alone():
    import random

    import numpy as np

    op = find_op("nn.functional.dropout")
    states = (torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy())
    from torchcts.strategies import samples

    samples._pools.clear()
    first = [s.input.clone() for s in sample_pool(op, torch.float32)]
    samples._pools.clear()
    second = [s.input for s in sample_pool(op, torch.float32)]
    assert all(torch.equal(a, b) for a, b in zip(first, second)) and first
    assert torch.equal(states[0], torch.get_rng_state())
    assert states[1] == random.getstate()
    assert (states[2] == np.random.get_state()[1]).all()


def test_invalid_requests_are_rejected_eagerly():
    with pytest.raises(InvalidArgument):
        opinfo_samples(find_op("add"), torch.float32, variant="backwards")
    with pytest.raises(InvalidArgument):
        opinfo_samples(find_op("nn.functional.conv2d"), torch.float32, variant="inplace")
    with pytest.raises(InvalidArgument):
        opinfo_samples(find_op("nn.functional.conv2d"), torch.bool)


@settings(max_examples=10)
@given(st.data())
def test_case_fingerprints_depend_on_exact_inputs(data):
    op = find_op("mul")
    case = data.draw(opinfo_samples(op, torch.float32))
    again = Case(case.op_id, case.variant, case.dtype, case.sample, case.sample_index, case.transforms)
    assert case.fingerprint == again.fingerprint
    assert case.fingerprint != Case(case.op_id, "method", case.dtype, case.sample, case.sample_index).fingerprint


def test_reference_inputs_join_the_pool_from_level_three():
    op = find_op("add")
    assert len(sample_pool(op, torch.float32, level=3)) > len(sample_pool(op, torch.float32, level=1))
