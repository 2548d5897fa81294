"""The `errors` property under torch.compile compares the cause of the compiled call's exception with CPU's
(real torch.compile on CPU; backends registered here for the ones that must keep failing)."""

from __future__ import annotations

import logging

import pytest
import torch
import torch._dynamo
from torch._dynamo.exc import BackendCompilerFailed

from torchcts.engine.error_cause import find_cause
from torchcts.core.outcomes import Outcome
from torchcts.properties.suites.errors import parity_problem

REFUSES_TO_COMPILE = "torchcts_errors_test_refuses_to_compile"
RAISES_ASSERTION = "torchcts_errors_test_raises_assertion"


def _refuses_to_compile(gm, example_inputs):
    raise RuntimeError("this backend cannot compile the graph")


def _raises_assertion(gm, example_inputs):
    def run(*args):  # not TypeError or ValueError: those refine CPU's generic RuntimeError (test_errors' rule)
        raise AssertionError("this backend's compiled graph raises its own error")

    return run


def _register() -> None:
    known = set(torch._dynamo.list_backends(exclude_tags=()))
    for name, backend in ((REFUSES_TO_COMPILE, _refuses_to_compile), (RAISES_ASSERTION, _raises_assertion)):
        if name not in known:
            torch._dynamo.register_backend(backend, name=name)


@pytest.fixture(autouse=True)
def _quiet_dynamo():
    _register()
    torch._logging.set_logs(dynamo=logging.CRITICAL)
    yield
    torch._logging.set_logs()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_wrapped_refusal_of_cpus_type_passes(run_suite, backend):
    # arange's error inputs: CPU raises ValueError (step 0.5 with out=) and RuntimeError; under torch.compile the
    # refusals come from Python references run on fake tensors, wrapped in TorchRuntimeError
    record = run_suite("errors", "arange", "float32", compile_backend=backend)
    assert record["outcome"] is Outcome.PASSED, record.get("error")


def test_a_compile_failure_is_no_refusal_though_it_is_a_runtime_error(run_suite):
    # gather's "index 23 is out of bounds": CPU raises RuntimeError; dynamo traces the call (the index is data), then
    # the backend refuses to compile: BackendCompilerFailed, a RuntimeError subclass that must not pass for CPU's
    record = run_suite("errors", "gather", "float32", compile_backend=REFUSES_TO_COMPILE)
    assert record["outcome"] is Outcome.FAILED
    assert "torch.compile failed (BackendCompilerFailed" in record["error"]
    assert "a compile failure is not the op's refusal" in record["error"]


def test_a_backend_raising_another_type_fails_naming_it(run_suite):
    record = run_suite("errors", "gather", "float32", compile_backend=RAISES_ASSERTION)
    assert record["outcome"] is Outcome.FAILED
    assert "it raised AssertionError where CPU raises RuntimeError" in record["error"]


def test_the_raw_wrapper_would_pass_where_its_cause_fails():
    # the trap the cause comparison closes: BackendCompilerFailed is a RuntimeError, so by type alone it conforms
    cpu_error = RuntimeError("index 23 is out of bounds for dimension 1 with size 2")
    torch._dynamo.reset()
    with pytest.raises(BackendCompilerFailed) as caught:
        torch.compile(lambda x, i: torch.gather(x, 1, i), backend=REFUSES_TO_COMPILE)(
            torch.ones(2, 2), torch.tensor([[0, 23], [1, 0]]))
    assert parity_problem(cpu_error, caught.value, "") is None
    assert "torch.compile failed" in parity_problem(cpu_error, caught.value, "", find_cause(caught.value))


def test_the_failure_names_the_wrapper_of_a_cause_of_another_type():
    torch._dynamo.reset()
    with pytest.raises(RuntimeError) as caught:  # cat of no tensors: a Python reference's ValueError, wrapped
        torch.compile(lambda x: torch.cat([]), backend="aot_eager")(torch.ones(2))
    problem = parity_problem(IndexError("x"), caught.value, "", find_cause(caught.value))
    assert problem.startswith("it raised ValueError (wrapped in TorchRuntimeError, Unsupported by torch.compile) "
                              "where CPU raises IndexError")


def test_a_record_names_the_wrappers_of_a_cause_that_differs(run_suite):
    # complex's error input with an out= of the wrong dtype: CPU raises RuntimeError; under aot_eager a meta
    # function's Python `assert` refuses it, wrapped by dynamo: a finding (an AssertionError is no torch error)
    record = run_suite("errors", "complex", "float32", compile_backend="aot_eager")
    assert record["outcome"] is Outcome.FAILED
    assert "it raised AssertionError (wrapped in TorchRuntimeError, Unsupported by torch.compile)" in record["error"]
    assert record["error_wrappers"] == ["TorchRuntimeError", "Unsupported"]
    assert "error_wrappers" not in run_suite("errors", "complex", "float32")  # eager CPU: nothing wrapped
