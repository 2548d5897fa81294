"""The bounds of what a scenario case stores: each suite declares them once, draws within them, and the case reader
refuses a stored case outside them.

A scenario suite keeps its parameters as plain values (a sample count, rows and columns, a byte count, a list of
op names) next to a placeholder tensor. Tensors are bounded by `--max-case-bytes` when a case is decoded; plain
values are not, so a 900-byte case file could ask a program for 10**9 samples. Every scenario declares its
parameters as `CaseParams` (a `Bound` per stored value, and rules between values), its strategy draws through the
same bounds (`Bound.strategy()`, or its own strategy within them), and `CaseParams.problem` checks a stored
case before its program runs: a value out of bounds makes the case unreadable, naming the field.

Bounds are plain data (no torch), so docs/corpus.md's table is written from them (`describe`).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping as MappingType

import attrs

_SHOWN = 60  # characters of an offending value quoted in a message


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN - 3]}..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _finite(number: int | float) -> bool:
    """Whether a number is finite as a float: an int too large for one (10**400) is not."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


class Bound:
    """What one stored value may be: `problem` says why a value is not (None: it is), `strategy` draws within it."""

    def problem(self, value: Any) -> str | None:
        raise NotImplementedError

    def strategy(self) -> Any:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def out_of_bounds(self) -> list[Any]:
        """Values just outside this bound (for hostile tests): each one `problem` must refuse."""
        return [object()]


@attrs.frozen
class Ints(Bound):
    """An integer in low..high (both included); a bool is no integer here."""

    low: int
    high: int

    def __attrs_post_init__(self) -> None:
        if not (_is_int(self.low) and _is_int(self.high) and self.low <= self.high):
            raise ValueError(f"Ints: low <= high, both integers; got {self.low!r}, {self.high!r}")

    def problem(self, value: Any) -> str | None:
        if not _is_int(value):
            return f"expected an integer in {self.low}..{self.high}, got {_brief(value)}"
        if not self.low <= value <= self.high:
            return f"{_brief(value)} is outside {self.low}..{self.high}"
        return None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.integers(self.low, self.high)

    def describe(self) -> str:
        return f"integer {self.low}..{self.high}"

    def out_of_bounds(self) -> list[Any]:
        values = [self.low - 1, self.high + 1, 10**12, True if self.low > 1 or self.high < 1 else "1"]
        return [value for value in values if self.problem(value) is not None]  # 10**12 may be within (a request)


@attrs.frozen
class Floats(Bound):
    """A finite number (an int is one too) in low..high."""

    low: float
    high: float

    def problem(self, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
            return f"expected a finite number in {self.low}..{self.high}, got {_brief(value)}"
        if not self.low <= value <= self.high:
            return f"{_brief(value)} is outside {self.low}..{self.high}"
        return None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.floats(self.low, self.high, allow_nan=False, allow_infinity=False)

    def describe(self) -> str:
        return f"number {self.low:g}..{self.high:g}"

    def out_of_bounds(self) -> list[Any]:
        return [float("nan"), float("inf"), self.high * 2 + 1, self.low * 2 - 1, 10**400]


@attrs.frozen
class OneOf(Bound):
    """One of a fixed set of plain values (names, flags, small numbers); compared with their type, so 1 is not True."""

    values: tuple[Any, ...] = attrs.field(converter=tuple)

    def __attrs_post_init__(self) -> None:
        if not self.values:
            raise ValueError("OneOf: at least one value")

    def problem(self, value: Any) -> str | None:
        if any(type(value) is type(known) and (value == known or value != value and known != known)  # NaN is NaN
               for known in self.values):
            return None
        shown = ", ".join(map(repr, self.values[:12])) + (", ..." if len(self.values) > 12 else "")
        return f"{_brief(value)} is not one of {shown}"

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.sampled_from(self.values)

    def describe(self) -> str:
        if self.values in ((False, True), (True, False)):
            return "true or false"
        shown = ", ".join(map(str, self.values[:8])) + (f", ... ({len(self.values)} in all)" if len(self.values) > 8
                                                       else "")
        return f"one of {shown}"

    def out_of_bounds(self) -> list[Any]:
        return ["not-a-declared-value", 10**12]


def Flag() -> OneOf:  # noqa: N802 - reads as a bound, like the classes
    """True or False."""
    return OneOf((False, True))


@attrs.frozen
class Lists(Bound):
    """A list (or tuple) of `min_size`..`max_size` values, each within `item`."""

    item: Bound
    min_size: int = 0
    max_size: int = 8

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, (list, tuple)):
            return f"expected a list of {self.min_size}..{self.max_size} values, got {_brief(value)}"
        if not self.min_size <= len(value) <= self.max_size:
            return f"a list of {len(value)} values; allowed {self.min_size}..{self.max_size}"
        for index, entry in enumerate(value):
            problem = self.item.problem(entry)
            if problem is not None:
                return f"[{index}]: {problem}"
        return None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.lists(self.item.strategy(), min_size=self.min_size, max_size=self.max_size)

    def describe(self) -> str:
        return f"list of {self.min_size}..{self.max_size} x ({self.item.describe()})"

    def out_of_bounds(self) -> list[Any]:
        return [[None] * (self.max_size + 1), "not a list"] + [[bad] * max(self.min_size, 1)
                                                              for bad in self.item.out_of_bounds()[:2]]


