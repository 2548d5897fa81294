"""Builders of hand-written calls with sparse or nested arguments (`curated_calls.py` says how they are used).

A sparse argument travels as its dense form and a layout (`SPARSE_KEY`), a nested one as the list
of its components and the layout "nested": the call builds it where it runs, on the device
(`Drawn.sparse`, `dispatch_calls.call_overload`), so a case holds only dense tensors and the
device's own conversion is part of what is tested. About half of each sparse argument's dense
form is zero. Sparse and nested results compare as their dense (padded) forms.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from hypothesis import strategies as st

from torchcts.strategies.curated_builders import (Builder, draw_shape, draw_size, draw_values, family_adder, functional,
                                                 itself)

SPARSE_KEY = "__sparse__"  # a builder's entry: argument name -> (layout name, blocksize or None)


def _sparse_source(draw: Any, shape: tuple[int, ...], dtype: torch.dtype, label: str,
                   mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(a dense tensor with about half its elements zero, where they are not): the values a sparse argument holds."""
    if mask is None:
        seed = draw(st.integers(0, 2**16 - 1), label=f"pattern of {label}")
        mask = torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < 0.5
    value = draw_values(draw, shape, dtype, label, low=0.5) * torch.where(
        draw_values(draw, shape, torch.bool, f"signs of {label}"), 1, -1).to(dtype)
    return value * mask.to(dtype), mask


