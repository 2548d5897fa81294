"""Hand-written calls for overloads whose arguments neither a schema draw nor an OpInfo sample supplies.

A schema says `Tensor[] exp_avg_sqs`; `_fused_adam_` also wants as many tensors as `self`, shaped
alike, non-negative. A CPU kernel that trusts such rules reads out of bounds or aborts on a drawn
call (`generated.UNCHECKED_PACKETS`), and no OpInfo calls these overloads, so no traced call can
stand in either. Each builder here knows one family's rules and draws a call that keeps them: sizes,
hyperparameters and flags drawn (shrinking toward the smallest), values from a drawn seed. The call
is for a donor overload (the functional one where the target writes `out=` tensors, so that
`traced_calls.rebind` makes them from its results) and is rebound by name to the target.

Only the overloads listed in `CURATED` get curated calls: each was unknown to the audit before, so
no other overload's cases change. docs/coverage/generated.md lists them.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.strategies import curated_builders as b
from torchcts.strategies import curated_nn as nn
from torchcts.strategies.curated_builders import Builder, family_adder, functional, itself
from torchcts.strategies.curated_layouts import SPARSE_KEY, nested_table, sparse_table
from torchcts.strategies.curated_quantized import quantized_table
from torchcts.strategies.overloads import resolve
from torchcts.strategies.schema_args import Drawn
from torchcts.strategies.traced_calls import rebind


def strided_table() -> dict[str, tuple[Builder, str]]:
    """target overload -> (its builder, the overload the built call is for), for calls of dense tensors."""
    table: dict[str, tuple[Builder, str]] = {}
    family = family_adder(table)

    for name, builder in (("adam", b.adam), ("adamw", b.adam), ("sgd", b.sgd), ("adagrad", b.adagrad)):
        family(builder, itself, *(f"aten._fused_{name}{suffix}" for suffix in (
            ".default", ".out", "_.default", ".tensor_lr", ".tensor_lr_out", "_.tensor_lr")))
    family(b.amp_update_scale, itself, "aten._amp_update_scale_.default", "aten._amp_update_scale.default")
    family(b.amp_update_scale, functional, "aten._amp_update_scale.out")
    family(b.arange_call, itself, "aten.range.default", "aten.range.step", "aten.range.out", "aten.range.out_")
    family(b.reshape_alias, itself, "aten._reshape_alias.default", "aten._reshape_alias_copy.default")
    family(b.reshape_alias, functional, "aten._reshape_alias_copy.out")
    family(b.stack, functional, "aten._stack.default", "aten._stack.out")
    family(b.cumulative_helper, itself, "aten._cummax_helper.default", "aten._cummin_helper.default")
    family(b.logcumsumexp, functional, "aten._logcumsumexp.default", "aten._logcumsumexp.out")
    family(b.coo_to_csr, functional, "aten._convert_indices_from_coo_to_csr.default",
           "aten._convert_indices_from_coo_to_csr.out")
    family(b.csr_to_coo, functional, "aten._convert_indices_from_csr_to_coo.default",
           "aten._convert_indices_from_csr_to_coo.out")
    family(b.new_zeros_like_features, functional, "aten._new_zeros_with_same_feature_meta.default",
           "aten._new_zeros_with_same_feature_meta.out")
    family(b.foreach_copy, itself, "aten._foreach_copy.default", "aten._foreach_copy.out")
    family(nn.weight_norm, functional, "aten._weight_norm_interface.default", "aten._weight_norm_interface.out",
           "aten._weight_norm_interface_backward.default", "aten._weight_norm_interface_backward.out")
    family(nn.batch_norm_no_update, functional, "aten._batch_norm_no_update.default", "aten._batch_norm_no_update.out")
    family(nn.transform_bias_rescale_qkv, functional, "aten._transform_bias_rescale_qkv.default",
           "aten._transform_bias_rescale_qkv.out")
    family(nn.glu, functional, "aten.glu_jvp.default", "aten.glu_jvp.out", "aten.glu_backward_jvp.default",
           "aten.glu_backward_jvp.out")
    for packet, builder in (("slow_conv_dilated2d", nn.convolution(2)), ("slow_conv_dilated3d", nn.convolution(3)),
                            ("slow_conv_transpose2d", nn.convolution(2, True)),
                            ("slow_conv_transpose3d", nn.convolution(3, True)),
                            ("_convolution", nn.convolution(2)), ("conv_tbc", nn.conv_tbc)):
        family(builder, functional, f"aten.{packet}.default", f"aten.{packet}.out")
    for packet, builder in (("_slow_conv2d_forward", nn.convolution(2)), ("slow_conv3d_forward", nn.convolution(3))):
        family(builder, functional, f"aten.{packet}.default", f"aten.{packet}.output")
    backward = nn.convolution(2, backward=True)
    table["aten._slow_conv2d_backward.grad_input"] = (backward, "aten._slow_conv2d_backward.output_mask")
    table["aten._slow_conv2d_backward.output_mask_out"] = (backward, "aten._slow_conv2d_backward.output_mask")
    family(b.affine_grid, functional, "aten.affine_grid_generator.default", "aten.affine_grid_generator.out")
    family(b.euclidean_dist, functional, "aten._euclidean_dist.default", "aten._euclidean_dist.out")
    family(b.int_mm, functional, "aten._int_mm.default", "aten._int_mm.out")
    family(b.addmm_activation, functional, "aten._addmm_activation.default", "aten._addmm_activation.out")
    family(b.cholesky_solve_helper, functional, "aten._cholesky_solve_helper.out")
    family(b.native_dropout, functional, "aten.native_dropout.out")
    family(b.shift, functional, "aten.__lshift__.Scalar_out")
    for packet in ("_foreach_addcmul", "_foreach_addcdiv"):
        family(b.foreach_pointwise, itself, f"aten.{packet}.Tensor_out", f"aten.{packet}_.Tensor")
    family(b.foreach_mm, itself, "aten._foreach_mm.default")
    family(b.embedding_renorm, functional, "aten.embedding_renorm.out")
    family(nn.batch_norm_backward, functional, "aten.native_batch_norm_backward.out")
    family(b.moving_average_observer, itself, "aten._fused_moving_avg_obs_fq_helper.default",
           "aten._fused_moving_avg_obs_fq_helper_functional.default")
    # its out= tensors sized by the functional form's results (the in-place default writes no out=)
    table["aten._fused_moving_avg_obs_fq_helper.out"] = (b.moving_average_observer,
                                                          "aten._fused_moving_avg_obs_fq_helper_functional.default")
    family(b.pack_padded, functional, "aten._pack_padded_sequence.default", "aten._pack_padded_sequence.out")
    family(b.assert_message, itself, "aten._assert_async.msg", "aten._functional_assert_async.msg")
    family(b.weight_int8pack_mm, itself, "aten._weight_int8pack_mm.default")
    family(b.fake_quantize_as("numbers"), functional, "aten.fake_quantize_per_tensor_affine_cachemask.out")
    family(b.fake_quantize_as("channels"), functional, "aten.fake_quantize_per_channel_affine_cachemask.default",
           "aten.fake_quantize_per_channel_affine_cachemask.out")
    family(b.fake_quantize_as("tensor"), functional, "aten._fake_quantize_learnable_per_tensor_affine.default",
           "aten._fake_quantize_learnable_per_tensor_affine.out",
           "aten._fake_quantize_learnable_per_tensor_affine_backward.default",
           "aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.out")
    family(b.fake_quantize_as("channels_float"), functional, "aten._fake_quantize_learnable_per_channel_affine.default",
           "aten._fake_quantize_learnable_per_channel_affine.out",
           "aten._fake_quantize_learnable_per_channel_affine_backward.default")
    family(b.unsafe_index, itself, "aten._unsafe_index.Tensor", "aten._unsafe_index_put.default")
    family(b.unsafe_view, functional, "aten._unsafe_view.out")
    family(b.unsafe_split, functional, "aten.unsafe_split_with_sizes.default", "aten.unsafe_split_with_sizes.out")
    family(b.unsafe_split, itself, "aten.unsafe_split.Tensor_out")
    family(b.compressed_indices, itself, "aten._validate_compressed_sparse_indices.default",
           "aten.sparse_compressed_tensor.comp_plain_value")
    family(nn.embedding_bag_backward, functional, "aten._embedding_bag_dense_backward.default",
           "aten._embedding_bag_dense_backward.out")
    family(nn.multi_head_attention, functional, "aten._native_multi_head_attention.default",
           "aten._native_multi_head_attention.out")
    return table


CURATED = strided_table() | sparse_table() | nested_table() | quantized_table()
# the capability an overload's curated calls need besides inference: sparse, nested or quantized tensors
CURATED_NEEDS = ({name: "sparse" for name in sparse_table()} | {name: "nested" for name in nested_table()}
                 | {name: "native_quantization" for name in quantized_table()})


def curated(name: str) -> bool:
    """Whether overload `name` ("aten.x.y") gets hand-written calls."""
    return name in CURATED


@functools.lru_cache(maxsize=None)
def _donor(name: str) -> Any:
    return resolve(name)


def _location(target: Any, drawn: Drawn, name: str) -> int | str | None:
    """Where argument `name` went in a rebound call: by name, or its schema position (rebinding passes a prefix of
    the schema's arguments by position)."""
    if name in drawn.kwargs:
        return name
    index = next((i for i, arg in enumerate(target._schema.arguments) if arg.name == name), None)
    return index if index is not None and index < len(drawn.args) else None


def _with_layouts(drawn: Drawn, layouts: dict[str, tuple[str, Any]], target: Any) -> Drawn:
    sparse = tuple((where, layout, tuple(size) if size else None) for name, (layout, size) in sorted(layouts.items())
                   if (where := _location(target, drawn, name)) is not None)
    return Drawn(drawn.args, drawn.kwargs, drawn.device_slots, drawn.mutated, sparse)


def _densified(drawn: Drawn, dense: dict[str, Any], layouts: dict[str, Any], target: Any) -> Drawn:
    """`drawn` with the sparse arguments (used to run the functional donor) back to their dense forms."""
    args, kwargs = list(drawn.args), dict(drawn.kwargs)
    for name in layouts:
        where = _location(target, drawn, name)
        if isinstance(where, int):
            args[where] = dense[name]
        elif where is not None:
            kwargs[where] = dense[name]
    return Drawn(tuple(args), kwargs, drawn.device_slots, drawn.mutated)


def quantizer_parameters(t: torch.Tensor) -> list[Any]:
    """The parameters `dispatch_calls.call_overload` quantizes a tensor's dequantized values with to get `t` back."""
    dtype = str(t.dtype).removeprefix("torch.")
    if t.qscheme() == torch.per_tensor_affine:
        return ["per_tensor_affine", t.q_scale(), t.q_zero_point(), dtype]
    if t.qscheme() == torch.per_channel_affine:
        return ["per_channel_affine", t.q_per_channel_axis(), dtype, t.q_per_channel_scales().tolist(),
                t.q_per_channel_zero_points().tolist()]
    raise InvalidArgument(f"no quantizer parameters for a {t.qscheme()} tensor")


def _encoded_tensor(value: Any) -> tuple[Any, str, Any] | None:
    """(dense form, layout, parameters) of a quantized or sparse tensor (or a list of quantized ones); None for
    anything a case holds as it is."""
    if isinstance(value, torch.Tensor) and value.is_quantized:
        return value.dequantize(), "quantized", quantizer_parameters(value)
    if isinstance(value, torch.Tensor) and value.layout in (torch.sparse_bsr, torch.sparse_bsc):
        return value.to_dense(), str(value.layout).removeprefix("torch."), tuple(value.values().shape[1:3])
    if isinstance(value, torch.Tensor) and value.layout != torch.strided:
        return value.to_dense(), str(value.layout).removeprefix("torch."), None
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) and v.is_quantized
                                                           for v in value):
        return [v.dequantize() for v in value], "quantized_list", [quantizer_parameters(v) for v in value]
    return None


