"""The channels_last suite: passes on cpu and the clean faulty device, catches each seeded bug, shrinks and replays."""

from __future__ import annotations


import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from torchcts.core.outcomes import Outcome
from torchcts.properties.channels_last_cases import SCENARIO_CASES
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.properties.suites.channels_last import (PROGRAMS, comparison, format_dropped_by_cpu, scenario_cases,
                                                    stored_channels_last)
from torchcts.testing.faulty.suite_bugs.channels_last import BUGS

SCENARIOS = tuple(PROGRAMS)
BUG = {bug.name: bug for bug in BUGS}
CAUGHT_BY = {  # each seeded bug and a scenario that must catch it
    "pooling_drops_channels_last": "max_pool2d",
    "grouped_conv_channels_last": "conv2d",
    "upsample_reads_nchw": "upsample_bicubic",
    "conv_weight_format_ignored": "conv3d",
    "avg_pool3d_pad_counted_out": "avg_pool3d",
    "channels_last_output_strides": "elementwise_chain",  # the core bug, in this suite's area
}


def test_every_scenario_has_a_program_and_cases():
    assert set(SCENARIOS) == set(SCENARIO_CASES) and len(SCENARIOS) >= 20
    assert {bug.suite for bug in BUGS} == {"channels_last"} and set(BUG) <= set(CAUGHT_BY)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_passes_on_cpu_and_on_the_clean_faulty_device_with_valid_cases(run_suite, scenario):
    for device in ("cpu", "faulty"):
        record = run_suite("channels_last", scenario, "float32", device=device, max_examples=5)
        assert record["outcome"] is Outcome.PASSED, (device, record.get("error"))
        assert record["cpu_contract_cases"] == 0, f"{scenario}: cases are built valid, CPU must accept them"


