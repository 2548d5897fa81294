"""One path-shapes item executed and judged: a case's seeded draws run on CPU and on the device (forward results, or
the gradients of every floating operand under fixed seeded cotangents), compared with the oracle's tolerance model
(`engine.oracle`); the record fields of its verdict. `pathshapes.runner` decides which items run and records them.
"""

from __future__ import annotations

import traceback
from typing import Any

import attrs
import torch
from torch.utils._pytree import tree_leaves

from torchcts.core.outcomes import Outcome
from torchcts.engine import oracle
from torchcts.engine.gradients import fixed_cotangent
from torchcts.pathshapes.corpus import Case, tensor_specs
from torchcts.pathshapes.inputs import build_arguments, draw_seed
from torchcts.pathshapes.ops import OPS, POINTWISE


def floating_specs(case: Case) -> list[Any]:
    return [s for s in tensor_specs(case) if s.torch_dtype.is_floating_point]


def _device_op(case: Case, compile: Any) -> Any:
    """The case's op as the device side runs it: under `compile` (a CompileSpec, compiled once per process) or
    eager."""
    spec = OPS[case.op]
    if compile is None:
        return spec
    # engine.targets loads hypothesis and the strategies: only a compiled run needs them
    from torchcts.engine.targets import compiled_callable

    return attrs.evolve(spec, fn=compiled_callable(spec.fn, compile))


def run_case(case: Case, device: str, manifest: Any = None, compile: Any = None) -> dict[str, Any]:
    """Execute one case's draws on `device` (under `compile`, a CompileSpec, where given) and on CPU; the record
    fields of its verdict (outcome, reason, error, examples, the largest errors seen)."""
    spec, device_spec = OPS[case.op], _device_op(case, compile)
    worst = oracle.Comparison(True)
    for draw in range(case.budget):
        generator = torch.Generator().manual_seed(draw_seed(case.id, draw))
        args, kwargs = build_arguments(case, "cpu", generator)
        call = f"{case.op} draw {draw} (seed {draw_seed(case.id, draw)})"
        try:
            expected = spec.fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the oracle rejects the case: not a finding about the backend
            return _verdict(Outcome.CPU_CONTRACT, f"the CPU oracle raised on {call}", exc, draw)
        try:
            device_args, device_kwargs = _to_device(args, device), {k: _to_device(v, device) for k, v in kwargs.items()}
            actual = device_spec.fn(*device_args, **device_kwargs)
        except Exception as exc:  # noqa: BLE001 - the backend raised where CPU did not
            return _verdict(Outcome.ERROR, f"the backend raised on {call} where CPU did not", exc, draw)
        tol = _tolerance(case, spec.category, args, expected, manifest, device,
                         ("compile", spec.category) if compile is not None else None)
        try:  # comparing reads the device's result back: a backend failing there is the backend's error
            result = oracle.compare(actual, expected, tol, strides="significant" if case.op in POINTWISE else False)
        except Exception as exc:  # noqa: BLE001
            return _verdict(Outcome.ERROR, f"the backend raised reading back {call} where CPU did not", exc, draw)
        if not result.ok:
            return {"outcome": Outcome.FAILED, "reason": "the backend's result differs from the CPU oracle's",
                    "error": f"{call}: {result.message}", "error_line": result.message[:300],
                    "examples": draw + 1, "max_abs_error": result.max_abs_error, "max_ulp": result.max_ulp}
        worst = oracle.Comparison(True, "", max(worst.max_abs_error, result.max_abs_error),
                                  max(worst.max_rel_error, result.max_rel_error), max(worst.max_ulp, result.max_ulp))
    return {"outcome": Outcome.PASSED, "reason": "", "error": None, "examples": case.budget,
            "max_abs_error": worst.max_abs_error, "max_ulp": worst.max_ulp}


