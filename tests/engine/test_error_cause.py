"""error_cause: the op's refusal behind torch.compile's wrappers, found on real compiled calls and real torch exceptions."""

from __future__ import annotations

import logging

import pytest
import torch
import torch._dynamo
import torch._refs
from torch._dynamo.exc import BackendCompilerFailed, TorchRuntimeError, Unsupported
from torch.fx.experimental.proxy_tensor import make_fx

from torchcts.engine.error_cause import MAX_DEPTH, OP_RAISED_BREAKS, find_cause

OP_RAISED = sorted(OP_RAISED_BREAKS)[0]


@pytest.fixture(autouse=True)
def _quiet_dynamo():
    torch._logging.set_logs(dynamo=logging.CRITICAL)
    torch._dynamo.reset()
    yield
    torch._logging.set_logs()
    torch._dynamo.reset()


def raised_by(fn, *args, backend="aot_eager", **options) -> BaseException:
    with pytest.raises(Exception) as caught:
        torch.compile(fn, backend=backend, **options)(*args)
    return caught.value


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_python_reference_s_value_error_is_found_behind_dynamo_s_wrappers(backend):
    exc = raised_by(lambda x: torch.cat([]), torch.ones(2), backend=backend)  # CPU: ValueError
    assert isinstance(exc, TorchRuntimeError)  # what the caller sees; a RuntimeError, not CPU's ValueError
    cause = find_cause(exc)
    assert type(cause.error) is ValueError and "at least one tensor" in str(cause.error)
    assert cause.wrappers == ("TorchRuntimeError", "Unsupported") and not cause.compile_failure
    assert cause.type_name() == "ValueError (wrapped in TorchRuntimeError, Unsupported by torch.compile)"


def test_a_meta_function_s_runtime_error_is_found_and_an_unwrapped_index_error_passes_untouched():
    cause = find_cause(raised_by(lambda x: x.mean(), torch.ones(2, dtype=torch.int64)))
    assert type(cause.error) is RuntimeError and "could not infer output dtype" in str(cause.error)
    narrow = raised_by(lambda x: x.narrow(5, 0, 1), torch.ones(2))  # torch re-raises a dim check's IndexError as is
    assert type(narrow) is IndexError
    assert find_cause(narrow).error is narrow
    assert find_cause(narrow).wrappers == () and not find_cause(narrow).compile_failure


def _refuses_to_compile(gm, example_inputs):
    raise RuntimeError("this backend cannot compile the graph")


def _calls_an_op_that_refuses(gm, example_inputs):
    torch.ops.aten.narrow(example_inputs[0], 5, 0, 1)  # its own call: the backend's failure, not the graph's op


def test_a_backend_s_own_exception_while_compiling_is_a_compile_failure():
    exc = raised_by(lambda x, i: torch.gather(x, 0, i), torch.ones(3), torch.tensor([7]),
                    backend=_refuses_to_compile)
    assert isinstance(exc, BackendCompilerFailed) and isinstance(exc, RuntimeError)
    cause = find_cause(exc)
    assert cause.error is exc and cause.wrappers == () and cause.compile_failure


def test_an_op_the_backend_itself_calls_is_not_unwrapped_but_one_torch_s_tracer_ran_is():
    with pytest.raises(IndexError) as own:
        _calls_an_op_that_refuses(None, [torch.ones(2)])
    assert find_cause(BackendCompilerFailed(_calls_an_op_that_refuses, own.value, None)).compile_failure
    with pytest.raises(ValueError) as reference:  # a reference the backend calls itself (through dynamo's disable)
        torch._refs.cat([])
    assert find_cause(BackendCompilerFailed(_refuses_to_compile, reference.value, None)).compile_failure
    with pytest.raises(IndexError) as traced:  # the graph's op, raised while make_fx traced it (as AOTAutograd does)
        make_fx(lambda x: torch.ops.aten.narrow(x, 5, 0, 1), tracing_mode="fake")(torch.ones(2))
    cause = find_cause(BackendCompilerFailed(_refuses_to_compile, traced.value, None))
    assert cause.error is traced.value and cause.wrappers == ("BackendCompilerFailed",) and not cause.compile_failure