@pytest.mark.parametrize("scenario", ["conv2d", "conv_transpose3d", "batch_norm3d", "upsample_bilinear",
                                      "elementwise_chain"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_scenarios_pass_on_the_clean_faulty_device(run_suite, scenario, dtype):
    record = run_suite("channels_last", scenario, dtype, device="faulty", max_examples=5)
    assert record["outcome"] is Outcome.PASSED, record.get("error")


def test_a_scenario_cpu_cannot_run_in_a_dtype_is_cpu_contract(run_suite):
    record = run_suite("channels_last", "avg_pool3d", "bfloat16", max_examples=3)  # no bfloat16 avg_pool3d on CPU
    assert record["outcome"] is Outcome.CPU_CONTRACT


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_each_seeded_bug_is_caught(run_suite, bug):
    record = run_suite("channels_last", CAUGHT_BY[bug], "float32", device="faulty", bugs=(bug,), max_examples=20,
                       shrink=False)
    assert record["outcome"] is Outcome.FAILED, record.get("error")


def _cl(*shape, fmt=torch.channels_last):
    return torch.randn(*shape).contiguous(memory_format=fmt)


def _fires(name, op, *args):
    return BUG[name].fires(op, args, {})


def test_bugs_fire_only_under_their_condition():
    plain, cl, ambiguous = torch.randn(2, 3, 4, 4), _cl(2, 3, 4, 4), _cl(2, 1, 4, 4)  # C=1: also contiguous
    assert _fires("pooling_drops_channels_last", None, cl, [2, 2]) and not _fires(
        "pooling_drops_channels_last", None, plain, [2, 2]) and not _fires(
        "pooling_drops_channels_last", None, ambiguous, [2, 2])
    conv = lambda x, w, groups, transposed=False: (x, w, None, [1, 1], [0, 0], [1, 1], transposed, [0, 0], groups)
    grouped = BUG["grouped_conv_channels_last"]
    assert grouped.fires(None, conv(cl, torch.randn(3, 1, 1, 1), 3), {})
    assert not grouped.fires(None, conv(cl, torch.randn(3, 3, 1, 1), 1), {})  # groups 1
    assert not grouped.fires(None, conv(plain, torch.randn(3, 1, 1, 1), 3), {})  # contiguous input
    assert not grouped.fires(None, conv(cl, torch.randn(3, 1, 1, 1), 3, True), {})  # transposed
    weight_format = BUG["conv_weight_format_ignored"]
    assert weight_format.fires(None, conv(plain, _cl(2, 3, 2, 2), 1), {})
    assert not weight_format.fires(None, conv(plain, torch.randn(2, 3, 2, 2), 1), {})
    assert not weight_format.fires(None, conv(cl, _cl(2, 3, 2, 2), 1), {})
    assert _fires("upsample_reads_nchw", None, cl, [8, 8], False) and not _fires(
        "upsample_reads_nchw", None, plain, [8, 8], False)
    cl3d = _cl(1, 2, 3, 3, 3, fmt=torch.channels_last_3d)
    assert _fires("avg_pool3d_pad_counted_out", None, cl3d, [2, 2, 2], [1, 1, 1], [1, 1, 1])
    assert not _fires("avg_pool3d_pad_counted_out", None, cl3d, [2, 2, 2], [1, 1, 1], [0, 0, 0])  # no padding
    assert not _fires("avg_pool3d_pad_counted_out", None, cl3d, [2, 2, 2], [1, 1, 1], [1, 1, 1], False, False)
    assert not _fires("avg_pool3d_pad_counted_out", None, torch.randn(1, 2, 3, 3, 3), [2, 2, 2], [1, 1, 1], [1, 1, 1])


def test_a_bug_on_the_clean_path_changes_nothing():
    """With a bug on, the same ops on contiguous inputs give CPU's answer (OpInfo items stay green)."""
    from torchcts.testing import faulty

    x, w = torch.randn(1, 4, 5, 5), torch.randn(4, 2, 3, 3)
    faulty.enable_bugs(*CAUGHT_BY)
    try:
        on_device = torch.nn.functional.conv2d(x.to("faulty"), w.to("faulty"), groups=2).cpu()
        pooled = torch.nn.functional.max_pool2d(x.to("faulty"), 2).cpu()
    finally:
        faulty.disable_bugs()
    torch.testing.assert_close(on_device, torch.nn.functional.conv2d(x, w, groups=2), rtol=0, atol=0)
    assert pooled.stride() == torch.nn.functional.max_pool2d(x, 2).stride()


@given(st.sampled_from(SCENARIOS).flatmap(lambda s: scenario_cases(s, torch.float32)))
def test_cases_are_cpu_samples_that_say_what_was_drawn(case):
    assert case.op_id in PROGRAMS and case.variant == "scenario" and case.transforms
    assert isinstance(case.sample.input, torch.Tensor) and case.sample.input.device.type == "cpu"


def test_the_tolerance_widens_only_for_accumulating_kernels_below_32_bits():
    def widening(scenario, dtype):
        return comparison(scenario).factor({}, dtype)

    assert widening("conv2d", torch.bfloat16) == 4.0 and widening("batch_norm3d", torch.float16) == 4.0
    assert widening("conv2d", torch.float32) == 1.0 and widening("max_pool2d", torch.bfloat16) == 1.0


def test_the_output_format_is_left_open_only_where_cpu_drops_channels_last():
    x3d, w3d = _cl(2, 4, 3, 3, 3, fmt=torch.channels_last_3d).double(), torch.randn(2, 4, 1, 1, 1).double()
    dropped = torch.nn.functional.conv3d(x3d, w3d)  # CPU has no float64 channels_last_3d convolution
    assert dropped.is_contiguous() and format_dropped_by_cpu(SampleInput(x3d, args=(w3d,)), dropped)
    x, w = _cl(2, 4, 3, 3), torch.randn(2, 4, 1, 1)
    kept = torch.nn.functional.conv2d(x, w)
    assert not kept.is_contiguous() and not format_dropped_by_cpu(SampleInput(x, args=(w,)), kept)
    assert stored_channels_last(x) and stored_channels_last(_cl(2, 4, 3, 6)[..., ::2])  # a stepped view
    assert not stored_channels_last(_cl(2, 1, 3, 3)) and not stored_channels_last(torch.randn(2, 4, 3, 3))


@pytest.mark.slow
def test_a_failure_is_stored_small_and_replays(run_suite, tmp_path, replays_failing):
    bug = "upsample_reads_nchw"
    record = run_suite("channels_last", "upsample_bicubic", "float32", device="faulty", bugs=(bug,), max_examples=20,
                       corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED
    stored = record["counterexample"]
    assert stored["elements"] <= 8, stored  # shrinks to a couple of channels and pixels
    replays_failing(stored["path"], bug, tmp_path)


def test_a_stored_chain_whose_operands_broadcast_each_other_is_refused():
    """The review's case: input (25,1,255,1,1) and other (1,25,1,255,1), each 6375 elements and within the image
    bound, broadcast to 40.6M elements (4.4 GB on replay); `other` must be the input's shape or one value a
    channel. Expanded views keep this test small: the rule reads shapes only."""
    from torchcts.properties.channels_last_params import SCENARIO_PARAMS

    params = SCENARIO_PARAMS["elementwise_chain"]

    def problem(input_shape, other_shape):
        input, other = torch.zeros(()).expand(input_shape), torch.zeros(()).expand(other_shape)
        return params.problem(SampleInput(input, args=(other, ("add",))))

    refused = problem((25, 1, 255, 1, 1), (1, 25, 1, 255, 1))
    assert refused is not None and refused[0] == "inputs" and "one value a channel" in refused[1], refused
    assert problem((2, 3, 4, 5), (2, 1, 4, 5)) is not None  # broadcastable, yet neither shape the strategy draws
    assert problem((2, 3, 4, 5), (2, 3, 4, 5)) is None and problem((2, 3, 4, 5), (1, 3, 1, 1)) is None
    assert problem((2, 3, 4, 5, 6), (1, 3, 1, 1, 1)) is None
