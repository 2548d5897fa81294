"""Declarative scenario suites: a table of scenarios (parameters, cases, program, comparison) the engine runs.

A scenario suite states each scenario as a row: its name, its parameters (`cases.bounds.CaseParams`: the names and
bounds of what its cases store), the strategy drawing its cases (`cases(cts)`; by default drawn from the bounds
themselves, `scenario_case.params_strategy`), the torch-only program run on the oracle and on the device
(`engine.programs`), and how the two results are compared:

- `Tolerance(...)`: within the oracle's tolerance for the dtype, read from the manifest's tolerance model
  (`categories`: its overrides, most specific first) and widened by `widen` (a number, or a function of the case's
  named parameters: a training run of `steps` steps widens by the steps; `dtype_widen`: a further factor by the
  item's dtype), norm-wise where the program resamples or averages; `alternative`: another acceptable oracle
  result. Values a program returns as plain data (strides, event logs) compare exactly.
- `Exact(...)`: bit for bit (views, copies, IEEE-754 semantics): `properties.exact_check`.
- `Custom(check)`: `check(cts, scenario)` gives the suite's own check for `cts.run` (invariants on the device alone).

`scenario_suite(...)` registers the property (`plan.registry.ScenarioItems` built from the rows: names, programs,
bounds, comparison, needs) and returns its test function, which a suite module binds to its `test_<name>`
name: `test_training = scenario_suite("training", ...)`. Its items run `cts.run(row.cases(cts), check)` with the
row of the item's scenario, so a suite writes no `def check(case)` of its own for the common comparisons.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable

import attrs

from torchcts.engine.programs import run_program
from torchcts.cases import scenario_case
from torchcts.cases.bounds import CaseParams
from torchcts.plan import registry
from torchcts.plan.registry import RegistryError, ScenarioItems, register_property
from torchcts.properties.exact_check import exact_program_check


@attrs.frozen
class Tolerance:
    """Compare within the oracle's tolerance (the manifest's tolerance model, `CaseContext.assert_matches`)."""

    categories: tuple[str, ...] | None = attrs.field(default=None,
                                                     converter=lambda v: None if v is None else tuple(v))
    widen: float | Callable[[dict[str, Any]], float] = 1.0  # a factor, or one of the case's named parameters
    normwise: bool | None = None  # None: by the scenario name's op category (a scenario has none: norm-wise)
    strides: bool | str = False
    inputs: bool = True  # widen for results that sum many inputs, by the case's own values
    outputs: str = ""  # the parts of the program's result, named in a failure: "result, runs bitwise equal"
    # by the item's dtype name, a further factor: {"float16": 2.0, "bfloat16": 2.0} (kernels that sum in another
    # order or accumulator precision below 32 bits); a dtype not named: 1
    dtype_widen: tuple[tuple[str, float], ...] = attrs.field(default=(), converter=lambda v: tuple(dict(v).items()))
    # a failure's wording: "" says the case's first description part (the device call names it too); a format of
    # {scenario} (its name), {first} (the description's first part: what was drawn) and {case} (all its parts joined
    # by "; ", a reduction's steps too) says that (the device call: the name)
    said: str = ""
    # another acceptable oracle result, `alternative(sample, expected)` (None where there is none): the device
    # passes matching either; a failure still reports CPU's own result (channels_last: a format CPU dropped)
    alternative: Callable[[Any, Any], Any] | None = None

    def factor(self, values: dict[str, Any], dtype: Any = None) -> float:
        """The widening of a case: `widen` (by its named values) times `dtype_widen`'s factor for `dtype`."""
        factor = float(self.widen(values)) if callable(self.widen) else float(self.widen)
        by_dtype = dict(self.dtype_widen).get(str(dtype).rpartition(".")[2]) if dtype is not None else None
        return factor if by_dtype is None else factor * float(by_dtype)

    def wording(self, scenario: str, case: Any) -> tuple[str, str]:
        """(what the device call names, what a failure names) for a case of `scenario`."""
        first = case.transforms[0] if case.transforms else scenario
        if not self.said:
            return first, first
        return scenario, self.said.format(scenario=scenario, first=first, case="; ".join(case.transforms))


@attrs.frozen
class Exact:
    """Compare bit for bit after the usual structure, dtype, shape and stride comparison (`exact_check`)."""

    strides: bool | str = "significant"


@attrs.frozen
class Custom:
    """The suite's own check: `check(cts, scenario)` returns the function `cts.run` calls on each case."""

    check: Callable[[Any, "Scenario"], Callable[[Any], None]]
    bits: bool = False  # the check compares bit for bit (an exported script of the row's program does so too)


Comparison = Tolerance | Exact | Custom


def _drawn_from_bounds(scenario: "Scenario") -> Callable[[Any], Any]:
    """Cases drawn from the row's bounds alone (`scenario_case.params_strategy`), described by their values."""
    def cases(cts: Any) -> Any:
        def case(values: dict[str, Any]) -> Any:
            what = ", ".join(f"{name}={values[name]!r}" for name in values if name != scenario_case.INPUT)
            return scenario_case.scenario_case(scenario.name, cts.dtype, scenario.params, values,
                                               f"{scenario.name}: {what}")

        return scenario_case.params_strategy(scenario.params).map(case)

    return cases


