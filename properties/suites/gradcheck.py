"""Gradient checks: the device's gradients agree with its own finite differences, and its second-order gradients
with CPU's.

`gradcheck` (capability `gradcheck`): `torch.autograd.gradcheck` in float64 on the device, on the op's OpInfo
samples (its `gradcheck_wrapper`, `output_process_fn_grad` and `gradcheck_nondet_tol`), differentiating every
floating input CPU's autograd can differentiate. The oracle is the device's own forward: the analytical Jacobian
(backward kernels) must equal the numerical one (central differences of the forward kernels), element by element
(slow mode) for samples of at most `SLOW_MODE_NUMEL` input and output elements, else along random directions (fast
mode); backward must be reentrant and give gradients of the inputs' dtypes and shapes.

`double_backward` (capability `double_backward`): outputs weighted by fixed cotangents that require grad are
differentiated with `create_graph=True`; the first-order gradients, weighted again, are differentiated with respect
to the inputs and the cotangents. The outputs, the first-order and the second-order gradients equal CPU's. Items
whose outputs are double precision also run `torch.autograd.gradgradcheck` on the device.

A check that fails on the device is repeated on CPU: when CPU's own check fails on the sample too (a point where
the op is not differentiable, a sparse output gradcheck refuses) the case is `cpu_contract`, never a pass.

Limits: reverse mode only (no forward AD, no batched/vmap gradients, no undefined-gradient handling); samples
without special values or value changes (ties and non-finite values are points where finite differences say
nothing); gradcheck only on OpInfo's `sample_inputs` (not its large reference inputs) of at most `MAX_NUMEL`
elements; fast mode projects the Jacobian and can miss a small error in one element; gradcheck's tolerances (atol
1e-5, rtol 1e-3) are far looser than float64 rounding: precision is the `backward` property's ground.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.autograd.gradcheck import GradcheckError
from torch.utils._pytree import tree_flatten, tree_leaves, tree_unflatten

from torchcts.engine import oracle
from torchcts.engine.context import BackendError
from torchcts.engine.targets import ORACLE
from torchcts.plan.registry import OpInfoItems, register_property
from torchcts.engine.gradients import fixed_cotangent
from torchcts.properties.suites.backward import _gradient_dtypes
from torchcts.strategies import opinfo_samples
from torchcts.strategies.opinfo_pool import REFERENCE_INPUTS_LEVEL
from torchcts.strategies.sample_walk import sample_input

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("`double_backward`: second-order gradients (through cotangents and inputs, `create_graph=True`) equal "
          "CPU's; `gradgradcheck` on the device for double-precision samples; `gradcheck`: "
          "`torch.autograd.gradcheck` on the device: its backward kernels agree with finite differences of its own "
          "forward (whole Jacobians for small samples, random projections otherwise), gradients of the inputs' "
          "dtypes")
ITEMS = "OpInfo (`gradcheck` in float64)"

SLOW_MODE_NUMEL = 64  # input plus output elements up to which gradcheck compares whole Jacobians
# ... up to which gradcheck runs at all: a failing fast-mode check builds whole Jacobians for its message (a
# 1M-element reference input would need terabytes); gradgradcheck's also span the cotangents: a lower bound
MAX_NUMEL, GRADGRAD_MAX_NUMEL = 4096, 2048


# -- the function gradcheck differentiates ----------------------------------------------------------------------------

def _floating_positions(sample: Any) -> list[int]:
    flat, _ = tree_flatten([sample.input, list(sample.args), dict(sample.kwargs)])
    return [i for i, t in enumerate(flat) if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]


def _function(cts, placed: Any, positions: list[int], target) -> tuple[Callable[..., Any], tuple[torch.Tensor, ...]]:
    """(fn, inputs): fn(*inputs) calls the op on `placed` with the leaves at `positions` replaced, through the
    OpInfo's gradcheck wrapper and output processing; inputs are those leaves, requiring grad."""
    flat, spec = tree_flatten([placed.input, list(placed.args), dict(placed.kwargs)])
    op = cts.op

    def call(input, *args, **kwargs):
        return target.call(op, "function", sample_input(input, args=args, kwargs=kwargs))

    call.__name__ = getattr(op.op, "__name__", call.__name__)  # masked ops' gradcheck wrapper reads it

    def fn(*values):
        leaves = list(flat)
        for position, value in zip(positions, values):
            leaves[position] = value
        input, args, kwargs = tree_unflatten(leaves, spec)
        return placed.output_process_fn_grad(op.gradcheck_wrapper(call, input, *args, **kwargs))

    return fn, tuple(_dense_if_expanded(flat[p]).detach().requires_grad_(True) for p in positions)


