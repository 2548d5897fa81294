"""Value and size transforms at semantic level 2: what each makes, and that cases stay valid for the op."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from torchcts.plan.catalog import find_op
from torchcts.strategies import call_variant, opinfo_samples, place
from torchcts.strategies.samples import cpu_pinned_paths
from torchcts.strategies.value_transforms import raised_to_4d, repeats_are_safe, resized, with_tie

SETTINGS = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)


def test_ties_repeat_the_maximum_next_to_itself_and_keep_rows_sorted():
    rows = torch.tensor([[1.0, 2.0, 3.0, 9.0], [0.0, 4.0, 5.0, 6.0]])
    tied, note = with_tie(rows, 0)  # choice 0: the largest element
    assert "largest" in note
    assert int((tied == 9.0).sum()) == 2
    assert torch.equal(tied.sort(dim=-1).values, tied)  # still sorted along the rows
    smallest, _ = with_tie(rows, 1)
    assert int((smallest == 0.0).sum()) == 2


def test_resized_dimensions_keep_order_and_values():
    t = torch.tensor([[1, 5, 7]])
    grown = resized(t, 1, 7)
    assert grown.shape == (1, 7) and set(grown.flatten().tolist()) == {1, 5, 7}
    assert torch.equal(grown.sort(dim=1).values, grown)
    assert resized(t, 1, 0).shape == (1, 0)


def test_raised_tensors_are_4d_channels_last_and_not_plain_contiguous():
    t = torch.arange(60.0).reshape(3, 4, 5)
    raised = raised_to_4d(t)
    assert raised.shape == (1, 3, 4, 5)
    assert raised.is_contiguous(memory_format=torch.channels_last) and not raised.is_contiguous()
    assert torch.equal(raised.reshape(t.shape), t)


def test_repeats_are_unsafe_where_tie_breaking_or_conditioning_is_unspecified():
    from torch.testing._internal.opinfo.core import SampleInput

    plain = SampleInput(torch.zeros(3))
    assert repeats_are_safe("add", plain) and repeats_are_safe("argmax", plain)
    assert not repeats_are_safe("sort", plain) and repeats_are_safe("sort", SampleInput(torch.zeros(3), kwargs={"stable": True}))
    for name in ("topk", "median", "linalg.inv", "nn.functional.batch_norm", "nn.functional.max_pool2d"):
        assert not repeats_are_safe(name, plain), name


@pytest.mark.parametrize("name", ["mm", "add", "sum", "cumsum", "where", "cat", "nn.functional.embedding_bag", "lu_unpack",
                                  "gather", "sigmoid"])
def test_level_two_cases_run_on_cpu(name):
    """Size changes move related dimensions together: CPU accepts every drawn case (or it falls back)."""
    op = find_op(name)
    seen = []

    @SETTINGS
    @given(opinfo_samples(op, torch.float32, level=2))
    def check(case):
        seen.extend(case.transforms)
        call_variant(op, "function", case.sample)

    check()
    assert seen


def test_mm_grows_its_inner_dimension_in_both_operands():
    op = find_op("mm")
    grown = []

    @settings(max_examples=80, deadline=None)
    @given(opinfo_samples(op, torch.float32, level=2, relayout=False, special_values=False))
    def check(case):
        a, b = case.sample.input, case.sample.args[0]
        if any("grown" in note for note in case.transforms):
            grown.append((a.shape, b.shape))
        assert a.shape[1] == b.shape[0]

    check()
    assert any(a[1] > 32 for a, b in grown), grown


def test_samples_with_index_tensors_keep_their_sizes():
    op = find_op("nn.functional.embedding_bag")

    @SETTINGS
    @given(opinfo_samples(op, torch.float32, level=2))
    def check(case):
        assert not any("cut to" in n or "grown" in n or "raised" in n for n in case.transforms)

    check()


def test_level_one_cases_change_no_sizes_or_values():
    op = find_op("sum")

    @SETTINGS
    @given(opinfo_samples(op, torch.float32, level=1, special_values=False))
    def check(case):
        assert not any(word in note for note in case.transforms for word in ("tie", "broadcast", "cut", "grown", "raised"))

    check()


def test_integer_inputs_get_division_safe_extremes_only():
    op = find_op("floor_divide")
    extremes = []

    @settings(max_examples=60, deadline=None)
    @given(opinfo_samples(op, torch.int32, level=1, relayout=False))
    def check(case):
        info = torch.iinfo(torch.int32)
        assert not bool((case.sample.input == info.min).any())
        extremes.append(bool((case.sample.input == info.max).any()))
        for arg in case.sample.args:
            if isinstance(arg, torch.Tensor):
                assert bool((arg.abs() < 100).all())  # other integer tensors keep the sample's values
        call_variant(op, "function", case.sample)

    check()
    assert any(extremes)


def test_arguments_opinfo_keeps_on_cpu_stay_there():
    op = find_op("tensor_split")
    pinned = cpu_pinned_paths(op, torch.float32)
    assert pinned == {"args[0]"}
    sample = next(s for s in op.sample_inputs("cpu", torch.float32) if isinstance(s.args[0], torch.Tensor))
    placed = place(sample, "meta", keep_on_cpu=pinned).value
    assert placed.input.device.type == "meta" and placed.args[0].device.type == "cpu"
