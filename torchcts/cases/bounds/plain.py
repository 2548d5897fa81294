"""The `Bound` interface and the bounds of plain stored values: integers, numbers, fixed sets, lists, tuples,
alternatives and objects. Each says why a value is outside it (`problem`), draws within it (`strategy`) and
describes itself for docs/corpus.md's table (`describe`).
"""

from __future__ import annotations

# imports inside functions: hypothesis loads only when a bound draws; declaring and checking bounds needs none
import math
from typing import Any, Mapping as MappingType

import attrs

_SHOWN = 60  # characters of an offending value quoted in a message


def brief(value: Any) -> str:
    """A value as quoted in a message: its repr, cut to `_SHOWN` characters."""
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
            return f"expected an integer in {self.low}..{self.high}, got {brief(value)}"
        if not self.low <= value <= self.high:
            return f"{brief(value)} is outside {self.low}..{self.high}"
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
            return f"expected a finite number in {self.low}..{self.high}, got {brief(value)}"
        if not self.low <= value <= self.high:
            return f"{brief(value)} is outside {self.low}..{self.high}"
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
        return f"{brief(value)} is not one of {shown}"

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
            return f"expected a list of {self.min_size}..{self.max_size} values, got {brief(value)}"
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
            return f"expected {len(self.items)} values, got {brief(value)}"
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
            return f"expected an object with keys among {', '.join(k for k, _ in self.fields)}, got {brief(value)}"
        known = dict(self.fields)
        for key, entry in value.items():
            if key not in known:
                return f"unknown key {brief(key)}; allowed: {', '.join(known)}"
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