@attrs.frozen
class Tuples(Bound):
    """A fixed-length list (or tuple), each position within its own bound."""

    items: tuple[Bound, ...] = attrs.field(converter=tuple)

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, (list, tuple)) or len(value) != len(self.items):
            return f"expected {len(self.items)} values, got {_brief(value)}"
        for index, (entry, bound) in enumerate(zip(value, self.items)):
            problem = bound.problem(entry)
            if problem is not None:
                return f"[{index}]: {problem}"
        return None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.tuples(*(bound.strategy() for bound in self.items))

    def describe(self) -> str:
        return "(" + ", ".join(bound.describe() for bound in self.items) + ")"

    def out_of_bounds(self) -> list[Any]:
        return [[None] * (len(self.items) + 1)]


@attrs.frozen
class Either(Bound):
    """Within any one of `options` (a value that may be a count or a name, a tensor or None)."""

    options: tuple[Bound, ...] = attrs.field(converter=tuple)

    def problem(self, value: Any) -> str | None:
        problems = [bound.problem(value) for bound in self.options]
        if any(problem is None for problem in problems):
            return None
        return " / ".join(problem for problem in problems if problem)

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        return st.one_of(*(bound.strategy() for bound in self.options))

    def describe(self) -> str:
        return " or ".join(bound.describe() for bound in self.options)

    def out_of_bounds(self) -> list[Any]:
        return [bad for bad in self.options[0].out_of_bounds() if self.problem(bad) is not None][:2] or [object()]


def Optional(bound: Bound) -> Either:  # noqa: N802 - reads as a bound, like the classes
    """None, or within `bound`."""
    return Either((OneOf((None,)), bound))


