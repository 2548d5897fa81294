"""The dispatch property (`torchcts.properties.suites.dispatch`): generated calls pass on CPU and clean faulty,
catch the seeded bugs of overloads no OpInfo reaches, reject draws CPU refuses, and account an overload
CPU's kernel never accepts as cpu_contract."""

from __future__ import annotations

import pytest
import torch

from torchcts.coverage.generated import (GENERATED, from_traced_calls, generated_overloads, generated_scenarios,
                                        scenario_names)
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.coverage.dispatch_calls import call_overload, metadata_only
from torchcts.properties.suites.dispatch import PROGRAMS
from torchcts.testing.faulty.suite_bugs.dispatch import BUGS

BUG = {bug.name: bug for bug in BUGS}
SCENARIO = {name: scenario for scenario, name in generated_scenarios().items()}
aten = torch.ops.aten


def test_the_property_is_registered_over_the_generated_overloads():
    registry.load()
    spec = registry.get("dispatch")
    assert (spec.capability, spec.level, spec.items.dtypes) == ("inference", 4, ("float32",))
    assert set(spec.items.scenarios) == set(generated_scenarios()) == set(PROGRAMS)
    assert len(spec.items.scenarios) == sum(status == GENERATED for status in generated_overloads().values())


@pytest.mark.parametrize("bug", sorted(BUG))
def test_every_seeded_bug_is_on_a_generated_overload(bug):
    for name in BUG[bug].ops:
        assert generated_overloads()[name] == GENERATED, name


@pytest.mark.parametrize("name", ["aten.lift_fresh_copy.default", "aten.hardshrink_backward.grad_input",
                                  "aten._fused_adam.default", "aten.slow_conv_dilated2d.default",
                                  "aten.quantize_per_tensor.tensor_qparams", "aten.quantized_max_pool2d.out",
                                  "aten.dequantize.tensors_out", "aten._sparse_sum.dim_out", "aten._to_sparse_bsr.out"])
def test_a_generated_overload_passes_on_cpu_and_clean_faulty(run_suite, name):
    assert run_suite("dispatch", SCENARIO[name], max_examples=6)["outcome"] is Outcome.PASSED
    record = run_suite("dispatch", SCENARIO[name], device="faulty", max_examples=6)
    assert record["outcome"] is Outcome.PASSED, record


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@pytest.mark.parametrize("bug, name, shrink", [
    ("lift_fresh_copy_strided_tail", "aten.lift_fresh_copy.default", True),
    ("hardshrink_backward_default_lambd", "aten.hardshrink_backward.grad_input", False),
    ("fused_adam_ignores_maximize", "aten._fused_adam.default", False),
    ("slow_conv_dilated2d_drops_bias", "aten.slow_conv_dilated2d.default", False),
    ("quantize_tensor_qparams_drops_zero_point", "aten.quantize_per_tensor.tensor_qparams", True)])
def test_each_seeded_bug_is_detected(run_suite, tmp_path, bug, name, shrink):
    record = run_suite("dispatch", SCENARIO[name], device="faulty", bugs=(bug,), max_examples=25, corpus_dir=tmp_path,
                       shrink=shrink)
    assert record["outcome"] is Outcome.FAILED, record
    assert record["counterexample"]["path"], record


def test_the_bugs_stay_silent_without_their_condition():
    plain, strided = torch.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3).t()
    assert BUG["lift_fresh_copy_strided_tail"].fires(aten.lift_fresh_copy.default, (strided,), {})
    assert not BUG["lift_fresh_copy_strided_tail"].fires(aten.lift_fresh_copy.default, (plain,), {})
    call = aten.hardshrink_backward.grad_input
    assert BUG["hardshrink_backward_default_lambd"].fires(call, (plain, plain, 1.0), {"grad_input": plain})
    assert not BUG["hardshrink_backward_default_lambd"].fires(call, (plain, plain, 0.5), {"grad_input": plain})
    call, scale = aten.quantize_per_tensor.tensor_qparams, torch.tensor(0.1, dtype=torch.float64)
    assert BUG["quantize_tensor_qparams_drops_zero_point"].fires(call, (plain, scale, torch.tensor(3), torch.quint8), {})
    assert not BUG["quantize_tensor_qparams_drops_zero_point"].fires(call, (plain, scale, torch.tensor(0), torch.quint8),
                                                                     {})


def test_the_program_returns_the_result_and_the_written_arguments():
    x, out = torch.tensor([1.0, -2.0]), torch.empty(0)
    result, written = call_overload(torch.zeros(()), "add", "out", [x, x], {"out": out}, [], ["out"])
    assert result is None and written == [out] and out.tolist() == [2.0, -4.0]  # by schema the result is `out`
    # CPU's `_add_relu.out` returns a temporary in the inputs' dtype, not `out`: only `out` is compared
    ints, floats = torch.tensor([1, -2]), torch.empty(0)
    result, written = call_overload(torch.zeros(()), "_add_relu", "out", [ints, ints], {"out": floats}, [], ["out"])
    assert result is None and written[0].dtype == torch.float32 and written[0].tolist() == [2.0, 0.0]
    plain, _ = call_overload(torch.zeros(()), "add", "Tensor", [x, x], {}, [], [])
    assert plain.tolist() == [2.0, -4.0]
    made, _ = call_overload(torch.zeros(()), "ones", "default", [[2]], {"device": None}, ["device"], [])
    assert made.device.type == "cpu" and made.tolist() == [1.0, 1.0]


