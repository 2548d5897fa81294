"""`CaseParams`: the bounds of every value one scenario's cases store (the sample's input, positional and keyword
arguments) and the rules between them; `problem` checks a stored case before its program runs."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping as MappingType

import attrs

from torchcts.cases.bounds.plain import Bound
from torchcts.cases.bounds.torch_values import Tensors

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
