"""Builders of hand-written calls for dense tensors (`curated_calls.py` says why and how they are used).

A builder takes Hypothesis's `draw`, the item's dtype and the target overload's name ("out",
"tensor_lr") and returns the call's arguments by name: sizes, hyperparameters and flags drawn
(shrinking toward the smallest), values from a drawn seed, and the rules its kernel trusts kept.
`strided_table()` says which overloads each builder serves and the overload its call is for.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from hypothesis import strategies as st

Builder = Callable[[Any, torch.dtype, str], dict[str, Any]]  # (draw, item dtype, target overload) -> args by name


def draw_values(draw: Any, shape: tuple[int, ...], dtype: torch.dtype, label: str, low: float | None = None) -> torch.Tensor:
    """A tensor of `shape` from a drawn seed: standard normal for floating dtypes (made >= `low` by abs), small
    integers otherwise."""
    seed = draw(st.integers(0, 2**16 - 1), label=f"seed of {label}")
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point or dtype.is_complex:
        value = torch.randn(shape, generator=generator)
        if low is not None:
            value = value.abs() + low
        return value.to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    return torch.randint(-8 if low is None else int(low), 8, shape, generator=generator).to(dtype)


def draw_size(draw: Any, label: str, low: int = 1, high: int = 4) -> int:
    """A drawn size in [low, high]."""
    return draw(st.integers(low, high), label=label)


def draw_shape(draw: Any, rank: int, label: str, low: int = 1, high: int = 4) -> tuple[int, ...]:
    """A drawn shape of `rank` sizes in [low, high]."""
    return tuple(draw_size(draw, f"{label} size {i}", low, high) for i in range(rank))


# -- optimizers ------------------------------------------------------------------------------------

def _param_lists(draw: Any, dtype: torch.dtype, names: tuple[str, ...], non_negative: tuple[str, ...] = ()) -> dict:
    """Lists of as many tensors as there are parameters, each shaped like its parameter."""
    shapes = [draw_shape(draw, 1, f"parameter {i}", high=5) for i in range(draw_size(draw, "parameters", 1, 3))]
    return {name: [draw_values(draw, s, dtype, f"{name}[{i}]", low=0.0 if name in non_negative else None)
                   for i, s in enumerate(shapes)] for name in names}


def _lr(draw: Any, target: str) -> Any:
    lr = draw(st.sampled_from([1e-3, 0.1]), label="lr")
    return torch.tensor(lr) if target.startswith("tensor_lr") else lr


def _steps(draw: Any, count: int) -> list[torch.Tensor]:
    return [torch.tensor(float(draw(st.integers(1, 10), label=f"step {i}"))) for i in range(count)]


def adam(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    call = _param_lists(draw, dtype, ("self", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"),
                        non_negative=("exp_avg_sqs", "max_exp_avg_sqs"))
    amsgrad = draw(st.booleans(), label="amsgrad")
    if not amsgrad:  # the kernel wants no maxima without amsgrad
        call["max_exp_avg_sqs"] = []
    return call | {"state_steps": _steps(draw, len(call["self"])), "lr": _lr(draw, target), "beta1": 0.9,
                   "beta2": 0.999, "weight_decay": draw(st.sampled_from([0.0, 0.01]), label="weight_decay"),
                   "eps": 1e-8, "amsgrad": amsgrad,
                   "maximize": draw(st.booleans(), label="maximize"),
                   "out": [torch.empty_like(p) for p in call["self"]]}


def sgd(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    call = _param_lists(draw, dtype, ("self", "grads", "momentum_buffer_list"))
    nesterov = draw(st.booleans(), label="nesterov")
    return call | {"weight_decay": draw(st.sampled_from([0.0, 0.01]), label="weight_decay"),
                   "momentum": 0.9, "lr": _lr(draw, target), "dampening": 0.0 if nesterov else 0.1,
                   "nesterov": nesterov, "maximize": draw(st.booleans(), label="maximize"),
                   "is_first_step": draw(st.booleans(), label="is_first_step"),
                   "out": [torch.empty_like(p) for p in call["self"]]}


def adagrad(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    call = _param_lists(draw, dtype, ("self", "grads", "state_sums"), non_negative=("state_sums",))
    return call | {"state_steps": _steps(draw, len(call["self"])), "lr": _lr(draw, target),
                   "lr_decay": draw(st.sampled_from([0.0, 0.01]), label="lr_decay"),
                   "weight_decay": draw(st.sampled_from([0.0, 0.01]), label="weight_decay"), "eps": 1e-10,
                   "maximize": draw(st.booleans(), label="maximize"),
                   "out": [torch.empty_like(p) for p in call["self"]]}


def amp_update_scale(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    return {"self": torch.tensor([draw(st.sampled_from([1.0, 65536.0]), label="scale")]),
            "growth_tracker": torch.tensor([draw(st.integers(0, 3), label="growth_tracker")], dtype=torch.int32),
            "found_inf": torch.tensor([float(draw(st.booleans(), label="found_inf"))]),
            "scale_growth_factor": 2.0, "scale_backoff_factor": 0.5,
            "growth_interval": draw(st.integers(1, 3), label="growth_interval")}


# -- tensor plumbing -------------------------------------------------------------------------------

def arange_call(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    start = draw(st.integers(-5, 5), label="start")
    step = draw(st.sampled_from([1, 2, -1, 0.5]), label="step") if target in ("step", "out") else 1  # else no step
    end = start + step * draw(st.integers(0, 6), label="steps")
    return {"start": start, "end": end, "step": step, "out": torch.empty(0, dtype=dtype)}


def reshape_alias(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    rows, cols = draw_shape(draw, 2, "self")
    transposed = draw(st.booleans(), label="transposed view")
    size, stride = ([cols, rows], [1, cols]) if transposed else ([rows, cols], [cols, 1])
    return {"self": draw_values(draw, (rows, cols), dtype, "self"), "size": size, "stride": stride}


def stack(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    shape = draw_shape(draw, 2, "each tensor")
    tensors = [draw_values(draw, shape, dtype, f"tensors[{i}]") for i in range(draw_size(draw, "tensors", 1, 3))]
    return {"tensors": tensors, "dim": draw(st.integers(-3, 2), label="dim")}


def cumulative_helper(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    shape = draw_shape(draw, 2, "self")
    return {"self": draw_values(draw, shape, dtype, "self"), "values": torch.empty(shape, dtype=dtype),
            "indices": torch.empty(shape, dtype=torch.int64),
            "dim": draw(st.integers(0, 1), label="dim")}  # a negative dim is not wrapped: it writes out of bounds


def logcumsumexp(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    shape = draw_shape(draw, 2, "self")
    return {"self": draw_values(draw, shape, dtype, "self"), "dim": draw(st.integers(-2, 1), label="dim")}


def coo_to_csr(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    size = draw_size(draw, "size", 1, 5)
    indices = sorted(draw(st.lists(st.integers(0, size - 1), max_size=8), label="row indices"))
    return {"self": torch.tensor(indices, dtype=torch.int64), "size": size,
            "out_int32": draw(st.booleans(), label="out_int32")}


def csr_to_coo(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    counts = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4), label="entries per row")
    crow = torch.tensor([0] + [sum(counts[:i + 1]) for i in range(len(counts))], dtype=torch.int64)
    columns = draw_values(draw, (sum(counts),), torch.int64, "col_indices", low=0).remainder(4)
    return {"crow_indices": crow, "col_indices": columns, "out_int32": draw(st.booleans(), label="out_int32"),
            "transpose": draw(st.booleans(), label="transpose")}


def new_zeros_like_features(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    return {"self": draw_values(draw, draw_shape(draw, 2, "self"), dtype, "self"),
            "other": draw_values(draw, draw_shape(draw, 2, "other"), dtype, "other")}


def foreach_copy(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    shapes = [draw_shape(draw, 1, f"tensor {i}") for i in range(draw_size(draw, "tensors", 1, 3))]
    return {"self": [draw_values(draw, s, dtype, f"self[{i}]") for i, s in enumerate(shapes)],
            "src": [draw_values(draw, s, dtype, f"src[{i}]") for i, s in enumerate(shapes)],
            "out": [torch.empty(s, dtype=dtype) for s in shapes]}


# -- linear algebra and geometry ---------------------------------------------------------------------

def affine_grid(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    spatial = draw(st.sampled_from([2, 3]), label="spatial dimensions")
    batch = draw_size(draw, "batch", 1, 2)
    return {"theta": draw_values(draw, (batch, spatial, spatial + 1), dtype, "theta"),
            "size": [batch, draw_size(draw, "channels", 1, 2), *draw_shape(draw, spatial, "output")],
            "align_corners": draw(st.booleans(), label="align_corners")}


def euclidean_dist(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    rows, other_rows, features = draw_shape(draw, 3, "x1, x2")
    return {"x1": draw_values(draw, (rows, features), dtype, "x1"), "x2": draw_values(draw, (other_rows, features), dtype, "x2")}


def int_mm(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    rows, inner, cols = draw_shape(draw, 3, "self, mat2", high=5)
    return {"self": draw_values(draw, (rows, inner), torch.int8, "self"), "mat2": draw_values(draw, (inner, cols), torch.int8, "mat2"),
            "out": torch.empty(rows, cols, dtype=torch.int32)}  # CPU's kernel does not resize `out`


def addmm_activation(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    rows, inner, cols = draw_shape(draw, 3, "mat1, mat2")
    bias_shape = draw(st.sampled_from([(cols,), (rows, cols)]), label="self shape")
    return {"self": draw_values(draw, bias_shape, dtype, "self"), "mat1": draw_values(draw, (rows, inner), dtype, "mat1"),
            "mat2": draw_values(draw, (inner, cols), dtype, "mat2"), "beta": draw(st.sampled_from([1, 0.5]), label="beta"),
            "alpha": draw(st.sampled_from([1, 2]), label="alpha"), "use_gelu": draw(st.booleans(), label="use_gelu")}


def cholesky_solve_helper(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    size, columns = draw_shape(draw, 2, "A, self")
    upper = draw(st.booleans(), label="upper")
    factor = draw_values(draw, (size, size), dtype, "A").tril(-1) + torch.diag(draw_values(draw, (size,), dtype, "diag", low=0.5))
    return {"self": draw_values(draw, (size, columns), dtype, "self"), "A": factor.mT if upper else factor, "upper": upper}


def native_dropout(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    return {"input": draw_values(draw, draw_shape(draw, 2, "input"), dtype, "input"),
            "p": draw(st.sampled_from([0.0, 0.5]), label="p"), "train": True}


def shift(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """Integer tensors only: the shift operators have no floating kernel."""
    return {"self": draw_values(draw, draw_shape(draw, 2, "self"), torch.int64, "self"),
            "other": draw(st.integers(0, 3), label="other")}


def foreach_pointwise(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`_foreach_addcmul/addcdiv` with a `scalars` tensor: one value per list entry."""
    shapes = [draw_shape(draw, 1, f"tensor {i}") for i in range(draw_size(draw, "tensors", 1, 3))]
    lists = {name: [draw_values(draw, s, dtype, f"{name}[{i}]", low=0.5 if name == "tensor2" else None)
                    for i, s in enumerate(shapes)] for name in ("self", "tensor1", "tensor2")}
    return lists | {"scalars": draw_values(draw, (len(shapes),), dtype, "scalars"),
                    "out": [torch.empty(s, dtype=dtype) for s in shapes]}