def run_backward(case: Case, device: str, manifest: Any = None, compile: Any = None) -> dict[str, Any]:
    """Execute one case's draws through autograd on `device` (the forward under `compile` where given) and on CPU:
    the gradients of every floating operand under the same seeded cotangents; the record fields of its verdict."""
    spec, device_spec = OPS[case.op], _device_op(case, compile)
    worst = oracle.Comparison(True)
    for draw in range(case.budget):
        seed = draw_seed(case.id, draw)
        args, kwargs = build_arguments(case, "cpu", torch.Generator().manual_seed(seed))
        call = f"{case.op} backward, draw {draw} (seed {seed})"
        try:
            device_args, device_kwargs = _to_device(args, device), {k: _to_device(v, device) for k, v in kwargs.items()}
        except Exception as exc:  # noqa: BLE001 - the backend cannot even hold the operands
            return _verdict(Outcome.ERROR, f"the backend raised on {call} where CPU did not", exc, draw)
        try:
            outputs, expected = _gradients(spec, args, kwargs, seed)
        except Exception as exc:  # noqa: BLE001 - the oracle rejects the case: not a finding about the backend
            return _verdict(Outcome.CPU_CONTRACT, f"the CPU oracle raised on {call}", exc, draw)
        try:
            _, actual = _gradients(device_spec, device_args, device_kwargs, seed)
        except Exception as exc:  # noqa: BLE001 - the backend raised where CPU did not
            return _verdict(Outcome.ERROR, f"the backend raised on {call} where CPU did not", exc, draw)
        # a gradient sums over what the forward broadcast or reduced, and over what it fanned out
        tol = _tolerance(case, spec.category, args, outputs, manifest, device,
                         (("compile",) if compile is not None else ()) + oracle.gradient_categories(spec.category))
        widening = oracle.accumulation_widening(outputs, expected)
        tol = oracle.normwise_floor(tol.widened(widening) if widening > 1 else tol, expected)
        try:  # comparing reads the device's gradients back: a backend failing there is the backend's error
            result = oracle.compare(actual, expected, tol)
        except Exception as exc:  # noqa: BLE001
            return _verdict(Outcome.ERROR, f"the backend raised reading back {call} where CPU did not", exc, draw)
        if not result.ok:
            message = result.message.replace("output", "gradient", 1)
            return {"outcome": Outcome.FAILED, "reason": "the backend's gradients differ from the CPU oracle's",
                    "error": f"{call}: {message}", "error_line": message[:300], "examples": draw + 1,
                    "max_abs_error": result.max_abs_error, "max_ulp": result.max_ulp}
        worst = oracle.Comparison(True, "", max(worst.max_abs_error, result.max_abs_error),
                                  max(worst.max_rel_error, result.max_rel_error), max(worst.max_ulp, result.max_ulp))
    return {"outcome": Outcome.PASSED, "reason": "", "error": None, "examples": case.budget,
            "max_abs_error": worst.max_abs_error, "max_ulp": worst.max_ulp}


def _gradients(spec: Any, args: list[Any], kwargs: dict[str, Any], seed: int) -> tuple[list[Any], list[Any]]:
    """(the op's differentiable outputs, detached; the gradient of every floating operand but the op's constants
    (batch norm's running statistics), zeros where autograd gives none) for cotangents drawn from `seed`. The
    operands are fresh leaves (`build_arguments`, `_to_device`)."""
    variables = ([a for i, a in enumerate(args) if i not in spec.constants],
                 {k: v for k, v in kwargs.items() if k not in spec.constants})
    leaves = [t for t in tree_leaves(variables) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    for leaf in leaves:
        leaf.requires_grad_(True)
    outputs = [t for t in tree_leaves(spec.fn(*args, **kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outputs:
        return [], [torch.zeros_like(leaf) for leaf in leaves]
    cotangents = [fixed_cotangent(o, (seed + index) % 2**63) for index, o in enumerate(outputs)]
    grads = torch.autograd.grad(outputs, leaves, cotangents, allow_unused=True)
    return ([o.detach() for o in outputs],
            [torch.zeros_like(leaf) if g is None else g for leaf, g in zip(leaves, grads)])


def _tolerance(case: Case, category: str, args: Any, expected: Any, manifest: Any, device: str,
               categories: tuple[str, ...] | None = None) -> oracle.Tolerance:
    """The oracle's tolerance for the case's first floating dtype, with the manifest's overrides of `categories`
    (default: the op's `category` alone), widened for accumulation and, beyond elementwise ops, norm-wise."""
    dtype = next((s.torch_dtype for s in floating_specs(case)), torch.float32)
    tol = oracle.tolerance(dtype, None, manifest, device, categories or (category,))
    widening = oracle.accumulation_widening(args, expected)
    if widening > 1:
        tol = tol.widened(widening)
    return oracle.normwise_floor(tol, expected, args, category) if category != "elementwise" else tol


def _to_device(value: Any, device: str) -> Any:
    """A copy of `value` on `device` with the same strides (lists element by element)."""
    if isinstance(value, list):
        return [_to_device(v, device) for v in value]
    if not isinstance(value, torch.Tensor):
        return value
    out = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=device)
    return out.copy_(value)


def _verdict(outcome: Outcome, reason: str, exc: BaseException, draw: int) -> dict[str, Any]:
    line = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"[:300]
    text = "".join(traceback.format_exception_only(type(exc), exc))[-4000:]
    fields = {"outcome": outcome, "reason": reason, "error": text, "error_line": line, "examples": draw + 1}
    if outcome is Outcome.ERROR:
        fields["error_kind"] = "backend"
    return fields