def test_an_op_that_refuses_while_aot_autograd_traces_is_found_inside_backend_compiler_failed():
    # fill_ of an expanded bool view: CPU accepts it, aot_eager's decomposition subtracts bools, which the reference
    # refuses while AOTAutograd traces the graph: the refusal is torch's op's, found behind the wrapper
    def fill_expanded(w):
        w[..., :1].expand_as(w).fill_(1)
        return w

    exc = raised_by(fill_expanded, torch.ones(3, 3, dtype=torch.bool))
    assert isinstance(exc, BackendCompilerFailed)
    cause = find_cause(exc)
    assert type(cause.error) is RuntimeError and "Subtraction" in str(cause.error)
    assert cause.wrappers == ("BackendCompilerFailed",) and not cause.compile_failure


def test_a_graph_break_under_fullgraph_is_a_compile_failure():
    def breaks(x):
        torch._dynamo.graph_break()
        return x + 1

    exc = raised_by(breaks, torch.ones(2), fullgraph=True)
    assert isinstance(exc, Unsupported) and exc.gb_type not in OP_RAISED_BREAKS
    cause = find_cause(exc)
    assert cause.error is exc and cause.compile_failure


def test_exceptions_that_are_not_compile_wrappers_are_left_as_they_are():
    for exc in (ValueError("v"), RuntimeError("r"), IndexError("i"), torch.linalg.LinAlgError("singular")):
        exc.__cause__ = TypeError("a cause of a plain exception is not followed")
        cause = find_cause(exc)
        assert cause.error is exc and cause.wrappers == () and not cause.compile_failure
        assert cause.type_name() == type(exc).__name__


def _wrapped(inner: BaseException) -> TorchRuntimeError:
    """dynamo's shape for an op that raised on fake tensors: TorchRuntimeError from None, handling Unsupported."""
    unsupported = Unsupported("RuntimeError when making fake tensor call", gb_type=OP_RAISED)
    unsupported.__cause__ = inner
    outer = TorchRuntimeError("RuntimeError when making fake tensor call")
    outer.__context__, outer.__suppress_context__ = unsupported, True
    return outer


def test_the_walk_is_cycle_safe_and_bounded():
    looped = _wrapped(ValueError("never reached"))
    looped.__context__.__cause__ = looped  # a chain that leads back to its start
    cause = find_cause(looped)
    assert cause.wrappers == ("TorchRuntimeError",) and cause.compile_failure  # stopped at the repeat: no cause found
    nested: BaseException = ValueError("deep")
    for _ in range(MAX_DEPTH):  # 2 * MAX_DEPTH wrappers around the ValueError
        nested = _wrapped(nested)
    deep = find_cause(nested)
    assert len(deep.wrappers) == MAX_DEPTH and deep.compile_failure and type(deep.error) is not ValueError
    assert type(find_cause(nested, max_depth=2 * MAX_DEPTH).error) is ValueError


def test_an_unsupported_of_another_graph_break_type_is_not_unwrapped():
    other = Unsupported("Data dependent operator", gb_type="Data dependent operator")
    other.__cause__ = RuntimeError("the op would have run, the compiler declined it")
    cause = find_cause(other)
    assert cause.error is other and cause.compile_failure


def test_the_rules_an_exported_script_applies_are_this_module_s():
    import ast
    import os

    from torchcts.engine import error_cause

    rules = {name: ast.literal_eval(text) for name, text in error_cause.rules_as_literals().items()}
    assert rules["max_depth"] == error_cause.MAX_DEPTH
    assert set(rules["op_raised_breaks"]) == error_cause.OP_RAISED_BREAKS
    assert rules["compiler_modules"] == error_cause._COMPILER_MODULES
    for name, prefixes in (("op_code", error_cause._OP_CODE), ("dispatch", error_cause._DISPATCH),
                           ("tracers", error_cause._TRACERS)):
        assert tuple(path.replace("/", os.sep) for path in rules[name]) == prefixes