def foreach_mm(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    shapes = [draw_shape(draw, 3, f"matrices {i}") for i in range(draw_size(draw, "tensors", 1, 3))]
    return {"self": [draw_values(draw, (m, k), dtype, f"self[{i}]") for i, (m, k, _) in enumerate(shapes)],
            "mat2": [draw_values(draw, (k, n), dtype, f"mat2[{i}]") for i, (_, k, n) in enumerate(shapes)]}


def embedding_renorm(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    rows, width = draw_shape(draw, 2, "self")
    indices = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=4, unique=True), label="indices")
    return {"self": draw_values(draw, (rows, width), dtype, "self"), "indices": torch.tensor(indices),
            "max_norm": draw(st.sampled_from([0.5, 1.0, 10.0]), label="max_norm"),
            "norm_type": draw(st.sampled_from([1.0, 2.0]), label="norm_type")}


def weight_int8pack_mm(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    rows, inner, cols = draw_shape(draw, 3, "self, mat2", high=5)
    return {"self": draw_values(draw, (rows, inner), dtype, "self"),
            "mat2": draw_values(draw, (cols, inner), torch.int8, "mat2"),
            "scales": draw_values(draw, (cols,), dtype, "scales", low=0.01)}


def _fake_quantize(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """Fake quantization of a float tensor: quantization parameters per tensor, or per channel of `axis`."""
    shape = draw_shape(draw, 2, "self")
    axis = draw(st.integers(0, 1), label="axis")
    low, high = draw(st.sampled_from([(0, 255), (-128, 127)]), label="quant_min, quant_max")
    scale = draw(st.sampled_from([0.01, 0.1, 1.0]), label="scale")
    zero = draw(st.integers(low, high), label="zero_point")
    channels = shape[axis]
    return {"self": draw_values(draw, shape, dtype, "self"), "axis": axis, "quant_min": low, "quant_max": high,
            "grad_factor": draw(st.sampled_from([1.0, 0.5]), label="grad_factor"),
            "grad": draw_values(draw, shape, dtype, "grad"),
            "scale": scale, "zero_point": zero,  # per tensor, plain numbers
            "scale_tensor": torch.full((1,), scale, dtype=dtype),
            "zero_point_tensor": torch.full((1,), float(zero), dtype=dtype),
            "scale_channels": draw_values(draw, (channels,), dtype, "scale per channel", low=0.01),
            "zero_point_channels": torch.full((channels,), zero, dtype=torch.int32),
            "fake_quant_enabled": torch.tensor([1], dtype=torch.int64)}


def fake_quantize_as(kind: str) -> Builder:
    """`_fake_quantize` with `scale`/`zero_point` as the overload takes them: "tensor" (1-element float tensors),
    "channels" (one per channel, integer zero points; float for the learnable ones) or "numbers"."""
    def build(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
        call = _fake_quantize(draw, dtype, target)
        if kind == "tensor":
            call |= {"scale": call["scale_tensor"], "zero_point": call["zero_point_tensor"]}
        elif kind.startswith("channels"):
            zero = call["zero_point_channels"]
            call |= {"scale": call["scale_channels"], "zero_point": zero.to(dtype) if kind == "channels_float" else zero}
        return call
    return build


def moving_average_observer(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`_fused_moving_avg_obs_fq_helper`: observer state shaped as the kernel trusts ([C] per row along `ch_axis`,
    else [1]: running min <= max, scale, int32 zero point), flags as 1-element integer tensors."""
    shape = draw_shape(draw, 2, "self")
    per_row = draw(st.booleans(), label="per_row_fake_quant")
    axis = draw(st.integers(0, 1), label="ch_axis") if per_row else 0
    state = (shape[axis],) if per_row else (1,)
    low = -draw_values(draw, state, torch.float32, "running_min", low=0.0)
    quant_min, quant_max = draw(st.sampled_from([(0, 255), (-128, 127)]), label="quantization range")
    return {"self": draw_values(draw, shape, dtype, "self"),
            "observer_on": torch.tensor([int(draw(st.booleans(), label="observer_on"))]),
            "fake_quant_on": torch.tensor([int(draw(st.booleans(), label="fake_quant_on"))]),
            "running_min": low, "running_max": low.abs() + draw_values(draw, state, torch.float32, "range", low=0.1),
            "scale": draw_values(draw, state, torch.float32, "scale", low=0.01),
            "zero_point": torch.zeros(state, dtype=torch.int32) + (0 if quant_min < 0 else 128),
            "averaging_const": draw(st.sampled_from([0.01, 0.5, 1.0]), label="averaging_const"),
            "quant_min": quant_min, "quant_max": quant_max, "ch_axis": axis, "per_row_fake_quant": per_row,
            "symmetric_quant": draw(st.booleans(), label="symmetric_quant")}


def pack_padded(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`_pack_padded_sequence`: a padded batch ([T, B, *] or batch first) and its lengths, sorted longest first
    and none longer than T (the kernel wants them so, on CPU, as int64)."""
    steps, batch, width = draw_shape(draw, 3, "steps, batch, features")
    lengths = sorted((draw_size(draw, f"length {i}", 1, steps) for i in range(batch)), reverse=True)
    batch_first = draw(st.booleans(), label="batch_first")
    shape = (batch, steps, width) if batch_first else (steps, batch, width)
    return {"input": draw_values(draw, shape, dtype, "input"), "lengths": torch.tensor(lengths, dtype=torch.int64),
            "batch_first": batch_first}


def assert_message(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """`_assert_async.msg`: a 1-element tensor that holds (a true condition: a false one fails on CPU as well) and a
    message; the functional form's effect token."""
    return {"self": draw_values(draw, (1,), dtype, "self", low=0.5).reshape(()),
            "assert_msg": draw(st.sampled_from(["check", ""]), label="assert_msg"), "dep_token": torch.empty(0)}


def unsafe_index(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """Indices within bounds (the kernel does not check them), one tensor per leading dimension or None."""
    rows, cols = draw_shape(draw, 2, "self")
    count = draw_size(draw, "index count", 1, 4)
    indices = [draw_values(draw, (count,), torch.int64, "row indices", low=0).remainder(rows),
               draw_values(draw, (count,), torch.int64, "column indices", low=0).remainder(cols)]
    if draw(st.booleans(), label="rows only"):
        indices = indices[:1]
    shape = (count,) if len(indices) == 2 else (count, cols)
    return {"self": draw_values(draw, (rows, cols), dtype, "self"), "indices": indices,
            "values": draw_values(draw, shape, dtype, "values"), "accumulate": draw(st.booleans(), label="accumulate")}


def unsafe_view(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """A size with the input's number of elements (the kernel trusts it)."""
    rows, cols = draw_shape(draw, 2, "self")
    size = draw(st.sampled_from([[rows * cols], [cols, rows], [rows, cols, 1]]), label="size")
    return {"self": draw_values(draw, (rows, cols), dtype, "self"), "size": size}


def unsafe_split(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """Split sizes that add up to the split dimension; one out= tensor per piece."""
    rows, cols = draw_shape(draw, 2, "self", high=5)
    dim = draw(st.integers(0, 1), label="dim")
    extent = (rows, cols)[dim]
    split_size = draw_size(draw, "split_size", 1, extent)
    sizes = [split_size] * (extent // split_size) + ([extent % split_size] if extent % split_size else [])
    if target in ("default", "out"):  # unsafe_split_with_sizes: the pieces in any order
        sizes = draw(st.permutations(sizes), label="split_sizes")
    return {"self": draw_values(draw, (rows, cols), dtype, "self"), "split_size": split_size, "split_sizes": sizes,
            "dim": dim, "out": [torch.empty(0, dtype=dtype) for _ in sizes]}


def compressed_indices(draw: Any, dtype: torch.dtype, target: str) -> dict[str, Any]:
    """Valid compressed and plain indices of a CSR (or CSC) matrix, with values: the parts of one."""
    compressed_dim, plain_dim = draw_shape(draw, 2, "compressed, plain dims")
    rows = [sorted(draw(st.sets(st.integers(0, plain_dim - 1), max_size=plain_dim), label=f"row {i}"))
            for i in range(compressed_dim)]
    counts = torch.tensor([0] + [len(r) for r in rows]).cumsum(0)
    plain = torch.tensor([j for r in rows for j in r], dtype=torch.int64)
    is_crow = draw(st.booleans(), label="is_crow")
    return {"is_crow": is_crow, "compressed_idx": counts, "plain_idx": plain, "cdim": compressed_dim,
            "dim": plain_dim, "nnz": int(counts[-1]), "compressed_indices": counts, "plain_indices": plain,
            "values": draw_values(draw, (int(counts[-1]),), dtype, "values"),
            "layout": torch.sparse_csr if is_crow else torch.sparse_csc}


def itself(target: str) -> str:
    """The donor of a target whose builder makes its own call."""
    return target


def functional(target: str) -> str:
    """The donor of an out= target: its functional overload ("aten.x.out" -> "aten.x.default")."""
    _, packet, overload = target.split(".", 2)
    return f"aten.{packet}.{'default' if overload in ('out', 'output') else overload.removesuffix('_out')}"


def family_adder(table: dict[str, tuple[Builder, str]]) -> Callable[..., None]:
    """`family(builder, donor_of, *targets)`: each target's entry in `table`."""
    def family(builder: Builder, donor_of: Callable[[str], str], *targets: str) -> None:
        for target in targets:
            table[target] = (builder, donor_of(target))
    return family