def _encoded(drawn: Drawn) -> Drawn:
    """`drawn` with quantized and sparse tensors left in it (out= tensors made from such results, quantized
    arguments a builder made) as dense forms the call turns back where it runs: a case holds dense tensors."""
    args, kwargs, found = list(drawn.args), dict(drawn.kwargs), []
    for holder, keys in ((args, range(len(args))), (kwargs, list(kwargs))):
        for key in keys:
            encoded = _encoded_tensor(holder[key])
            if encoded is not None:
                holder[key] = encoded[0]
                found.append((key, encoded[1], encoded[2]))
    if not found:
        return drawn
    return Drawn(tuple(args), kwargs, drawn.device_slots, drawn.mutated, drawn.sparse + tuple(found))


def _out_for(result: torch.Tensor) -> torch.Tensor:
    """An out= tensor for a donor's `result`: empty for a strided result, else one of its layout and quantizer
    (sparse or quantized out= tensors are not resized from nothing), holding no result value."""
    if result.is_quantized:
        zeros = torch.zeros(result.shape)
        if result.qscheme() == torch.per_channel_affine:
            return torch.quantize_per_channel(zeros, result.q_per_channel_scales(), result.q_per_channel_zero_points(),
                                              result.q_per_channel_axis(), result.dtype)
        return torch.quantize_per_tensor(zeros, result.q_scale(), result.q_zero_point(), result.dtype)
    if result.layout == torch.sparse_coo:
        return torch.zeros(result.shape, dtype=result.dtype).to_sparse()
    if result.layout != torch.strided:  # compressed: the result's pattern (the kernels copy into equal nnz)
        blocksize = tuple(result.values().shape[1:3]) if result.layout in (torch.sparse_bsr, torch.sparse_bsc) else None
        pattern = (result.to_dense() != 0).to(result.dtype)
        return pattern.to_sparse(layout=result.layout, blocksize=blocksize)
    return torch.empty(0, dtype=result.dtype)