def _dense_if_expanded(t: torch.Tensor) -> torch.Tensor:
    """gradcheck perturbs inputs element by element: an expanded input (a zero stride) is checked as a dense copy."""
    if t.layout == torch.strided and any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride())):
        return t.clone(memory_format=torch.contiguous_format)
    return t


def _outputs(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    return [t for t in tree_leaves(fn(*inputs)) if isinstance(t, torch.Tensor) and t.requires_grad]


def _differentiable(cts, sample: Any, target) -> tuple[list[int], int, bool]:
    """(positions of the floating leaves CPU's autograd differentiates, their elements plus the outputs', whether
    every differentiable output is float64 or complex128); raises (on CPU: cpu_contract) when there is none. All
    floating leaves, else each one alone: an op may refuse a leaf that requires grad (batch norm's running
    statistics) or not implement its derivative (a loss's target)."""
    placed = cts.place_for(sample, target).value

    def probe(chosen: list[int]) -> tuple[int, bool] | None:
        fn, inputs = _function(cts, placed, chosen, target)
        try:
            outputs = _outputs(fn, inputs)
            if not outputs:
                return None
            torch.autograd.grad(outputs, inputs, [torch.ones_like(o) for o in outputs], allow_unused=True)
        except RuntimeError:  # "... is not differentiable with respect to argument", "... is not implemented"
            return None
        return (sum(t.numel() for t in inputs) + sum(o.numel() for o in outputs),
                all(o.dtype in (torch.float64, torch.complex128) for o in outputs))

    chosen = _floating_positions(placed)
    found = probe(chosen) if chosen else None
    if found is None:
        chosen = [p for p in chosen if probe([p]) is not None]
        found = probe(chosen) if chosen else None
    if found is None:
        raise ValueError("autograd differentiates none of the floating inputs")
    return chosen, *found


def _checkable(cts, sample: Any, target) -> tuple[list[int], int, bool]:
    """`_differentiable`, raising (on CPU: cpu_contract) where an output is not in double precision (finite
    differences of a float32 output, `float` or `half`, are rounding noise, on CPU too) or the case is too large."""
    found = _differentiable(cts, sample, target)
    if not found[2]:
        raise ValueError("a differentiable output is not float64 or complex128: finite differences are noise")
    if found[1] > MAX_NUMEL:
        raise ValueError(f"{found[1]} input and output elements: too many for gradcheck's dense Jacobians")
    return found


def _checker(check: Callable[..., bool], positions: list[int], numel: int) -> Callable[[Any, Any, Any], str]:
    """run(cts, sample, target) -> "" when `check` (gradcheck or gradgradcheck) passes on the target, else its
    message; on CPU (the oracle) a failing check raises instead, so the case is cpu_contract. gradgradcheck gets
    fixed cotangents made on CPU (not its own, from the device's generator): both sides check the same thing."""

    def run(cts, sample, target) -> str:
        fn, inputs = _function(cts, cts.place_for(sample, target).value, positions, target)
        fast = bool(cts.op.gradcheck_fast_mode) or numel > SLOW_MODE_NUMEL
        extra = {}
        if check is torch.autograd.gradgradcheck:
            extra["grad_outputs"] = [fixed_cotangent(o, i).requires_grad_(True)
                                     for i, o in enumerate(_outputs(fn, inputs))]
        try:
            check(fn, inputs, nondet_tol=cts.op.gradcheck_nondet_tol, fast_mode=fast, check_batched_grad=False,
                  check_undefined_grad=False, check_grad_dtypes=True, raise_exception=True, **extra)
        except GradcheckError as exc:
            if target is ORACLE:
                raise
            return f"{check.__name__}{' (fast mode)' if fast else ''}: {exc}"
        return ""

    return run


def _assert_checks(cts, check: Callable[..., bool], case: Any, differentiable: tuple[list[int], int, bool]) -> None:
    """AssertionError when `check` fails on the device but passes on CPU for the case's differentiable inputs;
    BackendError when it raises on the device only."""
    positions, numel, _ = differentiable
    run = _checker(check, positions, numel)
    try:
        failure = cts.on_device_call(run, case.sample, what=f" ({check.__name__})")
    except BackendError:
        cts.on_cpu_call(run, case.sample)  # CPU raises too (a sparse output gradcheck refuses): cpu_contract
        raise
    if failure:
        cts.on_cpu_call(run, case.sample)  # CPU's own check fails too: cpu_contract
        cts.failing_comparison = oracle.Comparison(False, failure)
        raise AssertionError(f"{cts.target.describe()} fails {failure}")


def _cases(cts, reference_inputs: bool = True):
    """The op's OpInfo samples (reference inputs too from level 3 if `reference_inputs`), re-laid-out, at points where
    finite differences mean something: no special values, no ties or resized dimensions."""
    level = cts.level if reference_inputs else min(cts.level, REFERENCE_INPUTS_LEVEL - 1)
    return opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=level, special_values=False,
                          value_changes=False)


