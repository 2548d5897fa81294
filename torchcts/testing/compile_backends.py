"""Small `torch.compile` backends with known faults, for tests of the compile target and of leg blame.

Importing this module registers them with `torch._dynamo.register_backend` (once per process; a
second import registers nothing). Each is a real backend: dynamo traces the function, and the
backend gets the FX graph and its example inputs, as a third-party compiler would.

- `torchcts_test_wrong_add`: AOTAutograd like `aot_eager`, then it rewrites the forward aten graph
  so that every `aten.add.Tensor` / `aten.add.Scalar` result (not of dtype bool) is one more
  (`result + 1`). Dynamo's graph and AOTAutograd's are right; only this backend's code is wrong,
  and only for graphs that hold an add (`torch.add`, `x + y`, `x.add_(y)`, an add a decomposition
  made). The backward graph is left right.
- `torchcts_test_compile_raises`: raises `RuntimeError` while compiling every graph (torch.compile
  reports it wrapped: `BackendCompilerFailed`, whose `inner_exception` is the RuntimeError).
- `torchcts_test_dynamic_only`: `aot_eager` for a graph with static sizes; for a graph with symbolic
  sizes (a placeholder that is a SymInt, or a tensor with a SymInt size, as dynamo makes them with
  `dynamic=True` or after an automatic-dynamic recompile) it is `torchcts_test_wrong_add`.
- `torchcts_test_compile_sleeps`: a compiler that never finishes: it sleeps (an hour) in every compile, as a stuck
  compiler hangs. With `TORCHCTS_TEST_COMPILE_STARTED` set to a path it first creates that file, so a test knows
  the compile has begun (to time out the item, or to send Ctrl-C during the compile).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch._dynamo
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func

WRONG_ADD = "torchcts_test_wrong_add"
COMPILE_RAISES = "torchcts_test_compile_raises"
DYNAMIC_ONLY = "torchcts_test_dynamic_only"
COMPILE_SLEEPS = "torchcts_test_compile_sleeps"
BACKENDS = (WRONG_ADD, COMPILE_RAISES, DYNAMIC_ONLY, COMPILE_SLEEPS)
STARTED_ENV = "TORCHCTS_TEST_COMPILE_STARTED"  # a path compile_sleeps creates when its compile begins
SLEEP_S = 3600.0
COMPILE_ERROR = "torchcts_test_compile_raises: this test backend refuses every graph"

_ADDS = (torch.ops.aten.add.Tensor, torch.ops.aten.add.Scalar)


def add_one_after_adds(gm: torch.fx.GraphModule) -> int:
    """Rewrite an aten graph in place: every non-bool add's users get `add + 1` instead. How many adds changed."""
    changed = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _ADDS:
            continue
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
            continue
        with gm.graph.inserting_after(node):
            wrong = gm.graph.call_function(torch.ops.aten.add.Scalar, (node, 1))
        node.replace_all_uses_with(wrong, delete_user_cb=lambda user: user is not wrong)
        if "val" in node.meta:
            wrong.meta["val"] = node.meta["val"]
        changed += 1
    if changed:
        gm.recompile()
    return changed


def _wrong_forward(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    add_one_after_adds(gm)
    return make_boxed_func(gm.forward)


def _right(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return make_boxed_func(gm.forward)


_wrong_add_backend = aot_autograd(fw_compiler=_wrong_forward, bw_compiler=_right, keep_inference_input_mutations=True)
_aot_eager_backend = aot_autograd(fw_compiler=_right, bw_compiler=_right, keep_inference_input_mutations=True)


def wrong_add(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """AOTAutograd, then each add's result + 1 in the forward graph."""
    return _wrong_add_backend(gm, example_inputs)


def compile_raises(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Refuse every graph while compiling it."""
    raise RuntimeError(COMPILE_ERROR)


def has_symbolic_sizes(gm: torch.fx.GraphModule) -> bool:
    """Whether dynamo traced the graph with symbolic sizes: a SymInt placeholder, or a tensor placeholder
    whose size or stride holds a SymInt."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(value, torch.SymInt):
            return True
        if isinstance(value, torch.Tensor) and any(isinstance(d, torch.SymInt)
                                                   for d in (*value.shape, *value.stride())):
            return True
    return False


def dynamic_only(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Right (`aot_eager`) for static sizes; `wrong_add` for a graph with symbolic sizes."""
    if has_symbolic_sizes(gm):
        return _wrong_add_backend(gm, example_inputs)
    return _aot_eager_backend(gm, example_inputs)


def compile_sleeps(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Never finish compiling (sleep an hour): a stuck compiler. Creates $TORCHCTS_TEST_COMPILE_STARTED first."""
    started = os.environ.get(STARTED_ENV)
    if started:
        Path(started).touch()
    time.sleep(SLEEP_S)
    return make_boxed_func(gm.forward)


def register() -> None:
    """Register the backends with dynamo under their names; nothing for a name dynamo knows already."""
    known = set(torch._dynamo.list_backends(exclude_tags=()))
    for name, backend in ((WRONG_ADD, wrong_add), (COMPILE_RAISES, compile_raises), (DYNAMIC_ONLY, dynamic_only),
                          (COMPILE_SLEEPS, compile_sleeps)):
        if name not in known:
            torch._dynamo.register_backend(compiler_fn=backend, name=name)


register()
