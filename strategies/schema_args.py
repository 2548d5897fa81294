"""Arguments for an aten overload, drawn from its FunctionSchema alone.

`schema_arguments(schema, dtype)` draws the positional and keyword arguments of one call of an
overload ("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"): tensors from
`tensors()` (one shared base shape, so binary ops mostly broadcast; index-like arguments int64 within
the base shape's sides; mutated arguments never overlapping; `out=` tensors empty, to be resized),
ints and dims within the first tensor's rank, int lists, floats, Scalars, bools, dtypes, strings with
known choices, optional arguments as None or a value, and defaulted arguments left out (the shrink
target) or drawn. Device arguments are not values: their positions are returned for the caller to
fill with the target's device. `unsupported(schema)` names the first argument no strategy exists for
("cannot generate: argument `stream` of type Stream"); `schema_arguments` refuses such a schema at
once. Everything shrinks toward the base shape's plain tensor and the defaults.
"""

from __future__ import annotations

from typing import Any

import attrs
import torch
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from torchcts.strategies.shapes import shapes
from torchcts.strategies.tensors import tensors

# Strings with known choices, by argument name (aten's own vocabularies); any other str cannot be drawn.
STRING_CHOICES: dict[str, tuple[str, ...]] = {
    "reduce": ("sum", "mean", "prod", "amax", "amin"),
    "reduction": ("mean", "sum", "none"),
    "rounding_mode": ("trunc", "floor"),
    "approximate": ("none", "tanh"),
    "side": ("left", "right"),
    "interpolation": ("linear", "lower", "higher", "midpoint", "nearest"),
    "mode": ("reduced", "complete", "r"),
    "padding_mode": ("zeros", "reflection", "border"),
    "indexing": ("ij", "xy"),
    "UPLO": ("L", "U"),
    "uplo": ("L", "U"),
    "driver": ("gelsy",),
}
INDEX_NAMES = frozenset({"index", "indices", "idx", "offsets", "target", "lengths", "repeats", "sorted_sequence_idx"})
MASK_NAMES = frozenset({"mask"})
_FLOATS = (1.0, 0.5, 2.0, 0.0, -1.5, 3.0, 1e-3)
_INTS = (1, 0, 2, 3, -1)
_SCALARS_FLOAT = (1.0, 2.0, 0.5, -1.0, 0.0, 3)
_SCALARS_INT = (1, 2, 0, -1, 3)
_UNSUPPORTED_KINDS = ("Stream", "Storage", "Generator", "Dimname", "QScheme", "__torch__", "Any", "ConstQuantizerPtr")


