"""Hand-written calls (`strategies/curated_calls.py`): the rules each builder keeps, checked on CPU's kernels."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.coverage.generated import generated_overloads
from torchcts.strategies.overloads import resolve
from torchcts.strategies.curated_calls import CURATED, curated, curated_arguments

aten = torch.ops.aten
FEW = settings(max_examples=3, database=None, deadline=None, derandomize=True,
               suppress_health_check=list(HealthCheck))


def test_every_curated_overload_and_its_donor_exist_and_are_generated_targets():
    found = generated_overloads()
    for name, (_, donor) in CURATED.items():
        assert resolve(name) is not None and resolve(donor) is not None, name
        stem = [n.split(".")[1].removesuffix("_functional").rstrip("_") for n in (donor, name)]
        assert stem[0] == stem[1], name  # the same family
        assert found.get(name) == "generated", (name, found.get(name))


@pytest.mark.parametrize("name", sorted(CURATED))
def test_cpu_runs_every_curated_call(name):
    from torchcts.coverage.dispatch_calls import call_overload

    _, packet, overload = name.split(".", 2)

    @FEW
    @given(curated_arguments(name, torch.float32))
    def check(drawn):  # raises if the builder broke a rule CPU's kernel checks
        call_overload(torch.zeros(()), packet, overload, drawn.args, drawn.kwargs, drawn.device_slots, drawn.mutated,
                      drawn.sparse)

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


@FEW
@given(curated_arguments("aten._sparse_softmax.default", torch.float32))
def test_sparse_arguments_are_built_where_the_call_runs_and_results_compare_dense(drawn):
    from torchcts.coverage.dispatch_calls import call_overload

    assert drawn.sparse == ((0, "sparse_coo", None),) and drawn.args[0].layout == torch.strided
    dense, dim = drawn.args[0], drawn.args[1]
    result, written = call_overload(torch.zeros(()), "_sparse_softmax", "default", drawn.args, drawn.kwargs,
                                    drawn.device_slots, drawn.mutated, drawn.sparse)
    assert result[0] == "torch.sparse_coo" and written == []
    expected = torch.sparse.softmax(dense.to_sparse(), dim).to_dense()
    assert torch.allclose(result[1], expected)


@FEW
@given(curated_arguments("aten.crow_indices_copy.out", torch.float32))
def test_an_out_overload_of_a_sparse_argument_sizes_its_out_from_the_sparse_call(drawn):
    assert drawn.sparse[0][1] in ("sparse_csr", "sparse_bsr") and drawn.kwargs["out"].dtype == torch.int64
    layout, blocksize = getattr(torch, drawn.sparse[0][1]), drawn.sparse[0][2]
    compressed = drawn.args[0].to_sparse(layout=layout, blocksize=blocksize)
    assert torch.equal(aten.crow_indices_copy.out(compressed, out=drawn.kwargs["out"]), compressed.crow_indices())


def test_sparse_scenarios_need_the_sparse_capability(tmp_path):
    from torchcts.manifest import load_manifest
    from torchcts.manifest.templates import render_template
    from torchcts.plan.build import Selection, build_plan
    from torchcts.strategies.curated_calls import CURATED_NEEDS

    assert CURATED_NEEDS["aten._sparse_softmax.default"] == "sparse" and "aten._stack.default" not in CURATED_NEEDS
    assert CURATED_NEEDS["aten.to_padded_tensor.default"] == "nested"
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu") + '\nmanifest["capabilities"]["sparse"] = False\n')
    plan = build_plan(load_manifest(path)[0], Selection(properties=("dispatch",)), ops=())
    reasons = {a.item.op: (a.outcome.value, a.reason) for a in plan.accounting}
    assert reasons["private_sparse_softmax_default"] == (
        "capability_not_declared", "dispatch's private_sparse_softmax_default needs the sparse capability")
    assert "private_stack_default" in {item.op for item in plan.items}


@FEW
@given(curated_arguments("aten.to_padded_tensor.default", torch.float32))
def test_nested_arguments_travel_as_components_and_results_compare_padded(drawn):
    from torchcts.coverage.dispatch_calls import call_overload

    assert drawn.sparse == ((0, "nested", None),) and isinstance(drawn.args[0], list)
    components, padding = drawn.args[0], drawn.args[1]
    result, _ = call_overload(torch.zeros(()), "to_padded_tensor", "default", drawn.args, drawn.kwargs,
                              drawn.device_slots, drawn.mutated, drawn.sparse)
    rows = max(c.shape[0] for c in components)
    for i, component in enumerate(components):
        assert torch.equal(result[i, :component.shape[0]], component)
        assert bool((result[i, component.shape[0]:rows] == padding).all())


def test_a_case_naming_another_layout_is_refused_not_looked_up():
    """A corpus case is data from another team: its layout names only the five sparse layouts or "nested"."""
    from torchcts.coverage.dispatch_calls import call_overload

    with pytest.raises(ValueError, match="layout 'save' is not a sparse layout"):
        call_overload(torch.zeros(()), "_values", "default", [torch.ones(2, 2)], {}, [], [], [[0, "save", None]])


@FEW
@given(st.data())
def test_quantized_tensors_travel_as_dequantized_values_and_their_quantizer(data):
    """A quantized argument is dequantized values plus parameters; quantizing them again where the call runs
    gives the very integers back (per tensor and per channel)."""
    from torchcts.coverage.dispatch_calls import call_overload

    drawn = data.draw(curated_arguments("aten.int_repr.default", torch.float32))
    ((where, layout, parameters),) = drawn.sparse
    assert (where, layout) == (0, "quantized") and drawn.args[0].dtype == torch.float32
    assert parameters[0] in ("per_tensor_affine", "per_channel_affine")
    integers, _ = call_overload(torch.zeros(()), "int_repr", "default", drawn.args, drawn.kwargs, drawn.device_slots,
                                drawn.mutated, drawn.sparse)
    qdtype = getattr(torch, parameters[2] if parameters[0] == "per_channel_affine" else parameters[3])
    rebuilt = (torch.quantize_per_tensor(drawn.args[0], parameters[1], parameters[2], qdtype)
               if parameters[0] == "per_tensor_affine" else
               torch.quantize_per_channel(drawn.args[0], torch.tensor(parameters[3], dtype=torch.float64),
                                          torch.tensor(parameters[4]), parameters[1], qdtype))
    assert torch.equal(integers, rebuilt.int_repr())
    assert torch.equal(rebuilt.dequantize(), drawn.args[0])  # the case's values are exactly on the grid


@FEW
@given(curated_arguments("aten.quantize_per_tensor.out", torch.float32))
def test_a_quantized_out_tensor_is_made_on_the_device_and_results_compare_as_integers_and_values(drawn):
    from torchcts.coverage.dispatch_calls import call_overload

    assert drawn.mutated == ("out",) and drawn.kwargs["out"].dtype == torch.float32
    assert not drawn.kwargs["out"].any()  # holds no result value: a kernel that writes nothing is caught
    assert [layout for where, layout, _ in drawn.sparse] == ["quantized"]
    result, (written,) = call_overload(torch.zeros(()), "quantize_per_tensor", "out", drawn.args, drawn.kwargs,
                                       drawn.device_slots, drawn.mutated, drawn.sparse)
    self, scale, zero_point, qdtype = drawn.args[:4]
    expected = torch.quantize_per_tensor(self, scale, zero_point, qdtype)
    assert result is None and written[0] == "per_tensor_affine"
    assert torch.equal(written[1], expected.int_repr()) and torch.equal(written[2], expected.dequantize())


@FEW
@given(curated_arguments("aten._sparse_sum.dim_out", torch.float32))
def test_a_sparse_out_tensor_is_made_on_the_device_from_zeros(drawn):
    from torchcts.coverage.dispatch_calls import call_overload

    layouts = {where: layout for where, layout, _ in drawn.sparse}
    assert layouts == {0: "sparse_coo", "out": "sparse_coo"} and not drawn.kwargs["out"].any()
    _, (written,) = call_overload(torch.zeros(()), "_sparse_sum", "dim_out", drawn.args, drawn.kwargs,
                                  drawn.device_slots, drawn.mutated, drawn.sparse)
    assert written[0] == "torch.sparse_coo"
    assert torch.allclose(written[1], drawn.args[0].sum(drawn.args[1]))


@pytest.mark.parametrize("parameters, message", [
    (["per_tensor_affine", 0.1, 0, "float32"], "not per_tensor_affine or per_channel_affine"),
    (["per_tensor_affine", 0.1, 0], "not per_tensor_affine or per_channel_affine"),
    (["per_channel_affine", 0, "qint8", [0.1]], "not per_tensor_affine or per_channel_affine"),
    (["__import__('os')", 0.1, 0, "quint8"], "not per_tensor_affine or per_channel_affine"),
    ("per_tensor_affine", "are not quantizer parameters"),
    (None, "are not quantizer parameters")])
def test_a_case_with_malformed_quantizer_parameters_is_refused(parameters, message):
    """Corpus cases are untrusted: quantizer parameters name only known schemes and quantized dtypes."""
    from torchcts.coverage.dispatch_calls import call_overload

    with pytest.raises(ValueError, match=message):
        call_overload(torch.zeros(()), "int_repr", "default", [torch.ones(2)], {}, [], [], [[0, "quantized", parameters]])
    with pytest.raises(ValueError, match="one parameter list per tensor"):
        call_overload(torch.zeros(()), "dequantize", "tensors", [[torch.ones(2)]], {}, [], [],
                      [[0, "quantized_list", [["per_tensor_affine", 0.1, 0, "quint8"]] * 2]])


def test_quantized_scenarios_need_native_quantization(tmp_path):
    from torchcts.manifest import load_manifest
    from torchcts.manifest.templates import render_template
    from torchcts.plan.build import Selection, build_plan
    from torchcts.strategies.curated_calls import CURATED_NEEDS

    assert CURATED_NEEDS["aten.quantize_per_tensor.default"] == "native_quantization"
    assert CURATED_NEEDS["aten._sparse_sum.dim_out"] == "sparse"
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu")
                    + '\nmanifest["capabilities"]["native_quantization"] = False\n')
    plan = build_plan(load_manifest(path)[0], Selection(properties=("dispatch",)), ops=())
    reasons = {a.item.op: (a.outcome.value, a.reason) for a in plan.accounting}
    assert reasons["int_repr_default"] == (
        "capability_not_declared", "dispatch's int_repr_default needs the native_quantization capability")
    assert "private_sparse_sum_dim_out" in {item.op for item in plan.items}