def _materialized(value: Any, layout: str, blocksize: Any) -> torch.Tensor:
    """The sparse or nested tensor a dense argument (or list of components) stands for, as the call makes it."""
    if layout == "nested":
        return torch.nested.nested_tensor(list(value))
    return value.to_sparse(layout=getattr(torch, layout), blocksize=blocksize)


def curated_arguments(name: str, dtype: torch.dtype) -> st.SearchStrategy[Drawn]:
    """Calls of overload `name` built by its `CURATED` builder for tensors of `dtype` and rebound to it;
    InvalidArgument for an overload with no builder, or one this torch lacks."""
    if name not in CURATED:
        raise InvalidArgument(f"{name}: no curated call builder")
    builder, donor_name = CURATED[name]
    target, donor = _donor(name), _donor(donor_name)
    if target is None or donor is None:
        raise InvalidArgument(f"{name}: this torch lacks {name if target is None else donor_name}")
    overload = name.split(".", 2)[2]
    names = {arg.name for arg in donor._schema.arguments} | {arg.name for arg in target._schema.arguments}
    results_needed = donor is not target and any(a.alias_info is not None and a.alias_info.is_write and a.kwarg_only
                                                   for a in target._schema.arguments)

    @st.composite
    def call(draw) -> Drawn:
        built = builder(draw, dtype, overload)
        layouts = built.pop(SPARSE_KEY, {})
        built = {key: value for key, value in built.items() if key in names}
        if layouts and results_needed:  # the functional call that sizes out= tensors takes the sparse arguments
            built_for_donor = dict(built) | {key: _materialized(built[key], layout, size)
                                             for key, (layout, size) in layouts.items() if key in built}
            drawn = rebind(target, donor, (), built_for_donor, _out_for)
            assume(drawn is not None)
            drawn = _densified(drawn, built, layouts, target)
        else:
            drawn = rebind(target, donor, (), built, _out_for)
        assume(drawn is not None)  # CPU's functional kernel rejected the call, so no out= tensor could be made
        return _encoded(_with_layouts(drawn, layouts, target) if layouts else drawn)

    return call()
