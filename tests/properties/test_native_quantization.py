"""The native quantization suite (`torchcts.properties.suites.native_quantization`): passes on CPU and clean faulty
(from_host: runtime_unavailable naming the kernel the faulty device lacks), catches its seeded bugs."""

from __future__ import annotations

import warnings

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.native_quantization import PROGRAMS, compare_quantized, exact_qparams
from torchcts.testing.faulty.suite_bugs.native_quantization import BUGS

BUG = {bug.name: bug for bug in BUGS}
Q = torch.ops.quantized
MISSING = "missing kernel aten::empty_quantized (QuantizedPrivateUse1)"
DETECTED_IN = {"quantize_ties_away": "quantize_per_tensor", "per_channel_zero_point_axis": "quantize_per_channel",
               "int_repr_storage_order": "quantize_per_tensor", "add_wraps_quint8": "add",
               "linear_drops_output_zero_point": "linear", "conv2d_grouped_drops_bias": "conv2d",
               "to_host_float32_channel_scales": "to_host"}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # the quantization APIs' deprecation notice
        warnings.simplefilter("ignore")
        yield


def quantized(values, scale, zero_point, dtype=torch.quint8):
    return torch.quantize_per_tensor(torch.tensor(values), scale, zero_point, dtype)


def test_the_property_is_registered_with_its_capability():
    registry.load()
    spec = registry.get("native_quantization")
    assert (spec.capability, spec.level, spec.items.dtypes) == ("native_quantization", 6, ("float32",))
    assert spec.items.scenarios == tuple(PROGRAMS) and set(DETECTED_IN.values()) < set(PROGRAMS)
    assert {bug.suite for bug in BUGS} == {"native_quantization"} and len(BUGS) >= 5 and set(BUG) == set(DETECTED_IN)


@pytest.mark.parametrize("scenario", sorted(PROGRAMS))
def test_every_scenario_passes_on_cpu_and_on_clean_faulty(run_suite, scenario):
    cpu = run_suite("native_quantization", scenario, max_examples=12)
    assert cpu["outcome"] is Outcome.PASSED and not cpu["cpu_contract_cases"], cpu
    from torchcts.testing import faulty

    faulty.start_trace()
    record = run_suite("native_quantization", scenario, device="faulty", max_examples=12)
    traced = set(faulty.take_trace())
    if scenario == "from_host":  # a CPU quantized tensor cannot be placed on the device: never a silent pass
        assert record["outcome"] is Outcome.RUNTIME_UNAVAILABLE and MISSING in record["reason"], record
        return
    assert record["outcome"] is Outcome.PASSED, record
    for bug in (bug for bug in BUGS if DETECTED_IN[bug.name] == scenario):  # the selftest finds its items by trace
        assert set(bug.ops) <= traced, (bug.name, sorted(traced))


@pytest.mark.parametrize("bug", sorted(DETECTED_IN))
def test_each_seeded_bug_is_detected(run_suite, bug):
    record = run_suite("native_quantization", DETECTED_IN[bug], device="faulty", bugs=(bug,), max_examples=60,
                       shrink=False)
    assert record["outcome"] is Outcome.FAILED, record


def test_one_step_is_allowed_only_off_powers_of_two():
    want = {"int_repr": torch.tensor([3, 4], dtype=torch.uint8), "dequantize": torch.tensor([0.3, 0.6]),
            "scale": 0.3, "zero_point": 2}
    near = {**want, "int_repr": torch.tensor([3, 5], dtype=torch.uint8), "dequantize": torch.tensor([0.3, 0.9])}
    compare_quantized(near, want, exact=False, what="q")
    with pytest.raises(AssertionError, match=r"int_repr\[1\] = 5, CPU gives 4 \(must match exactly"):
        compare_quantized(near, want, exact=True, what="q")
    with pytest.raises(AssertionError, match=r"int_repr\[1\] = 6, CPU gives 4 \(must match within one step"):
        compare_quantized({**near, "int_repr": torch.tensor([3, 6], dtype=torch.uint8)}, want, exact=False, what="q")
    with pytest.raises(AssertionError, match=r"zero_point = 3, CPU gives 2"):
        compare_quantized({**want, "zero_point": 3}, want, exact=False, what="q")
    assert exact_qparams({"scale": 0.125}) and not exact_qparams({"scale": 0.1})
    assert not exact_qparams({"scales": torch.tensor([0.5, 0.3], dtype=torch.float64)})


