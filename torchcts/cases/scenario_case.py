"""Scenario cases by name: a scenario's parameters are a mapping name -> value, named and bounded by its `CaseParams`.

A scenario case (a suite's own situation, not an OpInfo sample: "three training steps of an MLP") is made of
named, typed parameters: `input` (the tensor the program is given first; the placeholder `torch.zeros(1)` where
the scenario has none) and the names its `CaseParams` declares (`args`, in order, then the optional `kwargs`).
The engine places and compares an OpInfo `SampleInput`, so a scenario case is still carried as one, its values in
declaration order: `scenario_case` builds it from names, `named` reads the names back, `params_strategy` draws a
whole mapping from the bounds themselves, and `named_problem` checks a mapping read from a case file (an unknown
or missing name) before it is ordered (`positional`). Case files store the named form, `"inputs": {"scenario":
{name: value}}` (`named_inputs`, docs/corpus.md); a file of the older positional form ({input, args, kwargs})
reads as before, its args being the declared names in order (`positional_inputs` turns either into that form).
"""

from __future__ import annotations

from typing import Any, Mapping

from torchcts.cases.bounds import CaseParams

# imports inside functions: torch, hypothesis, the strategies: only drawing a case needs them, not declaring one

SCENARIO = "scenario"  # the variant of every scenario case (an OpInfo case's is function, method, inplace or out)
INPUT = "input"  # the name of the tensor a scenario's program is given first


def names(params: CaseParams) -> tuple[str, ...]:
    """Every parameter name a scenario's cases store: `input`, its positional args in order, then its kwargs."""
    return (INPUT, *(name for name, _ in params.args), *(name for name, _ in params.kwargs))


def named(params: CaseParams, sample: Any) -> dict[str, Any]:
    """The case's values by name (`input`, then the args by their declared names, then the kwargs given)."""
    values = {INPUT: sample.input}
    values.update((name, value) for (name, _), value in zip(params.args, sample.args))
    values.update(sample.kwargs)
    return values


def has_names(params: CaseParams, sample: Any) -> bool:
    """Whether every value of the sample has a declared name (so its case can be stored by name)."""
    return len(sample.args) <= len(params.args) and named_problem(params, named(params, sample)) is None


def named_problem(params: CaseParams, values: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) when a mapping is no scenario case of `params`: a name it does not declare, or a
    positional parameter missing (trailing ones may be, `CaseParams.min_args`); None otherwise. Bounds are checked
    afterwards, on the ordered sample (`CaseParams.problem`)."""
    declared = names(params)
    for key in values:
        if key not in declared:
            return (f"params.{str(key)[:40]}", f"not a parameter of this scenario; declared: {', '.join(declared)}")
    if INPUT not in values:
        return f"params.{INPUT}", "missing"
    least = len(params.args) if params.min_args is None else params.min_args
    given = [name for name, _ in params.args if name in values]
    order = [name for name, _ in params.args][:len(given)]
    if given != order or len(given) < least:
        missing = [name for name, _ in params.args[:max(least, len(given))] if name not in values]
        return f"params.{missing[0] if missing else INPUT}", "missing"
    return None


def positional(params: CaseParams, values: Mapping[str, Any]) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """(input, args, kwargs) of a named mapping (`named_problem` has found nothing wrong with it)."""
    args = tuple(values[name] for name, _ in params.args if name in values)
    kwargs = {name: values[name] for name, _ in params.kwargs if name in values}
    return values[INPUT], args, kwargs


def positional_inputs(params: CaseParams, encoded: Mapping[str, Any]) -> dict[str, Any] | tuple[str, str]:
    """The positional form ({input, args, kwargs}) of a case file's named parameters, each value still encoded
    (`cases.codec`), or (field, what is wrong) for a name the scenario does not declare or one it lacks."""
    problem = named_problem(params, encoded)
    if problem is not None:
        return f"inputs.scenario.{problem[0].partition('.')[2]}", problem[1]
    input, args, kwargs = positional(params, encoded)
    return {"input": input, "args": list(args), "kwargs": {"dict": kwargs}}


def named_inputs(params: CaseParams, positional_form: Mapping[str, Any]) -> dict[str, Any]:
    """A case file's named parameters from its positional form ({input, args, kwargs}, encoded): the args matched
    to the declared names in order (how a file written before scenario cases were named is read: docs/corpus.md)."""
    values = {INPUT: positional_form["input"]}
    values.update((name, value) for (name, _), value in zip(params.args, positional_form.get("args", [])))
    values.update(positional_form.get("kwargs", {"dict": {}})["dict"])
    return values


def scenario_case(scenario: str, dtype: Any, params: CaseParams, values: Mapping[str, Any],
                  what: str | tuple[str, ...]) -> Any:
    """A drawn scenario case from named values: `values` holds `input` and the declared names (a name it lacks
    must be an optional one), `what` says the case in a line, or in parts (its failure message quotes them)."""
    from torchcts.strategies import Case
    from torchcts.strategies.sample_walk import sample_input

    problem = named_problem(params, values)
    if problem is not None:
        raise ValueError(f"scenario {scenario}: {problem[0]}: {problem[1]}")
    input, args, kwargs = positional(params, values)
    transforms = (what,) if isinstance(what, str) else tuple(what)
    return Case(scenario, SCENARIO, dtype, sample_input(input, args=args, kwargs=kwargs), 0, transforms=transforms)


def params_strategy(params: CaseParams, input: Any = None) -> Any:
    """A strategy of named mappings drawn within `params`' bounds (each by `Bound.strategy()`, in declaration
    order; every optional keyword drawn too), `input` as the tensor (None: the placeholder `torch.zeros(1)`).
    Rules between values are kept by filtering, so a rule that most draws break calls for a suite's own strategy."""
    from hypothesis import strategies as st

    if input is None:
        import torch  # only where a case is drawn: the declarations above stay torch-free

        input = torch.zeros(1)
    fields = {name: bound.strategy() for name, bound in (*params.args, *params.kwargs)}
    drawn = st.fixed_dictionaries(fields).map(lambda values: {INPUT: input, **values})
    if not params.rules:
        return drawn
    return drawn.filter(lambda values: all(_holds(rule, values) for _, rule in params.rules))


def _holds(rule: Any, values: dict[str, Any]) -> bool:
    try:
        return bool(rule(values))
    except Exception:  # noqa: BLE001 - a rule over values of the wrong shape does not hold (as CaseParams.problem)
        return False