@attrs.frozen
class Drawn:
    """One drawn call: positional `args`, keyword `kwargs`, where Device arguments go (`device_slots`:
    positions and names the caller fills with the target's device), and the mutated arguments
    (`mutated`: positions and names of arguments the schema writes, `Tensor(a!)`)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    device_slots: tuple[int | str, ...]
    mutated: tuple[int | str, ...]
    # dense arguments the call turns sparse where it runs: (position or name, layout name, blocksize or None)
    sparse: tuple[tuple[int | str, str, tuple[int, int] | None], ...] = ()


class CallBuilder:
    """One call's arguments, added in schema order: by position until one is left out (then every later
    one by name), keyword-only ones by name; notes where written arguments and Device slots go."""

    def __init__(self) -> None:
        self.args: list[Any] = []
        self.kwargs: dict[str, Any] = {}
        self.slots: list[int | str] = []
        self.mutated: list[int | str] = []
        self.keyword = False

    def leave_out(self) -> None:
        """The next argument is left out (its default applies): later ones go by name."""
        self.keyword = True

    def add(self, arg: Any, value: Any) -> None:
        if self.keyword or arg.kwarg_only:
            self.kwargs[arg.name] = value
            where: int | str = arg.name
        else:
            where = len(self.args)
            self.args.append(value)
        if writes_to(arg):
            self.mutated.append(where)
        if argument_kind(arg)[0] == "Device":
            self.slots.append(where)

    def drawn(self) -> Drawn:
        return Drawn(tuple(self.args), self.kwargs, tuple(self.slots), tuple(self.mutated))


def argument_kind(arg: Any) -> tuple[str, bool]:
    """(the argument's type without Optional, whether it is Optional): ("List[int]", False)."""
    text = str(arg.real_type)
    if text.startswith("Optional[") and text.endswith("]"):
        return text[len("Optional["):-1], True
    return text, False


def argument_reason(arg: Any) -> str | None:
    """Why `arg` (a torch._C.Argument) cannot be drawn, or None when it can."""
    kind, optional = argument_kind(arg)
    if kind in ("Device", "Layout", "MemoryFormat"):
        return None
    if kind in ("Generator", "Stream"):
        return None if optional else f"cannot generate: argument `{arg.name}` of type {kind} (an optional one is None)"
    if any(bad in kind for bad in _UNSUPPORTED_KINDS):
        return f"cannot generate: argument `{arg.name}` of type {kind}"
    if kind in ("str", "List[str]") and arg.name not in STRING_CHOICES:
        return None if optional else f"cannot generate: argument `{arg.name}` of type str with no known choices"
    if kind.startswith("List[") and kind not in ("List[int]", "List[Tensor]", "List[Optional[Tensor]]", "List[bool]",
                                                 "List[float]", "List[number]"):
        return f"cannot generate: argument `{arg.name}` of type {kind}"
    known = ("Tensor", "int", "SymInt", "float", "number", "bool", "ScalarType", "str", "List[int]", "List[Tensor]",
             "List[Optional[Tensor]]", "List[bool]", "List[float]", "List[number]")
    if kind not in known:
        return f"cannot generate: argument `{arg.name}` of type {kind}"
    return None


def unsupported(schema: Any) -> str | None:
    """The reason the first argument of `schema` that cannot be drawn gives, or None when all can."""
    for arg in schema.arguments:
        reason = argument_reason(arg)
        if reason is not None:
            return reason
    return None


def writes_to(arg: Any) -> bool:
    """Whether the overload writes this argument (`Tensor(a!)`)."""
    return arg.alias_info is not None and arg.alias_info.is_write


def mutated_arguments(schema: Any) -> tuple[str, ...]:
    """The names of the arguments the schema writes (`Tensor(a!) self`, `Tensor(a!) out`)."""
    return tuple(arg.name for arg in schema.arguments if writes_to(arg))


@attrs.frozen
class _Scope:
    """What the argument strategies of one call share: the item's dtype, the dtypes a tensor may take,
    the base shape, and the first tensor's rank."""

    dtype: torch.dtype  # the call's dtype: every tensor's, unless it draws one of the others
    dtypes: tuple[torch.dtype, ...]  # the call's dtype first
    base: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.base)


def _dims(scope: _Scope) -> st.SearchStrategy[int]:
    """A dimension of the base shape (0 first, then the others, then negative forms)."""
    rank = max(scope.ndim, 1)
    return st.sampled_from(tuple(range(rank)) + tuple(range(-rank, 0)))


def _tensor_dtype(scope: _Scope) -> st.SearchStrategy[torch.dtype]:
    """The call's dtype three times in four (a single-dtype call is what most kernels accept), else another."""
    return st.sampled_from((scope.dtype,) * 3 + scope.dtypes[1:])


def _tensor(arg: Any, scope: _Scope, *, out: bool) -> st.SearchStrategy[torch.Tensor]:
    name = arg.name
    if name in INDEX_NAMES:
        return _index_tensor(scope)
    if name in MASK_NAMES:
        return tensors(torch.bool, st.sampled_from((scope.base, ())), relayout=False)
    dtype = _tensor_dtype(scope)
    if out:  # resized by the op: an empty tensor of a drawn dtype
        return dtype.map(lambda d: torch.empty(0, dtype=d))
    shape = st.one_of(st.just(scope.base), st.just(()), shapes(max_dims=3, max_side=4))
    writable = writes_to(arg)
    return dtype.flatmap(lambda d: tensors(d, shape, allow_overlap=not writable, relayout=True))


def _index_tensor(scope: _Scope) -> st.SearchStrategy[torch.Tensor]:
    """int64 indices below the smallest side of the base shape (1 when it has none), 1-d or of the base shape."""
    high = max(min(scope.base, default=1), 1) - 1
    side = st.lists(st.integers(0, high), min_size=1, max_size=4).map(lambda v: torch.tensor(v, dtype=torch.int64))
    same = st.just(scope.base).map(lambda s: torch.zeros(s, dtype=torch.int64))
    return st.one_of(side, same)


