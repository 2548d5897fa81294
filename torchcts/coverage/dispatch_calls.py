"""One call of an aten overload as a case: how the `dispatch` property, the generated list's probe and
`coverage materialize` build, run and judge it (docs/coverage/generated.md).

`overload_cases` draws cases (from the schema, `strategies/schema_args.py`, or rebound from traced
sibling calls, `strategies/traced_calls.py`); `call_overload` is the torch-only program a case runs
(exported into reproduction scripts as it is); `run_call` runs it on a target; `accepted_on_cpu`
says whether CPU's kernel takes a case; `metadata_only` which overloads compare in dtype and shape
only. A library module, so that tools importing it do not register the property.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st
from torch.utils._pytree import tree_leaves

from torchcts.core.overload_names import split_name
from torchcts.coverage.generated import from_traced_calls
from torchcts.engine.programs import run_program
from torchcts.strategies import Case, claimed_dtypes, place
from torchcts.strategies.curated_calls import curated, curated_arguments
from torchcts.strategies.overloads import resolve
from torchcts.strategies.sample_walk import sample_input
from torchcts.strategies.schema_args import schema_arguments
from torchcts.strategies.traced_calls import traced_arguments

EXTRA_DTYPES = (torch.int64, torch.bool)  # drawn besides the item's dtype where the manifest claims them
METADATA_TAGS = ("nondeterministic_seeded", "nondeterministic_bitwise")
_UNINITIALIZED = ("empty", "resize", "set_")  # packets whose results hold uninitialized memory: metadata only
# these exactly: `_ctc_loss`'s log_alpha past each input's length, `_make_dep_token`'s empty token
_UNINITIALIZED_PACKETS = ("_ctc_loss", "_make_dep_token")


def call_overload(anchor, packet, overload, args, kwargs, device_slots, mutated, sparse=()):
    """`torch.ops.aten.<packet>.<overload>(*args, **kwargs)`, its Device arguments set to the anchor tensor's
    device, the dense arguments `sparse` names (position or name, layout, parameters) made on their device
    first: a sparse layout (parameters: its blocksize or None), "nested" (a list of tensors becomes one nested
    tensor), "quantized" (parameters: ["per_tensor_affine", scale, zero_point, dtype] or ["per_channel_affine",
    axis, dtype, scales, zero_points]) or "quantized_list" (a list of tensors, parameters one such list each);
    returns [its result, the arguments it writes (by position or name)], a sparse or nested tensor among them
    as [its layout, its dense (padded) form], a quantized one as [its scheme, its integers, its dequantized
    values]."""
    args = list(args)
    kwargs = dict(kwargs)
    for slot in device_slots:
        if isinstance(slot, int):
            args[slot] = anchor.device
        else:
            kwargs[slot] = anchor.device
    quantized_dtypes = {"quint8": torch.quint8, "qint8": torch.qint8, "qint32": torch.qint32}

    def quantize(value, parameters):
        if not isinstance(value, torch.Tensor) or not isinstance(parameters, (list, tuple)) or not parameters:
            raise ValueError(f"quantized argument: {parameters!r} are not quantizer parameters of a tensor")
        if parameters[0] == "per_tensor_affine" and len(parameters) == 4 and parameters[3] in quantized_dtypes:
            return torch.quantize_per_tensor(value, float(parameters[1]), int(parameters[2]),
                                             quantized_dtypes[parameters[3]])
        if parameters[0] == "per_channel_affine" and len(parameters) == 5 and parameters[2] in quantized_dtypes:
            scales = torch.tensor([float(x) for x in parameters[3]], dtype=torch.float64, device=value.device)
            zero_points = torch.tensor([int(x) for x in parameters[4]], dtype=torch.int64, device=value.device)
            return torch.quantize_per_channel(value, scales, zero_points, int(parameters[1]),
                                              quantized_dtypes[parameters[2]])
        raise ValueError(f"quantized argument: {parameters!r} are not per_tensor_affine or per_channel_affine "
                         f"parameters of a dtype in {sorted(quantized_dtypes)}")

    for where, layout, blocksize in sparse:
        if layout not in ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "nested", "quantized",
                          "quantized_list"):
            raise ValueError(f"argument {where!r}: layout {layout!r} is not a sparse layout, 'nested' or 'quantized'")
        holder = args if isinstance(where, int) else kwargs
        if layout == "nested":  # a list of components becomes one nested tensor
            holder[where] = torch.nested.nested_tensor(list(holder[where]))
        elif layout == "quantized":
            holder[where] = quantize(holder[where], blocksize)
        elif layout == "quantized_list":
            if not isinstance(blocksize, (list, tuple)) or len(blocksize) != len(holder[where]):
                raise ValueError(f"argument {where!r}: quantized_list needs one parameter list per tensor")
            holder[where] = [quantize(value, each) for value, each in zip(holder[where], blocksize)]
        else:
            holder[where] = holder[where].to_sparse(layout=getattr(torch, layout), blocksize=blocksize)
    function = getattr(getattr(torch.ops.aten, packet), overload)
    result = function(*args, **kwargs)
    written = [args[slot] if isinstance(slot, int) else kwargs[slot] for slot in mutated]
    returns = function._schema.returns
    if returns and all(r.alias_info is not None and r.alias_info.is_write for r in returns):
        result = None  # by schema the written arguments themselves (CPU's `_add_relu.out` returns a temporary)

    def dense(value):
        if isinstance(value, torch.Tensor) and value.is_quantized:
            return [str(value.qscheme()).removeprefix("torch."), value.int_repr(), value.dequantize()]
        if isinstance(value, torch.Tensor) and value.is_nested:
            return ["nested", value.to_padded_tensor(0.0)]
        if isinstance(value, torch.Tensor) and value.layout != torch.strided:
            return [str(value.layout), value.to_dense()]
        if isinstance(value, (list, tuple)):
            return [dense(v) for v in value]
        return value

    def special(value):  # a quantized, nested or sparse tensor: compared by its dense form
        if isinstance(value, (list, tuple)):
            return any(special(v) for v in value)
        return isinstance(value, torch.Tensor) and (value.is_quantized or value.is_nested
                                                    or value.layout != torch.strided)

    if sparse or special(result) or special(written):
        result, written = dense(result), dense(written)
    return [result, written]


def describe(name: str, args: tuple, kwargs: dict) -> str:
    """`aten.add.Tensor(float32[2, 3], float32[], alpha=2)`: the call with tensors as dtype[shape]."""
    def text(value: object) -> str:
        if isinstance(value, torch.Tensor):
            return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(text(v) for v in value) + "]"
        return repr(value)

    parts = [text(a) for a in args] + [f"{k}={text(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def overload_cases(name: str, dtype: torch.dtype, manifest: object, scenario: str = "",
                   traced: bool | None = None) -> st.SearchStrategy[Case]:
    """Cases of one call of overload `name`: built by its hand-written builder where it has one (`curated_calls`),
    else drawn from its schema (tensors of `dtype`, int64 and bool too where claimed, shrinking toward small plain
    tensors and default arguments) or, with `traced` (default: where the packaged list says so), rebound from
    OpInfo samples' calls of a sibling overload (`traced_calls`)."""
    op = resolve(name)
    claimed = claimed_dtypes(manifest)
    extra = tuple(d for d in EXTRA_DTYPES if d in claimed)
    packet, overload = split_name(name)
    anchor = torch.zeros((), dtype=dtype)

    def case(drawn) -> Case:
        sparse = ([[[where, layout, list(blocksize) if blocksize else None] for where, layout, blocksize in drawn.sparse]]
                  if drawn.sparse else [])
        sample = sample_input(anchor, args=(packet, overload, list(drawn.args), dict(drawn.kwargs),
                                           list(drawn.device_slots), list(drawn.mutated), *sparse))
        return Case(scenario or name, "scenario", dtype, sample, 0,
                    transforms=(describe(name, drawn.args, drawn.kwargs),))

    if curated(name):
        return curated_arguments(name, dtype).map(case)
    if traced is None:
        traced = name in from_traced_calls()
    if traced:
        return traced_arguments(name).map(case)
    return schema_arguments(op._schema, dtype, dtypes=extra).map(case)


