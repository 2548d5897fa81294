"""A compiled item's shrinking is bounded in compiles, not seconds: once an item under torch.compile has failed,
it may spend `SHRINK_COMPILE_BUDGET` more compiles shrinking the failure; then the last failing case, run again,
is the item's failure. Real torch.compile on CPU with the in-test backend that adds one to every add's result.
"""

from __future__ import annotations

import pytest
import torch

from torchcts.engine import case_loop, compile_target
from torchcts.engine.compile_target import CompileSpec, compiles_so_far
from torchcts.engine.context import CaseContext
from torchcts.engine.targets import Target, reset_compiled
from torchcts.plan.build import PlanItem
from torchcts.plan.catalog import find_op
from torchcts.strategies import opinfo_samples
from torchcts.testing.compile_backends import WRONG_ADD

BUDGET = 6


def _context(spec: CompileSpec | None) -> CaseContext:
    item = PlanItem("forward", "add", "function", "float32", 2)
    return CaseContext(item=item, op=find_op("add"), dtype=torch.float32, target=Target("cpu", spec),
                       manifest=None, level=2, max_examples=20, seed=7)


def _run_forward(context: CaseContext) -> list[tuple[int, object]]:
    """Run forward on add; (compiles_so_far() when the case began, the case) for every case the item ran."""
    cases = []

    def check(case):
        cases.append((compiles_so_far(), case))
        context.assert_matches(context.on_device(case.sample), context.on_cpu(case.sample), inputs=case.sample)

    with pytest.raises(AssertionError):
        context.run(opinfo_samples(context.op, context.dtype, level=2), check)
    return cases


def test_shrinking_a_compiled_failure_stops_at_the_compile_budget_and_keeps_a_case_that_fails(monkeypatch):
    monkeypatch.setattr(compile_target, "SHRINK_COMPILE_BUDGET", BUDGET)
    reset_compiled()
    context = _context(CompileSpec(WRONG_ADD, shape_mode="static"))
    cases = _run_forward(context)
    *shrinking, (_, last) = cases
    # no case began once the budget was spent, but the last failing case, run again to be the item's failure
    assert all(began - context.compiles_at_failure < BUDGET for began, _ in shrinking)
    assert compiles_so_far() - context.compiles_at_failure >= BUDGET  # it was spent
    assert last is context.failing_case
    assert "compile budget" in context.record_fields()["shrink_stopped"]  # the record says the case is not minimal
    reset_compiled()
    fresh = _context(CompileSpec(WRONG_ADD, shape_mode="static"))
    fresh.replay = [last]
    _run_forward(fresh)  # the kept case fails alone, in a fresh compile


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_without_the_budget_the_same_item_goes_on_shrinking(monkeypatch):
    monkeypatch.setattr(compile_target, "SHRINK_COMPILE_BUDGET", 10_000)
    reset_compiled()
    context = _context(CompileSpec(WRONG_ADD, shape_mode="static"))
    cases = _run_forward(context)
    assert any(began - context.compiles_at_failure >= BUDGET for began, _ in cases)
    assert "shrink_stopped" not in context.record_fields()


def test_an_eager_target_has_no_compile_budget():
    context = _context(None)
    context.run(opinfo_samples(context.op, context.dtype, level=2),
                lambda case: context.assert_matches(context.on_device(case.sample), context.on_cpu(case.sample),
                                                    inputs=case.sample))
    assert context.compiles_at_failure is None and not case_loop.compile_budget_spent(context)
