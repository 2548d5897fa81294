"""Variants: in-place and out= forms give CPU's answer, mutate their target and return it.

Output metadata (dtype, shape, strides of dimensions longer than 1) must match CPU's for these forms: the target's layout
is defined by the caller, so there is no freedom left to the backend.
"""

import torch
from torch.utils._pytree import tree_leaves, tree_map_only

from torchcts.plan.registry import OpInfoItems, register_property
from torchcts.strategies import opinfo_samples

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = "in-place and `out=` forms mutate and return their target with CPU's values and strides"
DOCS = ("docs/strategies.md",)


def _run_inplace(cts, sample, target):
    """(the mutated input, what the in-place form returned)."""
    placed = cts.place_for(sample, target).value
    return placed.input, target.call(cts.op, "inplace", placed)


def _out_like(expected: object):
    """A run of the out= form into zeroed buffers laid out like CPU's functional result, on any target.

    Both sides get the same buffers (sizes, strides, dtype), so a difference is the out= form's
    own, not a difference of the functional form's layout. Zeroed, not empty: an output the op
    leaves unwritten (batch norm's saved statistics in eval mode) must read the same on both sides.
    """
    def run(cts, sample, target):
        placed = cts.place_for(sample, target).value
        out = tree_map_only(torch.Tensor, lambda t: torch.empty_strided(t.shape, t.stride(), dtype=t.dtype,
                                                                         device=target.device).zero_(), expected)
        placed.kwargs = {**placed.kwargs, "out": out}
        return out, target.call(cts.op, "function", placed)

    return run


def _check_variant(cts, runner, form: str):
    """A check: the form's target matches CPU's and is what the form returns.

    `runner(case)` gives the function `run(cts, sample, target)` that runs the form on a target."""

    def check(case):
        run_form = runner(case)
        expected_target, _ = cts.on_cpu_call(run_form, case.sample)
        target, returned = cts.on_device_call(run_form, case.sample, what=f" ({form})")
        if returned is not None:  # out= overloads of ops returning lists (unbind_copy) return nothing
            for got, given in zip(tree_leaves(returned), tree_leaves(target)):
                assert got is given, f"the {form} form did not return its target tensor"
        # strides of every dimension longer than 1: a size-1 dimension's stride means nothing (CPU keeps a
        # broadcast operand's 0 there, meta writes the contiguous one)
        cts.assert_matches(target, expected_target, what=f"{form} result", strides="significant", inputs=case.sample)

    return check


def _has_inplace(op) -> bool:
    return op.inplace_variant is not None


def _supports_out(op) -> bool:
    return bool(op.supports_out)


@register_property("inplace", capability="inference", level=3,
                   items=OpInfoItems(variant="inplace", applies=_has_inplace), also_proves=("ieee754",))
def test_inplace(cts):
    cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=cts.level, variant="inplace"),
            _check_variant(cts, lambda case: _run_inplace, "in-place"))


@register_property("out", capability="inference", level=3, items=OpInfoItems(variant="out", applies=_supports_out),
                   also_proves=("ieee754",))
def test_out(cts):
    cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=cts.level, variant="out"),
            _check_variant(cts, lambda case: _out_like(cts.on_cpu(case.sample, "function")), "out="))
