"""The in-test compile backends (`torchcts.testing.compile_backends`) behave as documented, through real
torch.compile calls on CPU."""

from __future__ import annotations

import importlib

import pytest
import torch
import torch._dynamo

from torchcts.testing import compile_backends as backends


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test compiles from scratch: no cache entry of another test's function or backend."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def add_then_double(a, b):
    return torch.add(a, b) * 2


def test_importing_registers_each_backend_once():
    importlib.reload(backends)  # a second registration of the same names is nothing, not dynamo's duplicate error
    known = torch._dynamo.list_backends(exclude_tags=())
    assert all(name in known for name in backends.BACKENDS)


def test_wrong_add_changes_only_the_result_of_an_add():
    x, y = torch.arange(3.0), torch.full((3,), 0.5)
    compiled = torch.compile(add_then_double, backend=backends.WRONG_ADD)
    torch.testing.assert_close(compiled(x, y), (x + y + 1) * 2)  # the add is one more, the multiply is right
    no_add = torch.compile(lambda a, b: (a * b).sin(), backend=backends.WRONG_ADD)
    torch.testing.assert_close(no_add(x, y), (x * y).sin())  # a graph without an add is right


def test_wrong_add_covers_every_spelling_of_add_but_not_bool_and_leaves_backward_right():
    assert torch.equal(torch.compile(lambda a: a + 2, backend=backends.WRONG_ADD)(torch.tensor([1, 2])),
                       torch.tensor([4, 5]))
    assert torch.equal(torch.compile(lambda a: a.add_(1), backend=backends.WRONG_ADD)(torch.zeros(2)),
                       torch.full((2,), 2.0))
    flags = torch.tensor([True, False])
    assert torch.equal(torch.compile(lambda a: a + a, backend=backends.WRONG_ADD)(flags), flags)
    leaf = torch.ones(3, requires_grad=True)
    total = torch.compile(lambda a: (a + a).sum(), backend=backends.WRONG_ADD)(leaf)
    total.backward()
    assert total.item() == 9.0  # forward wrong: (1 + 1 + 1) * 3
    torch.testing.assert_close(leaf.grad, torch.full((3,), 2.0))  # backward of a + a is right


def test_the_same_graph_is_right_under_eager_and_aot_eager():
    """The fault is the backend's alone: dynamo's graph (eager) and AOTAutograd's (aot_eager) are right."""
    x, y = torch.arange(3.0), torch.full((3,), 0.5)
    for backend in ("eager", "aot_eager"):
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(add_then_double, backend=backend)(x, y), (x + y) * 2)


def test_compile_raises_refuses_while_compiling():
    compiled = torch.compile(lambda a: a + 1, backend=backends.COMPILE_RAISES)
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as raised:
        compiled(torch.ones(2))
    assert isinstance(raised.value.inner_exception, RuntimeError)
    assert str(raised.value.inner_exception) == backends.COMPILE_ERROR


def test_dynamic_only_is_right_with_static_shapes():
    compiled = torch.compile(add_then_double, backend=backends.DYNAMIC_ONLY, dynamic=False)
    for n in (3, 4, 5):  # a static recompile per size: right every time
        x = torch.arange(float(n))
        torch.testing.assert_close(compiled(x, x), (x + x) * 2)


def test_dynamic_only_is_wrong_with_symbolic_sizes():
    x = torch.arange(3.0)
    dynamic = torch.compile(add_then_double, backend=backends.DYNAMIC_ONLY, dynamic=True)
    torch.testing.assert_close(dynamic(x, x), (x + x + 1) * 2)


def test_dynamic_only_turns_wrong_when_automatic_mode_recompiles_dynamic():
    """torch's default (dynamic=None): the first size compiles static (right), a second size recompiles with
    symbolic sizes (wrong): the history a failure of the automatic mode can need."""
    compiled = torch.compile(add_then_double, backend=backends.DYNAMIC_ONLY)
    first, second = torch.arange(3.0), torch.arange(4.0)
    torch.testing.assert_close(compiled(first, first), (first + first) * 2)
    torch.testing.assert_close(compiled(second, second), (second + second + 1) * 2)


def test_has_symbolic_sizes_reads_the_graph_dynamo_traced():
    seen = []

    def spy(gm, example_inputs):
        seen.append(backends.has_symbolic_sizes(gm))
        return gm.forward

    x = torch.ones(3)
    torch.compile(lambda a: a * 2, backend=spy, dynamic=False)(x)
    torch._dynamo.reset()
    torch.compile(lambda a: a * 2, backend=spy, dynamic=True)(x)
    assert seen == [False, True]
