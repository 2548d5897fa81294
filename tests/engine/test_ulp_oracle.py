"""The ULP-aware oracle (`torchcts.engine.ulp_oracle`): errors in ULPs against a float64 reference, the
correctly-rounded rule the forward property applies, the record's `ulp_error`, and the `ulp` seeded bugs."""

from __future__ import annotations

import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.replay_items import replay_items
from torchcts.engine import ulp_oracle
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan.build import PlanItem
from torchcts.testing.faulty.bugs import BUGS

F32_ULP_AT_1 = 2.0 ** -23


# -- measuring --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, value, ulp", [
    (torch.float32, 1.0, 2.0 ** -23), (torch.float32, 1.999, 2.0 ** -23), (torch.float32, -3.0, 2.0 ** -22),
    (torch.float32, 0.0, 2.0 ** -149), (torch.float32, 2.0 ** -130, 2.0 ** -149),  # subnormal spacing
    (torch.bfloat16, 1.0, 2.0 ** -7), (torch.float16, 1000.0, 0.5), (torch.float64, 1.0, 2.0 ** -52)])
def test_ulp_of_is_the_spacing_of_the_dtype_around_the_value(dtype, value, ulp):
    assert ulp_oracle.ulp_of(torch.tensor([value], dtype=torch.float64), dtype).item() == ulp


def one_ulp_up(t: torch.Tensor) -> torch.Tensor:
    return torch.nextafter(t, torch.full_like(t, float("inf")))


def test_a_result_one_ulp_off_fails_the_correctly_rounded_rule_naming_the_element():
    reference = torch.tensor([[1.0, 1.0 + 0.3 * F32_ULP_AT_1], [2.0, 3.0]], dtype=torch.float64)
    cpu = reference.to(torch.float32)  # correctly rounded
    device = cpu.clone()
    device[0, 1] = one_ulp_up(cpu[0, 1])
    result = ulp_oracle.compare(device, cpu, reference, ulp_oracle.EXACT, call="add")
    assert not result.ok and result.measured
    assert "add: output[0, 1] = 1.0000001192092896 on the device, CPU gives 1.0" in result.message
    assert "0.7 ULP of float32" in result.message and "CPU 0.3 ULP" in result.message
    assert "1 of 4 measured elements" in result.message
    assert ulp_oracle.compare(cpu, cpu, reference, ulp_oracle.EXACT).ok  # CPU against itself: identical errors


def test_a_tie_rounded_away_from_even_fails_and_a_device_more_accurate_than_cpu_passes():
    reference = torch.tensor([1.0 + 2.0 ** -8], dtype=torch.float64)  # halfway between two bfloat16 values
    cpu = reference.to(torch.bfloat16)  # round half to even: 1.0
    odd = torch.tensor([1.0 + 2.0 ** -7], dtype=torch.bfloat16)
    tie = ulp_oracle.compare(odd, cpu, reference, ulp_oracle.EXACT)
    assert not tie.ok and "halfway case" in tie.message
    # CPU one ULP off (float32 sqrt on MKL builds), the device correctly rounded: the device passes
    reference = torch.tensor([1.035418783041149], dtype=torch.float64)
    correctly_rounded = reference.to(torch.float32)
    assert ulp_oracle.compare(correctly_rounded, one_ulp_up(correctly_rounded), reference, ulp_oracle.EXACT).ok


def test_slack_and_the_recorded_rule_never_fail_but_measure_both_sides():
    reference = torch.tensor([1.0], dtype=torch.float64)
    cpu = reference.to(torch.float32)
    device = one_ulp_up(one_ulp_up(cpu))
    assert ulp_oracle.compare(device, cpu, reference, ulp_oracle.UlpRule("correctly_rounded", slack=2.0)).ok
    recorded = ulp_oracle.compare(device, cpu, reference, ulp_oracle.RECORD_ONLY)
    assert recorded.ok and recorded.device_error == 2.0 and recorded.cpu_error == 0.0