_PROGRAM = run_program(call_overload)


def run_call(cts, sample, target):
    """The program on the target; a lazy negated or conjugated result is resolved once, so a kernel that
    cannot compute it ("neg_cpu" not implemented for 'Bool') raises here, on CPU a rejected draw."""
    result = _PROGRAM(cts, sample, target)
    for leaf in tree_leaves(result):
        if isinstance(leaf, torch.Tensor) and (leaf.is_neg() or leaf.is_conj()):
            leaf.resolve_neg().resolve_conj()
    return result


class _CpuOnly:
    """The CPU oracle as a target, for probing and materializing outside an item."""

    device = "cpu"
    compile_backend = None
    compile = None  # eager: no CompileSpec

    @staticmethod
    def place_for(sample, target):
        return place(sample, "cpu")


def accepted_on_cpu(case: Case) -> str | None:
    """None when CPU's kernel runs the case's call, else `Type: first line` of what it raised."""
    try:
        run_call(_CpuOnly, case.sample, _CpuOnly)
    except Exception as exc:  # noqa: BLE001 - any rejection: the draw says nothing
        return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    return None


def metadata_only(name: str) -> bool:
    """Whether results are compared in dtype and shape only: random or uninitialized values."""
    op = resolve(name)
    packet, _ = split_name(name)
    tags = {str(tag).rsplit(".", 1)[-1] for tag in op.tags}
    return bool(tags & set(METADATA_TAGS)) or any(word in packet for word in _UNINITIALIZED) \
        or packet in _UNINITIALIZED_PACKETS
