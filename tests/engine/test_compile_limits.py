"""Dynamo's recompile limits never turn a compiled target into an eager one: every op's compiled function shares
one code object (`strategies.call_variant`), so its cache entries count against one limit for the whole run.
The limits are raised to far more than a run compiles, and reaching one is an error of the case, not an op run
eagerly that then passes. Real torch.compile on CPU with the `eager` backend (dynamo only).
"""

from __future__ import annotations

import types

import pytest
import torch
import torch._dynamo

from torchcts.engine import compile_target
from torchcts.engine.compile_target import CompileSpec, compiles_so_far, raise_recompile_limits
from torchcts.engine.targets import Target, reset_compiled
from torchcts.plan.catalog import find_op

OPS = ("sin", "cos", "exp", "neg")
LIMITS = ("recompile_limit", "accumulated_recompile_limit", "fail_on_recompile_limit_hit")


@pytest.fixture
def dynamo_limits():
    """Dynamo's limits as they were before the test, restored after it."""
    with torch._dynamo.config.patch({name: getattr(torch._dynamo.config, name) for name in LIMITS}):
        reset_compiled()
        yield
    reset_compiled()


def _call(target: Target, op: str, rows: int) -> int:
    """Run `op` on a new shape through the target; how many frames dynamo compiled for it."""
    before = compiles_so_far()
    sample = types.SimpleNamespace(input=torch.rand(rows, 3), args=(), kwargs={})
    result = target.call(find_op(op), "function", sample)
    torch.testing.assert_close(result, find_op(op)(sample.input))
    return compiles_so_far() - before


def test_the_limits_are_far_above_a_run_and_reaching_them_is_an_error(dynamo_limits):
    raise_recompile_limits()
    assert torch._dynamo.config.recompile_limit >= 100_000  # 100 ops x 1000 shapes
    assert torch._dynamo.config.accumulated_recompile_limit >= 100_000
    assert torch._dynamo.config.fail_on_recompile_limit_hit


def test_past_the_limit_a_new_shape_raises_and_never_runs_eagerly(dynamo_limits, monkeypatch):
    monkeypatch.setattr(compile_target, "_RECOMPILE_LIMIT", 6)
    torch._dynamo.config.recompile_limit = 1  # raise_recompile_limits only raises them
    torch._dynamo.config.accumulated_recompile_limit = 1
    target = Target("cpu", CompileSpec("eager", shape_mode="static"))
    compiled = [_call(target, op, rows) for rows in (1, 2) for op in OPS[:3]]  # 6 entries of the shared code
    assert all(compiled)  # each new (op, shape) was compiled, across ops: the limit is the run's
    with pytest.raises(Exception, match="recompile_limit|accumulated_recompile_limit"):
        _call(target, OPS[3], 3)