def _sparse_self(*layouts: str, extra: Callable[[Any, torch.Tensor], dict] | None = None) -> Builder:
    """`self` a sparse matrix of one of `layouts` (blocked ones with a drawn blocksize that divides its shape);
    `extra(draw, dense self)` adds the call's other arguments."""
    def build(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
        layout = draw(st.sampled_from(layouts), label="layout")
        blocksize = None
        if layout in ("sparse_bsr", "sparse_bsc"):
            blocksize = (draw_size(draw, "block rows", 1, 2), draw_size(draw, "block columns", 1, 2))
            shape = (blocksize[0] * draw_size(draw, "row blocks", 1, 3), blocksize[1] * draw_size(draw, "column blocks", 1, 3))
        else:
            shape = draw_shape(draw, 2, "self")
        dense, _ = _sparse_source(draw, shape, dtype, "self")
        call = {"self": dense, SPARSE_KEY: {"self": (layout, blocksize)}}
        return call | (extra(draw, dense) if extra else {})
    return build


def _sparse_softmax_backward(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`output` the softmax of `self`, `grad_output` on the same pattern: all three COO, as the kernel wants."""
    shape = draw_shape(draw, 2, "self")
    dense, mask = _sparse_source(draw, shape, dtype, "self")
    dim = draw(st.integers(0, 1), label="dim")
    forward = torch.ops.aten._sparse_log_softmax if "log" in target else torch.ops.aten._sparse_softmax
    output = forward.default(dense.to_sparse(), dim, False).to_dense()
    grad, _ = _sparse_source(draw, shape, dtype, "grad_output", mask)
    coo = ("sparse_coo", None)
    return {"grad_output": grad, "output": output, "dim": dim, "self": dense,
            SPARSE_KEY: {"grad_output": coo, "output": coo, "self": coo}}


def _sparse_pair(other_sparse: bool, same_shape: bool = False) -> Builder:
    """`self` COO [m, k] with a second matrix: `other`/`src`/`the_template`/`mask`/`mat2` [k, n] (or [m, k] with
    `same_shape`), COO too with `other_sparse`."""
    def build(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
        rows, inner, cols = draw_shape(draw, 3, "self, other")
        first, _ = _sparse_source(draw, (rows, inner), dtype, "self")
        shape = (rows, inner) if same_shape else (inner, cols)
        second = _sparse_source(draw, shape, dtype, "other")[0] if other_sparse else draw_values(draw, shape, dtype, "other")
        call = {"self": first, "mat1": first, "accumulate_matches": draw(st.booleans(), label="accumulate_matches")}
        names = ("other", "src", "the_template", "mask", "mat2")
        call |= {name: second for name in names}
        coo = ("sparse_coo", None)
        call[SPARSE_KEY] = {"self": coo, "mat1": coo} | ({name: coo for name in names if name != "mat2"} if
                                                          other_sparse else {})
        return call
    return build


def _grow(draw: Any, dense: torch.Tensor) -> dict[str, Any]:
    return {"size": [n + draw_size(draw, f"grow {i}", 0, 2) for i, n in enumerate(dense.shape)], "sparse_dim": 2,
            "dense_dim": 0}


def _broadcast(draw: Any, dense: torch.Tensor) -> dict[str, Any]:
    return {"size": [draw_size(draw, "new leading size", 1, 3), *dense.shape]}


def _dense_source(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`self` a dense matrix about half zero, for the conversions to sparse layouts: a drawn `sparse_dim`, and a
    `blocksize` dividing its shape (for the blocked ones)."""
    blocksize = [draw_size(draw, "block rows", 1, 2), draw_size(draw, "block columns", 1, 2)]
    shape = (blocksize[0] * draw_size(draw, "row blocks", 1, 3), blocksize[1] * draw_size(draw, "column blocks", 1, 3))
    return {"self": _sparse_source(draw, shape, dtype, "self")[0], "blocksize": blocksize,
            "sparse_dim": draw(st.integers(1, 2), label="sparse_dim"),  # `_to_sparse`'s layout: a blocked one
            "layout": draw(st.sampled_from([torch.sparse_bsr, torch.sparse_bsc]), label="layout")}


def _dense_and_mask(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`self` dense, `mask` a COO matrix of its shape (`sparse_mask`)."""
    shape = draw_shape(draw, 2, "self")
    mask, _ = _sparse_source(draw, shape, dtype, "mask")
    return {"self": draw_values(draw, shape, dtype, "self"), "mask": mask, SPARSE_KEY: {"mask": ("sparse_coo", None)}}


def _sum_dim(draw: Any, dense: torch.Tensor) -> dict[str, Any]:
    return {"dim": [draw(st.integers(0, 1), label="dim")]}


def _sum_backward(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`grad` a COO tensor shaped like `_sparse_sum(self, dim)`, `self` COO."""
    shape = draw_shape(draw, 2, "self")
    dense, _ = _sparse_source(draw, shape, dtype, "self")
    dim = draw(st.integers(0, 1), label="dim")
    grad, _ = _sparse_source(draw, shape[:dim] + shape[dim + 1:], dtype, "grad")
    coo = ("sparse_coo", None)
    return {"grad": grad, "self": dense, "dim": [dim], SPARSE_KEY: {"grad": coo, "self": coo}}


def _sspaddmm(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`self` COO [m, n] + `mat1` COO [m, k] @ `mat2` dense [k, n], scaled by drawn beta and alpha."""
    rows, inner, cols = draw_shape(draw, 3, "self, mat1, mat2")
    coo = ("sparse_coo", None)
    return {"self": _sparse_source(draw, (rows, cols), dtype, "self")[0],
            "mat1": _sparse_source(draw, (rows, inner), dtype, "mat1")[0],
            "mat2": draw_values(draw, (inner, cols), dtype, "mat2"),
            "beta": draw(st.sampled_from([1, 0.5]), label="beta"), "alpha": draw(st.sampled_from([1, 2]), label="alpha"),
            SPARSE_KEY: {"self": coo, "mat1": coo}}


def _coo_parts(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """A COO matrix's parts (indices, values, size) and an empty one's (`sparse_dim`, `dense_dim`, `size`)."""
    shape = draw_shape(draw, 2, "size")
    coo = _sparse_source(draw, shape, dtype, "values")[0].to_sparse()
    return {"sparse_dim": 2, "dense_dim": 0, "size": list(shape), "indices": coo._indices(), "values": coo._values(),
            "dtype": dtype, "layout": torch.sparse_coo}


def _spdiags(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`diagonals` [k, n] placed at `k` distinct `offsets` of a [m, n] matrix."""
    rows, cols = draw_shape(draw, 2, "shape")
    offsets = draw(st.lists(st.integers(-rows + 1, cols - 1), min_size=1, max_size=3, unique=True), label="offsets")
    return {"diagonals": draw_values(draw, (len(offsets), cols), dtype, "diagonals"),
            "offsets": torch.tensor(offsets, dtype=torch.int64), "shape": [rows, cols]}


def _nested_components(draw: Any, dtype: torch.dtype, label: str) -> list[torch.Tensor]:
    """2-D components of one nested tensor: their own first sizes, a shared last size."""
    width = draw_size(draw, f"{label} width")
    return [draw_values(draw, (draw_size(draw, f"{label}[{i}] rows", 1, 3), width), dtype, f"{label}[{i}]")
            for i in range(draw_size(draw, f"{label} components", 1, 3))]


def _nested_self(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`self` (and `nt_example`) a nested tensor; `padded` a dense tensor shaped like its padded form."""
    components = _nested_components(draw, dtype, "self")
    rows = max(c.shape[0] for c in components)
    padded = draw_values(draw, (len(components), rows, components[0].shape[1]), dtype, "padded")
    return {"self": components, "nt_example": components, "padded": padded,
            "padding": draw(st.sampled_from([0.0, -1.0]), label="padding"),
            SPARSE_KEY: {"self": ("nested", None), "nt_example": ("nested", None)}}


def _nested_mask(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """A padded batch [B, T, D] and a left-aligned mask of its valid rows (plain tensors: no nested argument)."""
    batch, tokens, width = draw_shape(draw, 3, "t")
    lengths = [draw_size(draw, f"length {i}", 1, tokens) for i in range(batch)]
    mask = torch.arange(tokens)[None, :] < torch.tensor(lengths)[:, None]
    sizes = torch.tensor([[n, width] for n in lengths])
    return {"t": draw_values(draw, (batch, tokens, width), dtype, "t"), "mask": mask, "nested_size": sizes}


def _nested_from_padded(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """A padded batch [B, T, D] and the sizes [B, 2] of the components to cut from it (rows <= T, all D wide)."""
    batch, tokens, width = draw_shape(draw, 3, "padded")
    sizes = torch.tensor([[draw_size(draw, f"rows {i}", 1, tokens), width] for i in range(batch)])
    return {"padded": draw_values(draw, (batch, tokens, width), dtype, "padded"), "cpu_nested_shape_example": sizes}


def _nested_buffer(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """A flat buffer and the sizes, contiguous strides and offsets of components that tile it (the view trusts them)."""
    width = draw_size(draw, "width")
    rows = [draw_size(draw, f"rows {i}", 1, 3) for i in range(draw_size(draw, "components", 1, 3))]
    offsets = torch.tensor([0, *rows[:-1]]).cumsum(0) * width
    return {"self": draw_values(draw, (sum(rows) * width,), dtype, "self"),
            "nested_size": torch.tensor([[r, width] for r in rows]),
            "nested_strides": torch.tensor([[width, 1]] * len(rows)), "offsets": offsets}


def _nested_select_backward(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`self` nested, the gradient of its component `index` (selected along dim 0)."""
    components = _nested_components(draw, dtype, "self")
    index = draw(st.integers(0, len(components) - 1), label="index")
    return {"grad_output": draw_values(draw, tuple(components[index].shape), dtype, "grad_output"),
            "self": components, "dim": 0, "index": index, SPARSE_KEY: {"self": ("nested", None)}}


def _nested_sum_backward(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`self` nested, `grad` nested: the gradient of its sum over the last dimension (kept or not)."""
    components = _nested_components(draw, dtype, "self")
    keepdim = draw(st.booleans(), label="keepdim")
    grad = [draw_values(draw, (c.shape[0], 1) if keepdim else (c.shape[0],), dtype, f"grad[{i}]")
            for i, c in enumerate(components)]
    return {"grad": grad, "self": components, "dim": [-1], "keepdim": keepdim,
            SPARSE_KEY: {"grad": ("nested", None), "self": ("nested", None)}}


def sparse_table() -> dict[str, tuple[Builder, str]]:
    """target overload -> (its builder, the overload the built call is for), for calls with sparse arguments."""
    table: dict[str, tuple[Builder, str]] = {}
    family = family_adder(table)
    coo, compressed_rows, compressed_columns = (_sparse_self("sparse_coo"), _sparse_self("sparse_csr", "sparse_bsr"),
                                                  _sparse_self("sparse_csc", "sparse_bsc"))
    # not `indices_copy`, `values_copy` and the like: no kernel takes a sparse tensor (SparseCPU has none), and a
    # strided one has no indices; torch.export graphs call them, eager never does
    family(coo, functional, "aten._values.default", "aten._dimI.default", "aten._dimV.default")
    family(compressed_rows, functional, "aten.crow_indices_copy.default", "aten.crow_indices_copy.out",
           "aten.col_indices_copy.default", "aten.col_indices_copy.out")
    family(compressed_columns, functional, "aten.ccol_indices_copy.default", "aten.ccol_indices_copy.out",
           "aten.row_indices_copy.default", "aten.row_indices_copy.out")
    family(_sparse_self("sparse_coo", "sparse_csr"), functional, "aten._to_dense.out")
    family(_sparse_self("sparse_coo", extra=lambda draw, _: {"coalesced": draw(st.booleans(), label="coalesced")}),
           itself, "aten._coalesced.default", "aten._coalesced_.default")
    family(_sparse_self("sparse_coo", extra=lambda draw, _: {"dim": draw(st.integers(0, 1), label="dim"),
                                                             "half_to_float": False}),
           itself, "aten._sparse_softmax.default", "aten._sparse_log_softmax.default")
    family(_sparse_softmax_backward, itself, "aten._sparse_softmax_backward_data.default",
           "aten._sparse_log_softmax_backward_data.default")
    family(_sparse_self("sparse_csr", extra=lambda draw, _: {"dim": [draw(st.integers(0, 1), label="dim")],
                                                             "keepdim": True}),
           itself, "aten._sparse_csr_sum.dim_dtype", "aten._sparse_csr_prod.dim_dtype")
    family(_sparse_self("sparse_coo", extra=lambda draw, _: {"p": draw(st.sampled_from([1, 2]), label="p"),
                                                             "dim": [0, 1],  # only full reductions of sparse
                                                             "keepdim": False, "dtype": None}),
           functional, "aten.native_norm.default", "aten.native_norm.out", "aten.native_norm.ScalarOpt_dim_dtype",
           "aten.native_norm.ScalarOpt_dim_dtype_out")
    family(_sparse_self("sparse_coo", extra=_grow), itself, "aten.sparse_resize.default", "aten.sparse_resize_.default",
           "aten.sparse_resize_and_clear.default", "aten.sparse_resize_and_clear_.default")
    family(_sparse_self("sparse_coo", extra=_broadcast), itself, "aten._sparse_broadcast_to.default")
    family(_sparse_pair(other_sparse=True), itself, "aten._sparse_sparse_matmul.default")
    family(_sparse_pair(other_sparse=False), itself, "aten.hspmm.default")
    family(_sparse_pair(other_sparse=True, same_shape=True), itself, "aten._sparse_mask_projection.default",
           "aten.copy_sparse_to_sparse.default", "aten.copy_sparse_to_sparse_.default", "aten.resize_as_sparse.default",
           "aten.resize_as_sparse_.default")
    # out= forms whose results are sparse: the out= tensor is made sparse on the device too (`curated_calls`)
    family(_sparse_self("sparse_coo", extra=lambda draw, _: {"coalesced": draw(st.booleans(), label="coalesced")}),
           functional, "aten._coalesced.out")
    family(_sparse_self("sparse_coo", extra=lambda draw, _: {"dim": draw(st.integers(0, 1), label="dim"),
                                                             "half_to_float": False}),
           functional, "aten._sparse_softmax.out", "aten._sparse_log_softmax.out")
    family(_sparse_softmax_backward, functional, "aten._sparse_softmax_backward_data.out",
           "aten._sparse_log_softmax_backward_data.out")
    family(_sparse_self("sparse_coo", extra=_sum_dim), functional, "aten._sparse_sum.dim_out")
    family(_sum_backward, functional, "aten._sparse_sum_backward.default", "aten._sparse_sum_backward.out")
    family(_sparse_self("sparse_coo", extra=_grow), functional, "aten.sparse_resize.out",
           "aten.sparse_resize_and_clear.out")
    family(_sparse_pair(other_sparse=True), functional, "aten._sparse_sparse_matmul.out")
    family(_sparse_pair(other_sparse=False), functional, "aten.hspmm.out")
    family(_sparse_pair(other_sparse=True, same_shape=True), functional, "aten._sparse_mask_projection.out",
           "aten.copy_sparse_to_sparse.out", "aten.resize_as_sparse.out")
    family(_dense_and_mask, functional, "aten.sparse_mask.out")
    family(_sspaddmm, functional, "aten.sspaddmm.out")
    family(_dense_source, functional, "aten._to_sparse.out", "aten._to_sparse.sparse_dim_out",
           "aten._to_sparse_csr.out", "aten._to_sparse_csc.out", "aten._to_sparse_bsr.out", "aten._to_sparse_bsc.out")
    family(_coo_parts, functional, "aten._sparse_coo_tensor_with_dims.out",
           "aten._sparse_coo_tensor_with_dims_and_tensors.out", "aten.sparse_coo_tensor.size_out")
    family(_coo_parts, itself, "aten._sparse_coo_tensor_with_dims.default")
    family(_spdiags, functional, "aten._spdiags.default", "aten._spdiags.out")
    # the copy of `values()` has a kernel for compressed layouts only (none for COO)
    family(_sparse_self("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"), functional, "aten.values_copy.default",
           "aten.values_copy.out")
    family(_sparse_self("sparse_csr", extra=lambda draw, _: {"dim": [draw(st.integers(0, 1), label="dim")],
                                                             "keepdim": True}),
           functional, "aten._sparse_csr_sum.dim_dtype_out", "aten._sparse_csr_prod.dim_dtype_out")
    return table


def nested_table() -> dict[str, tuple[Builder, str]]:
    """target overload -> (its builder, the overload the built call is for), for overloads with nested-tensor
    kernels only (their arguments nested tensors, or plain tensors such a kernel turns into one)."""
    table: dict[str, tuple[Builder, str]] = {}
    family = family_adder(table)
    family(_nested_self, itself, "aten._nested_tensor_size.default", "aten._nested_tensor_strides.default",
           "aten._nested_tensor_storage_offsets.default", "aten.to_padded_tensor.default",
           "aten._nested_from_padded_and_nested_example.default")
    family(_nested_mask, itself, "aten._nested_tensor_from_mask_left_aligned.default",
           "aten._nested_compute_contiguous_strides_offsets.default", "aten._nested_tensor_from_mask.default")
    family(_nested_from_padded, itself, "aten._nested_from_padded.default")
    family(_nested_buffer, itself, "aten._nested_view_from_buffer.default", "aten._nested_view_from_buffer_copy.default")
    family(_nested_select_backward, itself, "aten._nested_select_backward.default")
    family(_nested_sum_backward, itself, "aten._nested_sum_backward.default")
    return table