def test_the_missing_kernel_is_named_as_the_dispatcher_key():
    from torchcts.engine import missing_kernels
    from torchcts.testing import faulty  # noqa: F401 - registers the device

    with pytest.raises(NotImplementedError) as raised:
        quantized([1.0], 0.5, 0).to("faulty")
    assert missing_kernels.find(raised.value, "faulty").describe() == MISSING


def test_the_bugs_stay_silent_without_their_condition():
    qpt = torch.ops.aten.quantize_per_tensor.default
    tie, odd_tie = torch.tensor([1.25, 0.0]), torch.tensor([0.75])  # 2.5 steps (2 even), 1.5 steps (1 odd)
    assert BUG["quantize_ties_away"].fires(qpt, (tie, 0.5, 0, torch.quint8), {})
    assert BUG["quantize_ties_away"].perturb(qpt, (tie, 0.5, 0, torch.quint8), {},
                                             qpt(tie, 0.5, 0, torch.quint8)).int_repr().tolist() == [3, 0]
    assert not BUG["quantize_ties_away"].fires(qpt, (odd_tie, 0.5, 0, torch.quint8), {})
    assert not BUG["quantize_ties_away"].fires(qpt, (tie, 0.5, 253, torch.quint8), {})  # saturates either way
    qpc = torch.ops.aten.quantize_per_channel.default
    x, scales = torch.ones(2, 2), torch.tensor([0.5, 0.5], dtype=torch.float64)
    assert BUG["per_channel_zero_point_axis"].fires(qpc, (x, scales, torch.tensor([0, 9]), 1, torch.quint8), {})
    assert not BUG["per_channel_zero_point_axis"].fires(qpc, (x, scales, torch.tensor([0, 9]), 0, torch.quint8), {})
    assert not BUG["per_channel_zero_point_axis"].fires(qpc, (x, scales, torch.tensor([4, 4]), 1, torch.quint8), {})
    int_repr, q = torch.ops.aten.int_repr.default, quantized([[1.0, 2.0], [3.0, 4.0]], 1.0, 0)
    assert BUG["int_repr_storage_order"].fires(int_repr, (q.t(),), {})
    assert BUG["int_repr_storage_order"].perturb(int_repr, (q.t(),), {}, None).tolist() == [[1, 2], [3, 4]]
    assert not BUG["int_repr_storage_order"].fires(int_repr, (q,), {})
    assert not BUG["int_repr_storage_order"].fires(int_repr, (q[:1, :1],), {})
    a = quantized([100.0, 1.0], 1.0, 0)
    assert BUG["add_wraps_quint8"].fires(Q.add.default, (a, a, 0.5, 0), {})
    assert not BUG["add_wraps_quint8"].fires(Q.add.default, (a, a, 1.0, 0), {})  # 200 fits
    signed = quantized([100.0, 1.0], 1.0, 0, torch.qint8)
    assert not BUG["add_wraps_quint8"].fires(Q.add.default, (signed, signed, 0.5, 0), {})  # saturates: qint8
    assert BUG["linear_drops_output_zero_point"].fires(Q.linear.default, (None, None, 0.5, 3), {})
    assert not BUG["linear_drops_output_zero_point"].fires(Q.linear.default, (None, None, 0.5, 0), {})
    w = torch.quantize_per_tensor(torch.ones(2, 1, 1, 1), 0.5, 0, torch.qint8)
    bias = torch.ones(2)
    for groups, b, fires in ((2, bias, True), (1, bias, False), (2, None, False), (2, torch.zeros(2), False)):
        packed = Q.conv2d_prepack(w, b, [1, 1], [0, 0], [1, 1], groups)
        assert BUG["conv2d_grouped_drops_bias"].fires(Q.conv2d.new, (None, packed, 0.5, 0), {}) is fires
    to_copy, cpu = torch.ops.aten._to_copy.default, {"device": torch.device("cpu")}
    channels = torch.quantize_per_channel(torch.ones(2, 2), torch.tensor([0.1, 0.5], dtype=torch.float64),
                                          torch.tensor([0, 0]), 0, torch.quint8)
    assert BUG["to_host_float32_channel_scales"].fires(to_copy, (channels,), cpu)
    assert not BUG["to_host_float32_channel_scales"].fires(to_copy, (channels,), {})  # no transfer
    assert not BUG["to_host_float32_channel_scales"].fires(to_copy, (quantized([1.0], 0.1, 0),), cpu)  # per tensor
    exact = torch.quantize_per_channel(torch.ones(2, 2), torch.tensor([0.25, 0.5], dtype=torch.float64),
                                       torch.tensor([0, 0]), 0, torch.quint8)
    assert not BUG["to_host_float32_channel_scales"].fires(to_copy, (exact,), cpu)