def test_random_and_uninitialized_results_compare_metadata_only():
    assert metadata_only("aten.random.default") and metadata_only("aten.new_empty_strided.default")
    assert metadata_only("aten._make_dep_token.default") and metadata_only("aten._ctc_loss.out")
    assert not metadata_only("aten._ctc_loss_backward.default")
    assert not metadata_only("aten.lift_fresh_copy.default")


def test_an_overload_cpu_always_rejects_is_cpu_contract_never_a_pass(run_suite, monkeypatch):
    """Every draw of `detach_` is a placed view, which CPU refuses to detach in place: the item is cpu_contract."""
    import torchcts.properties.suites.dispatch as module

    monkeypatch.setitem(module.SCENARIOS, "detach_inplace_default", "aten.detach_.default")
    record = run_suite("dispatch", "detach_inplace_default", max_examples=3)
    assert record["outcome"] is Outcome.CPU_CONTRACT, record
    assert "rejected all" in record["reason"] and "detach" in record["reason"], record
    assert record["cpu_contract_cases"] == record["examples"] > 0


def test_scenario_names_are_valid_and_one_to_one():
    names = ["aten.add.Tensor", "aten.add_.Tensor", "aten.__and__.Tensor", "aten._foreach_add.List", "aten.x.Y",
             "aten.x.y"]
    mapped = scenario_names(names)
    assert mapped["aten.add_.Tensor"] == "add_inplace_tensor" and mapped["aten.__and__.Tensor"] == "dunder_and_tensor"
    assert mapped["aten._foreach_add.List"] == "private_foreach_add_list"
    assert len(set(mapped.values())) == len(names) and mapped["aten.x.Y"] != mapped["aten.x.y"]
    assert all(s[0].isalpha() and s == s.lower() for s in mapped.values())


@pytest.mark.parametrize("name", ["aten.avg_pool3d_backward.grad_input", "aten._histogramdd_bin_edges.out",
                                  "aten.adaptive_max_pool3d_backward.grad_input"])
def test_an_overload_generated_from_traced_calls_passes_on_cpu_and_clean_faulty(run_suite, name):
    """Their cases are OpInfo samples' sibling calls rebound (a `Tensor(a!)[] out` list, a backward kernel whose
    CPU kernel corrupts memory on re-laid-out arguments, so it keeps the donor's layouts)."""
    assert name in from_traced_calls()
    assert run_suite("dispatch", SCENARIO[name], max_examples=6)["outcome"] is Outcome.PASSED
    record = run_suite("dispatch", SCENARIO[name], device="faulty", max_examples=6)
    assert record["outcome"] is Outcome.PASSED, record


def test_traced_calls_are_only_listed_for_generated_overloads(tmp_path, monkeypatch):
    import json

    from torchcts.coverage import generated

    assert from_traced_calls() <= {name for name, status in generated_overloads().items() if status == GENERATED}
    path = tmp_path / "generated_overloads.json"
    path.write_text(json.dumps({"overloads": {"aten.add.Tensor": "cannot generate: no"},
                                "from_traced_calls": ["aten.add.Tensor"]}))
    monkeypatch.setattr(generated, "PACKAGED", path)
    generated._packaged.cache_clear()
    try:
        with pytest.raises(generated.GeneratedListError, match="from_traced_calls"):
            generated._packaged()
    finally:
        generated._packaged.cache_clear()


def test_cases_compared_without_values_are_counted_in_the_record(run_suite):
    """A random overload passes on dtype and shape alone: the record says how many cases that was."""
    record = run_suite("dispatch", SCENARIO["aten.bernoulli_.float"], max_examples=4)
    assert record["outcome"] is Outcome.PASSED, record
    assert 0 < record["metadata_only_cases"] <= record["examples"]
    plain = run_suite("dispatch", SCENARIO["aten.lift_fresh_copy.default"], max_examples=4)
    assert "metadata_only_cases" not in plain


def test_kernels_that_trust_sizes_are_generated_only_from_traced_or_curated_calls():
    """`_pdist_forward.out` from OpInfo samples' calls; `_stack` (no traced sibling) from hand-written calls that
    keep its tensors' shapes equal; a schema draw reaches neither."""
    from torchcts.coverage.generated import traced_only
    from torchcts.strategies.curated_calls import curated

    assert "aten._pdist_forward.out" in from_traced_calls() and traced_only("aten._pdist_forward.out")
    assert curated("aten._stack.default") and not traced_only("aten._stack.default")
    assert generated_overloads()["aten._stack.default"] == "generated"
    assert "aten._stack.default" not in from_traced_calls()