@attrs.frozen
class Scenario:
    """One row of a suite's table: a scenario's name, parameters, cases, program and comparison."""

    name: str
    params: CaseParams
    program: Callable[..., Any] | None = None  # run on oracle and device; None: a Custom check runs none
    comparison: Comparison = Tolerance()
    cases: Callable[[Any], Any] | None = None  # cts -> a strategy of cases; None: drawn from `params`
    needs: str = ""  # a capability the scenario needs besides the property's (ScenarioItems.needs)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.params, CaseParams):
            raise RegistryError(f"scenario {self.name}: params must be a CaseParams, got {self.params!r}")
        if not isinstance(self.comparison, (Tolerance, Exact, Custom)):
            raise RegistryError(f"scenario {self.name}: comparison must be Tolerance(), Exact() or Custom(check), "
                                f"got {self.comparison!r}")
        if self.program is None and not isinstance(self.comparison, Custom):
            raise RegistryError(f"scenario {self.name}: a {type(self.comparison).__name__} comparison compares a "
                                "program's results: give its program")

    def strategy(self, cts: Any) -> Any:
        return (self.cases or _drawn_from_bounds(self))(cts)

    def values(self, case: Any) -> dict[str, Any]:
        """The case's parameters by name (`scenario_case.named`)."""
        return scenario_case.named(self.params, case.sample)

    def check(self, cts: Any) -> Callable[[Any], None]:
        """The check `cts.run` calls on each case: the row's comparison of the program on oracle and device."""
        if isinstance(self.comparison, Custom):
            return self.comparison.check(cts, self)
        if isinstance(self.comparison, Exact):
            return exact_program_check(cts, self.program, strides=self.comparison.strides)
        return _tolerance_check(cts, self, self.comparison)


def _tolerance_check(cts: Any, scenario: Scenario, tolerance: Tolerance) -> Callable[[Any], None]:
    run = run_program(scenario.program)

    def check(case: Any) -> None:
        calls, said = tolerance.wording(scenario.name, case)
        expected = cts.on_cpu_call(run, case.sample)
        actual = cts.on_device_call(run, case.sample, what=f" ({calls})")
        what = f"{said} [{tolerance.outputs}]" if tolerance.outputs else said

        def compare(oracle: Any) -> None:
            cts.assert_matches(actual, oracle, what=what, strides=tolerance.strides,
                               widen=tolerance.factor(scenario.values(case), cts.dtype),
                               inputs=case.sample if tolerance.inputs else None, normwise=tolerance.normwise,
                               categories=tolerance.categories)

        try:
            compare(expected)
        except AssertionError:
            other = tolerance.alternative(case.sample, expected) if tolerance.alternative is not None else None
            if other is None or not _passes(compare, other):
                raise

    return check


def _passes(compare: Callable[[Any], None], oracle: Any) -> bool:
    try:
        compare(oracle)
    except AssertionError:
        return False
    return True


def table(scenarios: Iterable[Scenario]) -> dict[str, Scenario]:
    """The rows by name; two rows of one name are a declaration error."""
    rows: dict[str, Scenario] = {}
    for row in scenarios:
        if not isinstance(row, Scenario):
            raise RegistryError(f"a scenario suite's rows are Scenario(...), got {row!r}")
        if row.name in rows:
            raise RegistryError(f"scenario {row.name} is declared twice")
        rows[row.name] = row
    return rows


def scenario_items(rows: dict[str, Scenario], dtypes: Iterable[str], **extra: Any) -> ScenarioItems:
    """The registry's `ScenarioItems` of a table: every name, program, bound and need from the rows. The comparison
    said to exported scripts is `bits` when every row is `Exact` (or a `Custom` check that compares bits)."""
    exact = all(isinstance(row.comparison, Exact) or getattr(row.comparison, "bits", False) for row in rows.values())
    return ScenarioItems(tuple(rows), tuple(dtypes),
                         programs={name: row.program for name, row in rows.items() if row.program is not None},
                         comparison="bits" if exact else "tolerance",
                         needs={name: row.needs for name, row in rows.items() if row.needs},
                         params={name: row.params for name, row in rows.items()}, **extra)


def scenario_suite(name: str, *, capability: str, level: int, dtypes: Iterable[str], scenarios: Iterable[Scenario],
                   formats: str = "", **register: Any) -> Callable[[Any], None]:
    """Register property `name` over the table `scenarios` and return its test function (`test_<name>`), to be bound
    to that name in the suite's module (pytest collects it from there). `register` goes to `register_property`
    (compares_values, also_proves, overloads)."""
    rows = table(scenarios)
    items = scenario_items(rows, dtypes, formats=formats)

    def run_scenario(cts: Any) -> None:
        row = rows[cts.item.op]
        cts.run(row.strategy(cts), row.check(cts))

    module = sys._getframe(1).f_globals.get("__name__", __name__)  # the suite's module: its items' origin
    known = {spec.name: spec for spec in registry.properties()}.get(name)
    if known is not None and known.module != module:  # every table's test function shares this file's code
        raise RegistryError(f"property {name} is registered twice: {known.module} and {module}")
    run_scenario.__name__ = run_scenario.__qualname__ = f"test_{name}"
    run_scenario.__module__ = module
    run_scenario.__doc__ = f"The {name} scenarios, each run by its row of the suite's table."
    run_scenario.scenarios = rows  # type: ignore[attr-defined]  # the table, for tests and tools
    return register_property(name, capability=capability, level=level, items=items, **register)(run_scenario)
