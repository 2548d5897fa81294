"""Hand-written calls (`strategies/curated_calls.py`): the rules each builder keeps, checked on CPU's kernels."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.coverage.generated import generated_overloads, resolve
from torchcts.strategies.curated_calls import CURATED, curated, curated_arguments

aten = torch.ops.aten
FEW = settings(max_examples=3, database=None, deadline=None, derandomize=True,
               suppress_health_check=list(HealthCheck))


def test_every_curated_overload_and_its_donor_exist_and_are_generated_targets():
    found = generated_overloads()
    for name, (_, donor) in CURATED.items():
        assert resolve(name) is not None and resolve(donor) is not None, name
        assert donor.split(".")[1].rstrip("_") == name.split(".")[1].rstrip("_"), name  # the same family
        assert found.get(name) == "generated", (name, found.get(name))


@pytest.mark.parametrize("name", sorted(CURATED))
def test_cpu_runs_every_curated_call(name):
    op = resolve(name)

    @FEW
    @given(curated_arguments(name, torch.float32))
    def check(drawn):
        op(*drawn.args, **drawn.kwargs)  # raises if the builder broke a rule CPU's kernel checks

    check()


@FEW
@given(curated_arguments("aten._fused_adam_.default", torch.float32))
def test_fused_adam_lists_match_their_parameters(drawn):
    params, grads, exp_avgs, exp_avg_sqs, maxima, steps = drawn.args[:6]
    for each in (grads, exp_avgs, exp_avg_sqs):
        assert [t.shape for t in each] == [p.shape for p in params]
    assert len(steps) == len(params) and all(s.dim() == 0 for s in steps)
    assert maxima == [] if not drawn.kwargs["amsgrad"] else [t.shape for t in maxima] == [p.shape for p in params]
    assert all(bool((t >= 0).all()) for t in exp_avg_sqs + maxima)  # second moments
    before = [p.clone() for p in params]
    aten._fused_adam_.default(*drawn.args, **drawn.kwargs)
    assert drawn.mutated[:1] == (0,)
    assert any(not torch.equal(a, b) for a, b in zip(before, params)) or all(
        not bool(g.any()) for g in drawn.args[1])  # a non-zero gradient moves a parameter


@FEW
@given(st.data())
def test_out_overloads_get_out_tensors_from_the_functional_result(data):
    drawn = data.draw(curated_arguments("aten.slow_conv_dilated2d.out", torch.float32))
    assert drawn.mutated == ("out",) and drawn.kwargs["out"].numel() == 0
    functional = aten.slow_conv_dilated2d.default(*drawn.args, **{k: v for k, v in drawn.kwargs.items() if k != "out"})
    assert torch.equal(aten.slow_conv_dilated2d.out(*drawn.args, **drawn.kwargs), functional)


def test_only_listed_overloads_are_curated():
    assert curated("aten._stack.default") and not curated("aten.add.Tensor")
    with pytest.raises(InvalidArgument, match="no curated call builder"):
        curated_arguments("aten.add.Tensor", torch.float32)
