"""Variants: in-place and out= forms give CPU's answer, mutate their target and return it.

Output metadata (dtype, shape, strides) must match CPU's for these forms: the target's layout
is defined by the caller, so there is no freedom left to the backend.
"""

import torch

from torchcts.harness import BackendError
from torchcts.strategies import call_variant, opinfo_samples, place


def _run_inplace(cts, sample, device):
    placed = place(sample, device).value
    result = call_variant(cts.op, "inplace", placed)
    return placed.input, result


def test_inplace(cts):
    def check(case):
        expected_target, _ = cts.on_cpu_call(_run_inplace, case.sample)
        try:
            target, returned = _run_inplace(cts, case.sample, cts.device)
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"{cts.device} raised {type(exc).__name__} in place where CPU did not: {exc}") from exc
        assert returned is target, "the in-place form did not return its input"
        cts.assert_matches(target, expected_target, what="in-place result", strides=True)

    cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=cts.level, variant="inplace"), check)


def _run_out(cts, sample, device):
    placed = place(sample, device).value
    expected_shape = call_variant(cts.op, "function", placed)
    out = torch.utils._pytree.tree_map_only(torch.Tensor, torch.empty_like, expected_shape)
    returned = cts.op(placed.input, *placed.args, **placed.kwargs, out=out)
    return out, returned


def test_out(cts):
    def check(case):
        expected_out, _ = cts.on_cpu_call(_run_out, case.sample)
        try:
            out, returned = _run_out(cts, case.sample, cts.device)
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"{cts.device} raised {type(exc).__name__} with out= where CPU did not: {exc}") from exc
        for got, given in zip(torch.utils._pytree.tree_leaves(returned), torch.utils._pytree.tree_leaves(out)):
            assert got is given, "the out= form did not return its out tensor"
        cts.assert_matches(out, expected_out, what="out= result", strides=True)

    cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=cts.level, variant="out"), check)