def test_special_values_and_unmeasurable_outputs_are_skipped():
    reference = torch.tensor([float("nan"), float("inf"), 1e300], dtype=torch.float64)
    cpu = reference.to(torch.float32)  # nan, inf, inf (overflow)
    device = torch.tensor([1.0, 2.0, 3.0])  # the tolerance comparison, not this rule, judges these
    assert not ulp_oracle.compare(device, cpu, reference, ulp_oracle.EXACT).measured
    ints = torch.tensor([1, 2])
    assert not ulp_oracle.compare(ints, ints, ints, ulp_oracle.EXACT).measured
    low_precision_reference = torch.tensor([1.0], dtype=torch.bfloat16)  # a recorded op's fixed output dtype
    assert not ulp_oracle.compare(low_precision_reference, low_precision_reference, low_precision_reference,
                                  ulp_oracle.RECORD_ONLY).measured


def test_complex_results_are_measured_by_component():
    reference = torch.tensor([1 + 1j, 2 + 1j], dtype=torch.complex128)
    cpu = reference.to(torch.complex64)
    device = cpu.clone()
    device.imag[1] = one_ulp_up(device.imag[1:2])[0]
    result = ulp_oracle.compare((device,), (cpu,), (reference,), ulp_oracle.EXACT)
    assert not result.ok and "output[1].imag = " in result.message


def test_the_rule_table():
    assert ulp_oracle.rule_for("add", torch.float32).kind == "correctly_rounded"
    assert ulp_oracle.rule_for("add", torch.complex64).kind == "correctly_rounded"  # componentwise
    assert ulp_oracle.rule_for("mul", torch.complex64).kind == "recorded"  # a formula of four products
    assert ulp_oracle.rule_for("exp", torch.float32).kind == "recorded"
    x, y = torch.ones(2), torch.ones(2)
    assert not ulp_oracle.RULES["add"].applies(SampleInput(x, args=(y,), kwargs={"alpha": 2}))
    assert ulp_oracle.RULES["add"].applies(SampleInput(x, args=(y,)))
    assert not ulp_oracle.RULES["div.no_rounding_mode"].applies(SampleInput(x, args=(3.0,)))  # a * (1/b) on CUDA
    with pytest.raises(ValueError, match="slack"):
        ulp_oracle.UlpRule("correctly_rounded", slack=-1)


def test_float64_sample_upcasts_floating_tensors_only():
    sample = SampleInput(torch.ones(2, dtype=torch.bfloat16), args=(torch.ones(2, dtype=torch.complex64), 3),
                         kwargs={"index": torch.tensor([0]), "dtype": torch.float16, "mask": torch.ones(1, dtype=torch.bool)})
    up = ulp_oracle.float64_sample(sample)
    assert up.input.dtype == torch.float64 and up.args[0].dtype == torch.complex128 and up.args[1] == 3
    assert up.kwargs["index"].dtype == torch.int64 and up.kwargs["dtype"] is torch.float16
    assert up.kwargs["mask"].dtype == torch.bool


# -- the forward property ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run_forward(tmp_path_factory):
    root = tmp_path_factory.mktemp("ulp")
    manifests = {}

    def run(op: str, dtype: str, device: str = "cpu", bug: str = "", max_examples: int = 10, shrink: bool = False,
            corpus_dir=None, item=None) -> dict:
        if device not in manifests:
            path = root / f"{device}.py"
            path.write_text(render_template("complete", device_name=device))
            manifests[device] = load_manifest(path)[0]
        if device == "faulty":
            from torchcts.testing import faulty

            faulty.disable_bugs()
            if bug:
                faulty.enable_bugs(bug)
        try:
            settings = EngineSettings(target=Target(device), manifest=manifests[device], level=1,
                                      max_examples=max_examples, versions=versions(), shrink=shrink,
                                      corpus_dir=corpus_dir)
            return run_item(item or PlanItem("forward", op, "function", dtype, 1), settings)
        finally:
            if device == "faulty":
                from torchcts.testing import faulty

                faulty.disable_bugs()

    return run