@attrs.frozen
class Mapping(Bound):
    """A dict whose keys are among `fields` (each value within its bound); `required` keys must be there."""

    fields: tuple[tuple[str, Bound], ...] = attrs.field(
        converter=lambda value: tuple(value.items()) if isinstance(value, MappingType) else tuple(value))
    required: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    def problem(self, value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"expected an object with keys among {', '.join(k for k, _ in self.fields)}, got {_brief(value)}"
        known = dict(self.fields)
        for key, entry in value.items():
            if key not in known:
                return f"unknown key {_brief(key)}; allowed: {', '.join(known)}"
            problem = known[key].problem(entry)
            if problem is not None:
                return f"[{key!r}]: {problem}"
        missing = [key for key in self.required if key not in value]
        return f"missing {', '.join(missing)}" if missing else None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        known = dict(self.fields)
        return st.fixed_dictionaries({k: known[k].strategy() for k in self.required},
                                     optional={k: b.strategy() for k, b in self.fields if k not in self.required})

    def describe(self) -> str:
        return "{" + ", ".join(f"{k}: {b.describe()}" for k, b in self.fields) + "}"

    def out_of_bounds(self) -> list[Any]:
        return [{"not-a-declared-key": 1}, "not an object"]


@attrs.frozen
class Tensors(Bound):
    """A CPU tensor spanning at most `max_elements` elements and of at most `max_dims` dimensions, of a dtype among
    `dtypes` (None: any). Its bytes are bounded by `--max-case-bytes` already; this bounds what a program derives
    from its sizes: the product of its sides with each side of 0 counted as 1, so a (20000, 0) tensor, which holds
    nothing, still spans 20000 (`mm` of it and a (0, 20000) one makes 4e8 elements). A nested tensor spans the sum
    of its components'."""

    max_elements: int = 2**20
    max_dims: int = 8
    dtypes: tuple[str, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))

    def problem(self, value: Any) -> str | None:
        import torch

        if not isinstance(value, torch.Tensor) or type(value).__module__.split(".")[0] != "torch":
            return f"expected a tensor, got {type(value).__name__}"
        if value.device.type != "cpu":  # the codec decodes meta tensors too; a program runs on CPU values
            return f"a tensor on the {_brief(value.device.type)} device; a stored tensor is on cpu"
        if self.dtypes is not None:
            from torchcts import dtypes as dtype_names

            name = dtype_names.canonical_name(value.dtype)
            if name not in self.dtypes:
                return f"a {name} tensor; allowed: {', '.join(self.dtypes)}"
        if value.dim() > self.max_dims:
            return f"a tensor of {value.dim()} dimensions; allowed at most {self.max_dims}"
        try:
            shapes = [tuple(part.shape) for part in value.unbind()] if value.is_nested else [tuple(value.shape)]
            spans = [math.prod(max(int(side), 1) for side in shape) for shape in shapes]
        except Exception:  # noqa: BLE001 - a nested tensor whose components cannot be listed: refused, not trusted
            return "a nested tensor whose components cannot be read"
        span = sum(spans)
        if span > self.max_elements:
            if value.is_nested or all(side for shape in shapes for side in shape):
                return f"a tensor of {span} elements; allowed at most {self.max_elements}"
            return (f"a tensor of sizes {_brief(list(value.shape))} spanning {span} elements (a side of 0 counted "
                    f"as 1); allowed at most {self.max_elements}")
        return None

    def strategy(self) -> Any:
        raise TypeError("Tensors has no strategy of its own: a suite draws its tensors with strategies.tensors")

    def describe(self) -> str:
        kinds = f" of {', '.join(self.dtypes)}" if self.dtypes is not None else ""
        return f"tensor{kinds} of at most {self.max_elements} elements, {self.max_dims} dimensions"

    def out_of_bounds(self) -> list[Any]:
        import torch

        values: list[Any] = [1, "tensor", torch.zeros(1, device="meta")]
        if self.max_dims >= 2:  # no element, one side past the bound
            values.append(torch.zeros(0, self.max_elements + 1))
        if self.dtypes is not None:
            values.append(torch.zeros(1, dtype=torch.complex128 if "complex128" not in self.dtypes else torch.int8))
        return values


@attrs.frozen
class Dtypes(Bound):
    """A torch dtype among the names given (canonical names, `float32`)."""

    names: tuple[str, ...] = attrs.field(converter=tuple)

    def problem(self, value: Any) -> str | None:
        from torchcts import dtypes as dtype_names

        if type(value).__name__ != "dtype" or dtype_names.canonical_name(value) not in self.names:
            return f"{_brief(value)} is not a dtype among {', '.join(self.names)}"
        return None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        from torchcts import dtypes as dtype_names

        return st.sampled_from([dtype_names.lookup(name) for name in self.names])

    def describe(self) -> str:
        return f"dtype: {', '.join(self.names)}"

    def out_of_bounds(self) -> list[Any]:
        return ["float32", 1]


Rule = tuple[str, Callable[[dict[str, Any]], bool]]  # (what must hold, said to the user; a check of named values)


