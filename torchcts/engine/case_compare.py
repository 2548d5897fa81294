"""How a `CaseContext` holds the device's result to the oracle's: the tolerance for the item (manifest overrides,
accumulation widening, norm-wise floors) and the float64 ULP rule (docs/oracle.md).

Apart from the loop (`case_loop`) and the executions (`CaseContext.on_cpu`, `on_device`): this is the verdict on one
pair of results. `CaseContext.assert_matches` and `assert_ulp` delegate here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import attrs
import hypothesis
import torch
from torch.utils._pytree import tree_leaves

from torchcts.engine import oracle, precision, ulp_oracle
from torchcts.engine.case_errors import CpuRejects
from torchcts.engine.targets import Target
from torchcts.plan.catalog import op_id

if TYPE_CHECKING:  # annotations only: context imports this module
    from torchcts.engine.context import CaseContext


def assert_matches(cts: CaseContext, actual: Any, expected: Any, *, what: str = "", strides: bool | str = False,
                   widen: float = 1.0, inputs: Any = None, normwise: bool | None = None,
                   categories: tuple[str, ...] | None = None) -> None:
    """AssertionError unless the device's result matches the oracle's (values where comparable).

    `categories` (most specific first) pick the manifest's tolerance overrides: default, the op's category
    (`oracle.comparison_categories`); a run under `--compile` reads `compile` above them.

    With `inputs` (the case's sample), the tolerance widens for results that each sum many
    inputs (`oracle.accumulation_widening`) and, for ops that are not elementwise (or with
    `normwise=True`: a scenario that resamples or averages), gets a norm-wise absolute floor and the
    claimed dtype's accumulation bound sqrt(n) * eps * sum|x| (`oracle.normwise_floor`).
    """
    name = cts.op.name if cts.op is not None else cts.item.op  # a scenario item: the scenario's name
    # a scenario's name is no op name: the op tables (random ops, `empty`) say nothing about it ("subnormal_*")
    values = cts.target.compares_values and (cts.op is None or oracle.values_comparable(name))
    if inputs is not None:
        widen *= oracle.accumulation_widening([inputs.input, list(inputs.args), dict(inputs.kwargs)], expected)
    if categories is None:
        categories = oracle.comparison_categories(cts.op.name if cts.op is not None else None)
    if cts.target.compile_backend is not None and "compile" not in categories:
        categories = ("compile", *categories)
    tol = oracle.tolerance(_result_dtype(cts.dtype, expected), cts.op, cts.manifest,
                           cts.target.device_type, categories).widened(widen)
    if normwise is None:
        normwise = oracle.category(name) != "elementwise"
    case_inputs = [inputs.input, list(inputs.args), dict(inputs.kwargs)] if inputs is not None else None
    if inputs is not None and normwise:
        tol = oracle.normwise_floor(tol, expected, case_inputs, oracle.category(name))
    elif inputs is not None and precision.capped_default(tol):  # an "elementwise" op that sums (scatter_add,
        tol = oracle.accumulation_floor(tol, expected, case_inputs, oracle.category(name))  # pooling): its bound
    try:
        # a scenario program's plain values are metadata it observed (strides, `_is_view()`): shown by every target
        result = oracle.compare(actual, expected, tol, values=values, strides=strides,
                                plain=values or cts.op is None)
    except Exception as exc:  # noqa: BLE001 - reading the device's result (metadata, copy to CPU) raised
        cts.raise_backend(exc, " (reading its result back to CPU)")
    if not result.ok:
        cts.failing_comparison = result
        prefix = f"{what}: " if what else ""
        raise AssertionError(f"{prefix}{cts.target.describe()} differs from CPU: {result.message}")
    if result.max_abs_error > cts.worst.max_abs_error or result.max_ulp > cts.worst.max_ulp:
        cts.worst = result
    if cts.targeting and cts.in_hypothesis:
        hypothesis.target(float(min(result.max_ulp, 2**60)), label=f"ulp {what}")


def assert_ulp(cts: CaseContext, actual: Any, expected: Any, sample: Any, *,
               run: Callable[[Any, Any, Target], Any] | None = None, rule: ulp_oracle.UlpRule | None = None,
               what: str = "") -> None:
    """After `assert_matches` passed: hold both results to the float64 reference (`ulp_oracle`, docs/oracle.md).

    The reference is `run` (default: the item's op on the upcast sample as it is) on CPU with the sample's floating
    tensors upcast to float64; `rule` defaults to the op's in `ulp_oracle.RULES`. AssertionError where a
    correctly rounded op is less accurate on the device than on CPU; the errors of both go to the record.
    Nothing for targets that show no values, random ops, integer items, or a reference CPU cannot compute."""
    name = cts.op.name if cts.op is not None else cts.item.op
    if not (cts.target.compares_values and (cts.op is None or oracle.values_comparable(name))
            and ulp_oracle.measurable(cts.dtype)):
        return
    if rule is None:
        rule = ulp_oracle.rule_for(op_id(cts.op) if cts.op is not None else cts.item.op, cts.dtype)
    if rule.applies is not None and not rule.applies(sample):
        rule = ulp_oracle.RECORD_ONLY
    if not ulp_oracle.needs_reference_run(cts.dtype):  # float64 items: CPU's result is the reference
        if rule.kind != ulp_oracle.CORRECTLY_ROUNDED:
            return
        # CPU's own result may be one rounding off (as its float32 sqrt is): a correctly rounded device then
        # differs from it by up to one ULP, not half
        rule = attrs.evolve(rule, slack=max(rule.slack, 0.5))
        reference = expected
    else:
        run = run or (lambda context, s, target: target.call(context.op, context.item.variant,
                                                             context.place_for(s, target).value))  # fresh copies
        try:
            reference = cts.on_cpu_call(run, ulp_oracle.float64_sample(sample))
        except CpuRejects:  # the op rejects float64 (or the upcast sample): no reference for this case
            return
    result = ulp_oracle.compare(actual, expected, reference, rule, call=what)
    cts.ulp.add(rule, result)
    if not result.ok:
        cts.failing_comparison = oracle.Comparison(False, result.message)
        raise AssertionError(f"{cts.target.describe()} differs from CPU: {result.message}")
    if cts.targeting and cts.in_hypothesis and result.measured:
        hypothesis.target(min(result.device_error - result.cpu_error, 2.0**60), label=f"ulp excess {what}")


def _result_dtype(dtype: torch.dtype, expected: Any) -> torch.dtype:
    """The dtype the tolerance is for: the first floating result's (fft of int32, a float16 item promoted to
    float64 by its partner, a float32 item cast to float16), else the item's."""
    for leaf in tree_leaves(expected):
        if isinstance(leaf, torch.Tensor) and (leaf.is_floating_point() or leaf.is_complex()):
            return leaf.dtype
    return dtype
