"""Arguments rebound from OpInfo samples' calls of a sibling overload (`strategies/traced_calls.py`):
the rebinding rules, the donor calls of real overloads, and the drawn layouts (real kernels)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import InvalidArgument

from torchcts.strategies.opinfo_trace import packaged
from torchcts.strategies.traced_calls import donor_calls, family, kin, rebind, siblings, traced_arguments

aten = torch.ops.aten


def test_siblings_are_the_packet_and_its_inplace_or_functional_twin_same_packet_first():
    assert family("add") == ("add", "add_") and family("add_") == ("add_", "add")
    donors = {"aten.add_.Tensor": [], "aten.add.Tensor": [], "aten.addmm.default": [], "aten.add.out": []}
    assert siblings("aten.add.Scalar", donors) == ["aten.add.Tensor", "aten.add.out", "aten.add_.Tensor"]
    assert siblings("aten.__and__.Tensor", {"aten.__and__.Scalar": []}) == ["aten.__and__.Scalar"]


def test_kin_are_similarly_named_packets_whose_schema_offers_every_required_argument():
    donors = packaged()["donors"]
    assert kin("aten.select_copy.int", donors)[0] == "aten.select.int"
    assert "aten.selu.default" not in kin("aten.select_copy.int", donors)  # no `dim`, no `index`
    lanczos = kin("aten._upsample_lanczos2d_aa.default", donors)
    assert "aten._upsample_bilinear2d_aa.default" in lanczos and len({n.split(".")[1] for n in lanczos}) <= 3
    assert not any("1d" in n for n in lanczos)  # upsample_linear1d: another rank
    assert kin("aten._stack.default", donors) == []  # a size-trusting kernel: only its own family's calls
    assert kin("aten.add.Scalar", {"aten.add.Tensor": [], "aten.addmm.default": []}) == []  # family, not kin
    assert siblings("aten.select_copy.int", donors) == []


def test_kin_calls_only_where_the_family_gives_none():
    calls = donor_calls("aten.select_copy.int")  # no traced call of select_copy: select.int's, rebound
    assert calls
    for call in calls:
        assert torch.equal(aten.select_copy.int(*call.args, **call.kwargs), aten.select.int(*call.args, **call.kwargs))
    # upsample_nearest2d has traced calls of its own: none is borrowed from upsample_nearest1d's 3-D inputs
    assert all(call.args[0].dim() == 4 for call in donor_calls("aten.upsample_nearest2d.out"))


def test_an_out_overload_gets_an_empty_out_tensor_of_the_results_dtype():
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    drawn = rebind(aten.max_pool2d_with_indices.out, aten.max_pool2d_with_indices.default, (x, [2, 2]), {})
    assert drawn.args[0].equal(x) and drawn.args[0] is not x
    assert drawn.mutated == ("out", "indices")
    assert (drawn.kwargs["out"].dtype, drawn.kwargs["indices"].dtype) == (torch.float32, torch.int64)
    assert drawn.kwargs["out"].numel() == 0
    out, indices = aten.max_pool2d_with_indices.out(*drawn.args, **drawn.kwargs)
    assert out.equal(torch.tensor([[[[5.0, 7.0], [13.0, 15.0]]]]))


def test_a_functional_overload_drops_the_out_arguments_and_a_list_out_gets_one_tensor_per_result():
    x, y = torch.ones(2), torch.full((2,), 2.0)
    drawn = rebind(aten.add.Tensor, aten.add.out, (x, y), {"out": torch.empty(0)})
    assert len(drawn.args) == 2 and drawn.kwargs == {} and drawn.mutated == ()
    split = rebind(aten.unsafe_split.Tensor_out, aten.unsafe_split.Tensor, (torch.arange(5.0), 2), {})
    assert [t.numel() for t in split.kwargs["out"]] == [0, 0, 0] and split.mutated == ("out",)


def test_an_inplace_twin_writes_self_and_a_missing_required_argument_gives_none():
    x = torch.ones(3)
    inplace = rebind(aten.add_.Tensor, aten.add.Tensor, (x, x), {})
    assert inplace.mutated == (0,)
    assert rebind(aten.add.Tensor, aten.neg.default, (x,), {}) is None  # `other` has no value


def test_donor_calls_of_a_backward_out_form_are_accepted_by_cpu():
    calls = donor_calls("aten.avg_pool3d_backward.grad_input")
    assert calls
    first = calls[0]
    result = aten.avg_pool3d_backward.grad_input(*first.args, **first.kwargs)
    assert result.dim() in (4, 5) and result.shape == first.args[1].shape  # grad_input is shaped like self
    assert donor_calls("aten.no_such_packet.default") == ()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traced_arguments("aten.upsample_nearest2d.out"))
def test_drawn_calls_keep_the_donors_values_in_other_layouts(drawn):
    donors = donor_calls("aten.upsample_nearest2d.out")
    assert any(d.args[0].equal(drawn.args[0]) for d in donors)
    assert drawn.mutated == ("out",) and drawn.kwargs["out"].numel() == 0
    aten.upsample_nearest2d.out(*drawn.args, **drawn.kwargs)


def test_an_overload_without_a_traced_sibling_is_refused_up_front():
    with pytest.raises(InvalidArgument, match="no OpInfo sample's call"):
        traced_arguments("aten._print.default")