# -- gradcheck --------------------------------------------------------------------------------------------------------

def _checks_gradients(op) -> bool:
    return bool(op.supports_autograd)


def _float64(op):
    """float64 where CPU differentiates the op in it: gradcheck's dtype (finite differences need the precision)."""
    return {torch.float64} & set(op.supported_backward_dtypes("cpu"))


@register_property("gradcheck", capability="gradcheck", level=4,
                   items=OpInfoItems(applies=_checks_gradients, dtypes=_float64))
def test_gradcheck(cts):
    def check(case):
        _assert_checks(cts, torch.autograd.gradcheck, case, cts.on_cpu_call(_checkable, case.sample))

    cts.run(_cases(cts, reference_inputs=False), check)  # the samples torch's own gradcheck tests use


# -- double backward --------------------------------------------------------------------------------------------------

def _second_order(positions: list[int]) -> Callable[[Any, Any, Any], Any]:
    """run(cts, sample, target) -> (outputs, first-order gradients with create_graph, second-order gradients wrt the
    inputs at `positions` and the cotangents)."""

    def run(cts, sample, target):
        fn, inputs = _function(cts, cts.place_for(sample, target).value, positions, target)
        outputs = _outputs(fn, inputs)
        cotangents = [fixed_cotangent(t, i).requires_grad_(True) for i, t in enumerate(outputs)]
        firsts = torch.autograd.grad(outputs, inputs, cotangents, create_graph=True, allow_unused=True)
        wrt = list(inputs) + cotangents
        graded = [(g, i) for i, g in enumerate(firsts) if g is not None and g.requires_grad]
        seconds = [None] * len(wrt)
        if graded:
            seconds = torch.autograd.grad([g for g, _ in graded], wrt,
                                          [fixed_cotangent(g, len(outputs) + i) for g, i in graded], allow_unused=True)
        return ([o.detach() for o in outputs],
                [torch.zeros_like(x) if g is None else g.detach() for x, g in zip(inputs, firsts)],
                [torch.zeros_like(x) if g is None else g for x, g in zip(wrt, seconds)])

    return run


def _twice_differentiable(op) -> bool:
    return bool(op.supports_autograd and op.supports_gradgrad)


@register_property("double_backward", capability="double_backward", level=4,
                   items=OpInfoItems(applies=_twice_differentiable, dtypes=_gradient_dtypes))
def test_double_backward(cts):
    gradients = oracle.gradient_categories(oracle.category(cts.op.name))

    def check(case):
        differentiable = cts.on_cpu_call(_differentiable, case.sample)
        run = _second_order(differentiable[0])
        expected = cts.on_cpu_call(run, case.sample)
        actual = cts.on_device_call(run, case.sample, what=" (double backward)")
        for got, want, what in zip(actual, expected, ("forward outputs", "first-order gradients (create_graph)",
                                                      "second-order gradients")):
            cts.assert_matches(got, want, what=what, inputs=case.sample,
                               categories=None if what == "forward outputs" else gradients)
        if differentiable[2] and differentiable[1] <= GRADGRAD_MAX_NUMEL:  # double precision, small: gradgradcheck
            _assert_checks(cts, torch.autograd.gradgradcheck, case, differentiable)

    cts.run(_cases(cts), check)