def _int_list(arg: Any, scope: _Scope) -> st.SearchStrategy[list[int]]:
    name, fixed = arg.name, arg.N
    if "dim" in name and "dilation" not in name:
        rank = max(scope.ndim, 1)
        return st.lists(st.integers(0, rank - 1), unique=True, min_size=fixed or 0, max_size=fixed or rank)
    if name in ("size", "sizes", "shape", "output_size", "new_size"):
        return st.lists(st.integers(0, 4), min_size=fixed or 0, max_size=fixed or 3).map(
            lambda v: [max(x, 1) if i == 0 else x for i, x in enumerate(v)])
    if name in ("padding", "output_padding", "pad"):
        return st.lists(st.integers(0, 1), min_size=fixed or 1, max_size=fixed or 4)
    return st.lists(st.integers(1, 3), min_size=fixed or 1, max_size=fixed or max(scope.ndim, 1))


def _value(arg: Any, scope: _Scope) -> st.SearchStrategy[Any]:
    """The strategy of one non-default, non-None value of `arg`."""
    kind, _ = argument_kind(arg)
    integral = not (scope.dtype.is_floating_point or scope.dtype.is_complex)
    if kind == "Tensor":
        return _tensor(arg, scope, out=arg.kwarg_only and writes_to(arg))
    if kind in ("int", "SymInt"):
        return _dims(scope) if "dim" in arg.name else st.sampled_from(_INTS)
    if kind == "float":
        return st.sampled_from(_FLOATS)
    if kind == "number":
        return st.sampled_from(_SCALARS_INT if integral else _SCALARS_FLOAT)
    if kind == "bool":
        return st.booleans()
    if kind == "ScalarType":
        return st.sampled_from(scope.dtypes)
    if kind == "str":
        return st.sampled_from(STRING_CHOICES[arg.name])
    if kind == "Layout":
        return st.just(torch.strided)
    if kind == "MemoryFormat":
        return st.sampled_from((torch.contiguous_format, torch.preserve_format))
    if kind == "List[int]":
        return _int_list(arg, scope)
    if kind == "List[Tensor]":
        member = _tensor_dtype(scope).flatmap(lambda d: tensors(d, scope.base, allow_overlap=False))
        return st.lists(member, min_size=1, max_size=3)
    if kind == "List[Optional[Tensor]]":
        return st.lists(st.one_of(st.none(), _index_tensor(scope)), min_size=1, max_size=max(scope.ndim, 1))
    if kind == "List[bool]":
        return st.lists(st.booleans(), min_size=arg.N or 1, max_size=arg.N or 3)
    if kind == "List[float]":
        return st.lists(st.sampled_from((1.0, 2.0, 0.5)), min_size=arg.N or 1, max_size=arg.N or max(scope.ndim, 1))
    if kind == "List[number]":
        return st.lists(st.sampled_from(_SCALARS_INT if integral else _SCALARS_FLOAT), min_size=1, max_size=3)
    raise InvalidArgument(f"argument `{arg.name}` of type {kind}: no strategy")  # unsupported() said so first


def schema_arguments(schema: Any, dtype: torch.dtype, *, dtypes: tuple[torch.dtype, ...] = (),
                     max_dims: int = 4, max_side: int = 3) -> st.SearchStrategy[Drawn]:
    """One call's arguments for `schema` (a torch FunctionSchema), tensors of `dtype` (or one of `dtypes`).

    Shrinks toward the base shape's small plain tensor, defaults left out, Optional arguments None."""
    reason = unsupported(schema)
    if reason is not None:
        raise InvalidArgument(f"{schema.name}.{schema.overload_name or 'default'}: {reason}")
    if not isinstance(dtype, torch.dtype):
        raise InvalidArgument(f"dtype must be a torch.dtype, got {dtype!r}")
    choices = tuple(dict.fromkeys((dtype, *dtypes)))
    arguments = tuple(schema.arguments)

    @st.composite
    def draw_call(draw) -> Drawn:
        main = draw(st.sampled_from(choices), label="call dtype")  # the item's dtype first
        others = tuple(d for d in choices if d != main)
        scope = _Scope(main, (main, *others), draw(shapes(max_dims=max_dims, max_side=max_side), label="base shape"))
        call = CallBuilder()
        for arg in arguments:
            kind, optional = argument_kind(arg)
            if kind == "Device":
                value: Any = None
            elif kind in ("Generator", "Stream") or (optional and kind in ("str", "List[str]")
                                                      and arg.name not in STRING_CHOICES):
                value = None
            elif arg.has_default_value() and not draw(st.booleans(), label=f"{arg.name} given"):
                call.leave_out()
                continue
            elif optional and not arg.has_default_value() and not draw(st.booleans(), label=f"{arg.name} given"):
                value = None
            else:
                value = draw(_value(arg, scope), label=arg.name)
            call.add(arg, value)
        return call.drawn()

    return draw_call()
