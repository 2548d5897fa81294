"""Backward: where `training` is claimed, the backend's gradients equal the CPU oracle's.

Every floating tensor of a drawn case is a leaf that requires grad; the op's outputs (after the
sample's own `output_process_fn_grad`) are weighted by fixed pseudo-random cotangents and
differentiated. A gradient that autograd leaves out (None) counts as zeros on both sides.
Gradients compare under the manifest's `matmul_backward` (matmul ops), `backward`, then the op's
tolerance category (`oracle.gradient_categories`); the forward outputs under the op's category.
"""

import torch
from torch.utils._pytree import tree_leaves

from torchcts.engine import oracle
from torchcts.engine.gradients import fixed_cotangent
from torchcts.plan.registry import OpInfoItems, register_property
from torchcts.strategies import opinfo_samples

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = "gradients vs CPU"
DOCS = ("docs/strategies.md",)


def _leaves(sample):
    return [t for t in tree_leaves([sample.input, list(sample.args), dict(sample.kwargs)])
            if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]


def _gradients(cts, sample, target):
    """(outputs, gradients of every floating input) of the function form on the target."""
    placed = cts.place_for(sample, target).value  # fresh leaves
    inputs = _leaves(placed)
    for t in inputs:
        t.requires_grad_(True)
    result = placed.output_process_fn_grad(target.call(cts.op, "function", placed))
    outputs = [t for t in tree_leaves(result) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outputs or not inputs:
        return outputs, []
    grads = torch.autograd.grad(outputs, inputs, [fixed_cotangent(t, i) for i, t in enumerate(outputs)],
                                allow_unused=True)
    return [o.detach() for o in outputs], [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


def _differentiable(op) -> bool:
    return bool(op.supports_autograd)


def _gradient_dtypes(op):
    """The dtypes CPU differentiates the op in that have gradients: floating and complex."""
    return {d for d in op.supported_backward_dtypes("cpu") if d.is_floating_point or d.is_complex}


@register_property("backward", capability="training", level=4,
                   items=OpInfoItems(applies=_differentiable, dtypes=_gradient_dtypes), also_proves=("ieee754",))
def test_backward(cts):
    gradients = oracle.gradient_categories(oracle.category(cts.op.name))

    def check(case):
        expected_out, expected = cts.on_cpu_call(_gradients, case.sample)
        actual_out, actual = cts.on_device_call(_gradients, case.sample, what=" (backward)")
        cts.assert_matches(actual_out, expected_out, what="forward outputs", inputs=case.sample)
        cts.assert_matches(actual, expected, what="gradients", inputs=case.sample, categories=gradients)

    cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=cts.level), check)