@pytest.mark.parametrize("op, dtype, rule", [("add", "float32", "correctly_rounded"),
                                             ("div.no_rounding_mode", "bfloat16", "correctly_rounded"),
                                             ("sqrt", "float16", "correctly_rounded"), ("exp", "float32", "recorded")])
def test_forward_records_both_errors_and_cpu_validation_passes(run_forward, op, dtype, rule):
    record = run_forward(op, dtype)
    assert record["outcome"] is Outcome.PASSED, record["error"]
    ulp = record["ulp_error"]
    assert ulp["rule"] == rule and ulp["backend"] == ulp["cpu"] and ulp["cases"] > 0


def test_forward_on_the_clean_faulty_device_passes_and_integer_or_meta_items_record_nothing(run_forward):
    assert run_forward("add", "bfloat16", device="faulty")["outcome"] is Outcome.PASSED
    integer = run_forward("add", "int32")
    assert integer["outcome"] is Outcome.PASSED and "ulp_error" not in integer
    meta = run_forward("add", "float32", device="meta")
    assert meta["outcome"] is Outcome.PASSED and "ulp_error" not in meta


@pytest.mark.parametrize("bug, op, dtype", [("add_round_toward_zero", "sub", "float32"),
                                            ("sqrt_via_rsqrt", "sqrt", "float32"),
                                            ("bfloat16_div_truncates", "div.no_rounding_mode", "bfloat16"),
                                            ("bfloat16_mul", "mul", "bfloat16")])
def test_the_forward_property_catches_results_one_ulp_off(run_forward, bug, op, dtype):
    record = run_forward(op, dtype, device="faulty", bug=bug)
    assert record["outcome"] is Outcome.FAILED and "ULP rule correctly_rounded" in record["error"]


def test_the_ulp_bugs_stay_silent_without_their_condition():
    def fires(name, func, *args, **kwargs):
        return BUGS[name].fires(func, args, kwargs)

    f32, bf16 = torch.ones(3), torch.ones(3, dtype=torch.bfloat16)
    add, sqrt, div = torch.ops.aten.add.Tensor, torch.ops.aten.sqrt.default, torch.ops.aten.div.Tensor
    assert fires("add_round_toward_zero", add, f32, f32)
    assert not fires("add_round_toward_zero", add, bf16, bf16) and not fires("add_round_toward_zero", add, f32, f32, alpha=2)
    assert not fires("add_round_toward_zero", add, f32, 2.0)
    assert fires("sqrt_via_rsqrt", sqrt, f32) and not fires("sqrt_via_rsqrt", sqrt, f32.double())
    assert fires("bfloat16_div_truncates", div, bf16, bf16) and not fires("bfloat16_div_truncates", div, f32, f32)
    # where it fires, exact results stay exact
    assert torch.equal(BUGS["add_round_toward_zero"].perturb(add, (f32, f32), {}, add(f32, f32)), f32 * 2)
    assert torch.equal(BUGS["bfloat16_div_truncates"].perturb(div, (bf16, bf16), {}, div(bf16, bf16)), bf16)


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_ulp_failure_shrinks_to_a_small_case_that_replays(run_forward, tmp_path):
    record = run_forward("sqrt", "float32", device="faulty", bug="sqrt_via_rsqrt", shrink=True,
                         corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED
    case = record["counterexample"]
    assert case["elements"] <= 2
    (item,) = replay_items([case["path"]])
    replayed = run_forward("sqrt", "float32", device="faulty", bug="sqrt_via_rsqrt", item=item)
    assert replayed["outcome"] is Outcome.FAILED and "ULP rule" in replayed["error"]
    assert run_forward("sqrt", "float32", device="faulty", item=item)["outcome"] is Outcome.PASSED  # bug off


def test_docs_list_every_op_of_the_rule_table():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "oracle.md").read_text()
    assert [name for name in ulp_oracle.RULES if f"`{name}`" not in doc] == []
