"""Scenario programs (`torchcts.engine.programs`): a suite's torch-only function, compared device vs CPU."""

from __future__ import annotations

import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.engine.programs import program_check
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.strategies import Case, tensors


def transpose_clone(input):
    view = input.transpose(0, -1)
    return view.clone(), view.stride(), view._is_view()


def test_a_program_property_passes_on_cpu_and_fails_where_the_device_differs(run_suite, monkeypatch):
    registry.load()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @registry.register_property("program_probe", capability="inference", level=1,
                                items=registry.ScenarioItems(["transpose_clone"], ["float32"],
                                                             programs={"transpose_clone": transpose_clone}))
    def test_program_probe(cts):
        cases = tensors(cts.dtype, min_dims=2, max_dims=3, allow_empty=False).map(
            lambda t: Case(cts.item.op, "scenario", cts.dtype, SampleInput(t), 0))
        cts.run(cases, program_check(cts, transpose_clone))

    record = run_suite("program_probe", "transpose_clone", max_examples=5)
    assert record["outcome"] is Outcome.PASSED and record["examples"] == 5
    faulty = run_suite("program_probe", "transpose_clone", device="faulty", max_examples=5)
    assert faulty["outcome"] is Outcome.PASSED


# -- under torch.compile: only CPU's own refusal is excused ------------------------------------------------------------

RUN_TIME_REFUSAL = "torchcts_test_refuses_at_run: this backend's graphs raise when they run"


def _refuses_at_run(gm, example_inputs):
    """A backend whose compiled graph raises a RuntimeError when it runs (a refusal eager CPU never gives)."""
    def compiled(*args):
        raise RuntimeError(RUN_TIME_REFUSAL)
    return compiled


def refusing_backend() -> str:
    """The name of `_refuses_at_run`, registered with dynamo once per process."""
    import torch._dynamo

    name = "torchcts_test_refuses_at_run"
    if name not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(_refuses_at_run, name=name)
    return name


def add_then_refused_view(input):
    """CPU records a RuntimeError for the view of 7 elements; the graph break makes the add a graph of its own,
    which a backend runs before dynamo traces the view."""
    results = [input + 1]
    torch._dynamo.graph_break()
    try:
        results.append(input.view(7))
    except RuntimeError as error:
        results.append(type(error).__name__)
    return results


def _register_refusal_probe(monkeypatch):
    registry.load()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @registry.register_property("refusal_probe", capability="inference", level=1,
                                items=registry.ScenarioItems(["add_then_refused_view"], ["float32"],
                                                             programs={"add_then_refused_view": add_then_refused_view}))
    def test_refusal_probe(cts):
        cases = tensors(cts.dtype, (3,), relayout=False).map(
            lambda t: Case(cts.item.op, "scenario", cts.dtype, SampleInput(t), 0))
        cts.run(cases, program_check(cts, add_then_refused_view))


def test_under_torch_compile_cpus_own_refusal_is_unavailable_and_a_backends_refusal_is_an_error(run_suite,
                                                                                                monkeypatch):
    _register_refusal_probe(monkeypatch)
    # dynamo alone: the view's refusal ends the compiled program, as it ends CPU's under dynamo: not comparable
    same = run_suite("refusal_probe", "add_then_refused_view", max_examples=3, compile_backend="eager")
    assert same["outcome"] is Outcome.RUNTIME_UNAVAILABLE, same.get("error")  # every case: the view always refuses
    assert "ends at its first refusal" in same["reason"] and "dynamo alone raises too" in same["reason"]
    # the backend raises a RuntimeError where CPU under dynamo raises the view's: CPU's result records a
    # RuntimeError, but not this one, so the device's error stands (before: unavailable, as any RuntimeError was)
    other = run_suite("refusal_probe", "add_then_refused_view", max_examples=3, compile_backend=refusing_backend())
    assert other["outcome"] is Outcome.ERROR and RUN_TIME_REFUSAL in other["error"], other


def test_a_refusal_is_cpus_only_with_the_same_type_and_first_line():
    import torch._dynamo

    from torchcts.engine.error_cause import find_cause
    from torchcts.engine.programs import cpu_refusal, same_refusal

    def raised(backend):
        torch._dynamo.reset()
        try:
            torch.compile(add_then_refused_view, backend=backend)(torch.ones(3))
        except Exception as error:  # noqa: BLE001
            return find_cause(error)
        raise AssertionError("the compiled program returned")

    expected = add_then_refused_view(torch.ones(3))
    assert expected[1] == "RuntimeError"
    reference, device = raised("eager"), raised(_refuses_at_run)
    assert type(reference.error) is type(device.error) is RuntimeError  # the same type, another refusal
    assert same_refusal(raised("aot_eager"), reference)
    assert cpu_refusal(expected, reference, reference) == "RuntimeError"
    assert not same_refusal(device, reference) and cpu_refusal(expected, device, reference) is None
    assert cpu_refusal(expected, reference, None) is None  # CPU under dynamo returned: nothing to stand for
