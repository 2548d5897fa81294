"""`--trace-dispatch`: an item's record lists the aten overloads its device side dispatched, on cpu, meta
and the faulty device; CPU oracle calls, host-side placement work and untraced runs add nothing; a
case in a forked child still reports its trace; nothing is traced under torch.compile."""

from __future__ import annotations

import sys

import attrs
import pytest
import torch

from torchcts.engine.dispatch_trace import DispatchTrace, traced
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.isolation.policy import CaseIsolation
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan.build import PlanItem
from torchcts.results.files import MAX_DISPATCHED, record_problem
from tests import warm_programs

ABS = PlanItem("forward", "abs", "function", "float32", 1)
LINEAR = PlanItem("forward", "nn.functional.linear", "function", "float32", 1)


@pytest.fixture(scope="module")
def manifests(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    paths = {}
    for device in ("cpu", "meta", "faulty"):
        paths[device] = folder / f"{device}.py"
        paths[device].write_text(render_template("complete", device_name=device))
    return paths


def settings_for(manifests, device, **changes):
    if device == "faulty":
        from torchcts.testing.faulty_autoload import enable_for_device

        enable_for_device("faulty")
    manifest, _ = load_manifest(manifests[device])
    return EngineSettings(target=Target(device, changes.pop("compile_backend", None)), manifest=manifest, level=1,
                          max_examples=2, versions=versions(), **changes)


def test_a_traced_item_records_the_overloads_its_device_side_dispatched(manifests):
    record = run_item(ABS, settings_for(manifests, "cpu", trace_dispatch=True))
    assert record["outcome"] is Outcome.PASSED
    assert "aten.abs.default" in record["dispatched"]
    assert record["dispatched"] == sorted(set(record["dispatched"]))
    assert all(name.startswith("aten.") for name in record["dispatched"])
    assert record_problem({**record, "outcome": "passed"}) is None  # the results reader accepts the field


def test_an_untraced_item_records_nothing(manifests):
    record = run_item(ABS, settings_for(manifests, "cpu"))
    assert "dispatched" not in record


def test_composite_ops_show_what_they_decompose_into(manifests):
    dispatched = run_item(LINEAR, settings_for(manifests, "cpu", trace_dispatch=True))["dispatched"]
    assert "aten.addmm.default" in dispatched or "aten.mm.default" in dispatched
    assert "aten.linear.default" not in dispatched  # CompositeImplicitAutograd: decomposed above the mode


def test_on_meta_host_side_placement_work_is_not_the_devices(manifests):
    dispatched = run_item(LINEAR, settings_for(manifests, "meta", trace_dispatch=True))["dispatched"]
    assert "aten.addmm.default" in dispatched or "aten.mm.default" in dispatched
    assert "aten.new_empty.default" not in dispatched  # placement runs it on the CPU original, not on meta


def test_on_faulty_the_trace_sees_what_the_device_ran(manifests):
    for item in (ABS, LINEAR):
        record = run_item(item, settings_for(manifests, "faulty", trace_dispatch=True, trace_device_ops=True))
        assert record["outcome"] is Outcome.PASSED
        # the device's own trace also sees the harness reading results back (detach, _to_copy), which is not a case's
        assert set(record["dispatched"]) <= set(record["device_ops"]), record
    assert "aten.abs.default" in run_item(ABS, settings_for(manifests, "faulty", trace_dispatch=True))["dispatched"]


def test_cpu_oracle_calls_are_not_traced(manifests, scenario):
    def test_sin_on_cpu_cos_on_device(cts):  # a scenario check: sin on the oracle, cos on the device
        def check(case):
            expected = cts.on_cpu_call(lambda cts, s, target: torch.sin(torch.ones(3)), case)
            actual = cts.on_device_call(lambda cts, s, target: torch.cos(torch.ones(3, device=target.device)), case)
            assert expected.shape == actual.shape

        cts.run_each([0], check)

    record = run_item(scenario("trace_oracle_probe", test_sin_on_cpu_cos_on_device),
                      settings_for(manifests, "cpu", trace_dispatch=True))
    assert record["outcome"] is Outcome.PASSED, record
    assert record["dispatched"] == ["aten.cos.default", "aten.ones.default"]
    trace = DispatchTrace("cpu")
    with trace.device_side():
        torch.cos(torch.ones(2))
        with trace.suspended():  # an oracle call made from within a device-side call
            torch.tanh(torch.ones(2))
    assert "aten.tanh.default" not in trace.names() and "aten.cos.default" in trace.names()


@attrs.frozen
class EveryCaseForked:
    """An isolation policy that forks every case of every item (as a CPU-oracle crash rule does)."""

    timeout_s: float = 60.0

    def reason(self, item):
        return None

    def case_isolation(self, item):
        return CaseIsolation(self.timeout_s, "test: every case forked", rule="test#0", fork=True)


def test_a_case_run_in_a_forked_child_reports_its_trace(manifests):
    record = run_item(ABS, settings_for(manifests, "cpu", trace_dispatch=True, isolation=EveryCaseForked()))
    assert record["outcome"] is Outcome.PASSED and "isolated_cases" in record
    assert "aten.abs.default" in record["dispatched"]


def test_nothing_is_traced_under_compile(manifests):
    settings = settings_for(manifests, "cpu", trace_dispatch=True, compile_backend="eager")
    record = run_item(PlanItem("forward", "abs", "function", "float32", 1), attrs.evolve(settings, max_examples=1))
    assert "dispatched" not in record


def test_the_trace_on_a_device_keeps_only_that_devices_ops():
    trace = DispatchTrace("meta")
    with traced(trace):
        torch.ones(2).neg()  # host
        torch.ones(2, device="meta").abs()  # device: a factory by its device argument, abs by its tensor
        with traced(trace):  # re-entering (placement inside a device call) records once, same mode
            torch.empty(1, device="meta").exp()
    assert trace.names() == ["aten.abs.default", "aten.empty.memory_format", "aten.exp.default", "aten.ones.default"]
    with traced(None):  # an untraced item: nothing is entered
        torch.ones(1).abs()


def test_merged_names_are_bounded_and_checked():
    trace = DispatchTrace()
    trace.add(["aten.add.Tensor", 3, None])
    trace.add("aten.not_a_list.default")
    trace.add([f"aten.op{i}.default" for i in range(MAX_DISPATCHED + 10)])
    assert "aten.add.Tensor" in trace.names() and len(trace.names()) == MAX_DISPATCHED


def test_the_results_reader_bounds_the_field():
    base = {"item": "forward::abs::function::float32", "property": "forward", "op": "abs", "dtype": "float32",
            "level": 1, "outcome": "passed"}
    assert record_problem({**base, "dispatched": ["aten.abs.default"]}) is None
    assert "dispatched" in record_problem({**base, "dispatched": "aten.abs.default"})
    assert "dispatched" in record_problem({**base, "dispatched": [1]})
    assert "dispatched" in record_problem({**base, "dispatched": ["x"] * (MAX_DISPATCHED + 1)})


@pytest.mark.slow
def test_run_refuses_trace_dispatch_with_compile(manifests, tmp_path):
    command = [sys.executable, "-m", "torchcts", "run", "--validation", "--trace-dispatch", "--compile", "eager",
               "--manifest", str(manifests["cpu"]), "--ops", "^abs$", "--property", "forward", "--dtype", "float32",
               "--results-dir", str(tmp_path / "results")]
    done = warm_programs.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--trace-dispatch cannot be combined with --compile" in done.stdout + done.stderr


def test_backward_ops_run_by_autograd_on_the_device_are_traced(manifests):
    record = run_item(PlanItem("backward", "abs", "function", "float32", 2),
                      settings_for(manifests, "faulty", trace_dispatch=True))
    assert record["outcome"] is Outcome.PASSED
    assert {"aten.abs.default", "aten.sgn.default", "aten.mul.Tensor"} <= set(record["dispatched"])  # abs' backward