def _pairs(value: Any) -> tuple[tuple[str, Bound], ...]:
    pairs = tuple(value.items()) if isinstance(value, MappingType) else tuple(value)
    for name, bound in pairs:
        if not isinstance(name, str) or not isinstance(bound, Bound):
            raise TypeError(f"CaseParams: name -> Bound pairs, got {name!r}: {bound!r}")
    return pairs


def _checked(bound: Bound, value: Any) -> str | None:
    """`bound.problem(value)`; a bound that raises on a hostile value refuses it, in one line (no traceback)."""
    try:
        return bound.problem(value)
    except Exception as exc:  # noqa: BLE001 - a value no check foresaw is no value within the bound
        return f"a {type(value).__name__} that cannot be checked against {bound.describe()} ({type(exc).__name__})"


@attrs.frozen
class CaseParams:
    """The stored values of one scenario's cases: the sample's `input`, its positional `args` (name -> bound, in
    order) and `kwargs` (name -> bound; each optional), and `rules` between named values that bounds alone cannot
    say (a producer index below the stream count; a shape that must fit `input`, which rules see by that name).
    A value may be one of several shapes: use `Either`."""

    args: tuple[tuple[str, Bound], ...] = attrs.field(factory=tuple, converter=_pairs)
    input: Bound = Tensors(max_elements=1)  # the placeholder `torch.zeros(1)` most scenario suites store
    kwargs: tuple[tuple[str, Bound], ...] = attrs.field(factory=tuple, converter=_pairs)
    rules: tuple[Rule, ...] = attrs.field(factory=tuple, converter=tuple)
    min_args: int | None = None  # fewer positional args allowed (trailing ones optional); None: exactly len(args)

    def problem(self, sample: Any) -> tuple[str, str] | None:
        """(field, what is wrong) for the first stored value outside its bound, or None when all are within."""
        problem = _checked(self.input, sample.input)
        if problem is not None:
            return "inputs.input", problem
        args, kwargs = tuple(sample.args), dict(sample.kwargs)
        least = len(self.args) if self.min_args is None else self.min_args
        if not least <= len(args) <= len(self.args):
            names = ", ".join(name for name, _ in self.args)
            count = f"{len(self.args)}" if least == len(self.args) else f"{least}..{len(self.args)}"
            return "inputs.args", f"{len(args)} values; this scenario stores {count} ({names})"
        named: dict[str, Any] = {"input": sample.input}  # rules may tie a stored shape to the stored tensor
        for index, ((name, bound), value) in enumerate(zip(self.args, args)):
            problem = _checked(bound, value)
            if problem is not None:
                return f"inputs.args[{index}] ({name})", problem
            named[name] = value
        known = dict(self.kwargs)
        for key, value in kwargs.items():
            if key not in known:
                allowed = ", ".join(known) or "none"
                return f"inputs.kwargs.{str(key)[:40]}", f"not a keyword this scenario stores; allowed: {allowed}"
            problem = _checked(known[key], value)
            if problem is not None:
                return f"inputs.kwargs.{key}", problem
            named[key] = value
        for text, holds in self.rules:
            try:
                good = bool(holds(named))
            except Exception:  # noqa: BLE001 - a rule over values of the wrong shape: the value is the problem
                good = False
            if not good:
                return "inputs", f"{text} does not hold"
        return None

    def describe(self) -> list[tuple[str, str]]:
        """(name, bound) rows for docs/corpus.md, the input first when it is more than the placeholder."""
        rows = [] if self.input == Tensors(max_elements=1) else [("input", self.input.describe())]
        rows += [(name, bound.describe()) for name, bound in self.args]
        rows += [(f"{name}=", bound.describe()) for name, bound in self.kwargs]
        rows += [("rule", text) for text, _ in self.rules]
        return rows


def params_for(scenarios: Iterable[str], params: Any) -> dict[str, CaseParams]:
    """Normalise `ScenarioItems.params`: one `CaseParams` for every scenario, or a dict scenario -> `CaseParams`."""
    if isinstance(params, CaseParams):
        return {name: params for name in scenarios}
    return dict(params or {})
