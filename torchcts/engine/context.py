"""What a property test runs with: one plan item, its Hypothesis settings, and the two executions.

A property check receives a `CaseContext` (its `cts` argument). It draws cases, runs each on the
CPU oracle and on the device under test, and compares. The context turns what happens into the
outcomes of docs/architecture.md: the oracle rejecting a case is `cpu_contract` for that case (and for the
item if no case got past the oracle); the device raising where CPU did not is a `BackendError`
(outcome `error`); a different answer is an AssertionError (outcome `failed`).

The context holds the item's state and its executions (`on_cpu`, `on_device`); the loop that draws, counts and
shrinks cases is `case_loop`, the comparison of two results `case_compare`, the exceptions `case_errors` and a
case's fingerprint and twins `case_samples` (re-exported here, where suites import them).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, NoReturn

import attrs
import torch
from hypothesis import strategies as st

from torchcts.engine import case_compare, case_loop, cpu_rejection, error_cause, missing_kernels, oracle, ulp_oracle
from torchcts.engine.case_errors import (DEVICE_PHASE, ORACLE_PHASE, BackendError, CaseCrashed,  # noqa: F401
                                         CpuRejects, HarnessDefect, MissingKernelError,
                                         first_line)  # (re-exported: suites import them here)
from torchcts.engine.case_samples import case_fingerprint, contiguous_twin, filled_twin  # noqa: F401  (re-exported)
from torchcts.engine.dispatch_trace import traced
from torchcts.plan.build import PlanItem
from torchcts.engine.targets import ORACLE, CaseUnavailable, Target
from torchcts.strategies import Case, Placement, place
from torchcts.strategies.samples import cpu_pinned_paths
from torchcts.strategies.opinfo_inputs import error_inputs
from torchcts.strategies.seeding import seeded_globals


def item_seed(item_id: str, run_seed: int | None, versions: str) -> int:
    """The Hypothesis seed of an item: from its id and the versions alone, or mixed with the run's seed."""
    text = f"{item_id}|{versions}" if run_seed is None else f"{item_id}|{run_seed}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:16], 16)


@attrs.define
class CaseContext:
    """One plan item being run: the op, dtype, device, settings, and what has happened so far."""

    item: PlanItem
    op: Any
    dtype: torch.dtype
    target: Target
    manifest: Any
    level: int
    max_examples: int
    seed: int
    deadline_ms: float | None = None
    shrink: bool = True
    fingerprints: list[str] = attrs.field(factory=list)
    examples: int = 0
    budget: int = 0  # the examples Hypothesis was allowed (max_examples per `run`); 0: a fixed list of cases
    cpu_contract_cases: int = 0
    cpu_rejections: cpu_rejection.Rejections = attrs.field(factory=cpu_rejection.Rejections)  # what CPU said
    uncompared: set[str] = attrs.field(factory=set)  # fingerprints of cases CPU rejected or the target could not run
    unavailable_cases: int = 0
    metadata_only_cases: int = 0  # cases compared in dtype and shape only (random or uninitialized results)
    unavailable_reason: str = ""
    worst: oracle.Comparison = oracle.Comparison(True)
    replay: list[Any] | None = None  # replaying stored cases: run these instead of drawing
    failing_case: Any = None  # the last case that failed: after shrinking, the minimal one
    failing_comparison: oracle.Comparison | None = None
    targeting: bool = False  # fuzzing: steer Hypothesis toward larger errors (`hypothesis.target`)
    case_timeout_s: float | None = None  # set: every case runs in a forked child (shrinking a crash)
    case_isolation: Any = None  # a CPU-oracle crash rule's `CaseIsolation`: its crash-prone cases run forked
    oracle_crashes: int = 0  # cases whose CPU oracle died or hung in their child (or were not run for it)
    # the verdicts of those deaths by case fingerprint: a heap corruption kills the oracle on one run of a case and
    # not the next, and Hypothesis reruns a case (replaying, shrinking) expecting the same verdict
    oracle_deaths: dict[str, str] = attrs.field(factory=dict)
    in_hypothesis: bool = False
    phase: Any = None  # in a case's child: a shared byte saying whether the CPU oracle is running
    draw: Any = None  # the run's `hypothesis_profile.DrawSettings` (None: Hypothesis's current profile)
    statistics: dict[str, Any] | None = None  # Hypothesis's statistics, when the run asks for them
    ulp: ulp_oracle.UlpTally = attrs.field(factory=ulp_oracle.UlpTally)  # the ULP rule's evidence (docs/oracle.md)
    dispatch_trace: Any = None  # a `dispatch_trace.DispatchTrace` under --trace-dispatch: the device side's overloads
    compile_stats: dict[str, int] | None = None  # a compile suite's dynamo counts, summed over its cases (`count_compile`)
    compiles_at_failure: int | None = None  # compiles_so_far() when a compiled item's first failure was seen
    shrink_stopped: str | None = None  # why shrinking ended early (the record says so: the kept case is not minimal)

    # -- running (case_loop) ---------------------------------------------------------------------

    def run(self, strategy: st.SearchStrategy, check: Callable[[Any], None]) -> None:
        """Run `check` on cases drawn from `strategy` with this item's seed; shrink failures.

        When replaying, `check` runs on the stored cases instead, without Hypothesis."""
        case_loop.run(self, strategy, check)

    def run_each(self, cases: Iterable[Any], check: Callable[[Any], None]) -> None:
        """Run `check` on every case of a fixed list (error inputs), without Hypothesis."""
        case_loop.run_each(self, cases, check)

    def finish(self) -> None:
        """NotRun when no case said anything about the backend (none drawn, all rejected by CPU, none runnable)."""
        case_loop.finish(self)

    # -- executing -----------------------------------------------------------------------------

    @property
    def device(self) -> str:
        return self.target.device

    def on_cpu(self, sample: Any, variant: str | None = None) -> Any:
        """The oracle's result for a sample (on a private copy); CpuRejects if CPU raises."""
        return self.on_cpu_call(lambda cts, s, target: target.call(self.op, variant or self.item.variant,
                                                                   self.place_for(s, target).value), sample)

    def on_device(self, sample: Any, variant: str | None = None) -> Any:
        """The device's result for a sample placed with its exact layout; BackendError if it raises."""
        try:
            with traced(self.dispatch_trace):  # placing the case is device-side work too
                placed = self.place_for(sample, self.target)
        except Exception as exc:  # noqa: BLE001 - copying the case to the device can need a kernel it lacks
            kernel = missing_kernels.find(exc, self.target.device_type)
            if kernel is None:
                raise
            raise MissingKernelError(f"{self.target.describe()} raised {type(exc).__name__} (copying the case to the "
                                     f"device) where CPU did not: {first_line(exc)}", kernel) from exc
        if not placed.faithful:
            raise BackendError("the device changed the case's layout: " + "; ".join(placed.mismatches))
        return self.on_device_call(lambda cts, s, target: target.call(self.op, variant or self.item.variant,
                                                                      placed.value), sample)

    def on_cpu_call(self, run: Callable[[Any, Any, Target], Any], sample: Any) -> Any:
        """`run(self, sample, ORACLE)` for property-specific executions; CpuRejects if CPU raises."""
        if self.phase is not None:
            self.phase[0] = ORACLE_PHASE  # a case's child: dying from here on is the oracle's crash
        try:
            with traced(self.dispatch_trace, suspend=True):
                return run(self, sample, ORACLE)
        except Exception as exc:  # noqa: BLE001 - any oracle exception makes the case moot
            raise CpuRejects(f"{type(exc).__name__}: {exc}") from exc
        finally:
            if self.phase is not None:
                self.phase[0] = DEVICE_PHASE

    def on_device_call(self, run: Callable[[Any, Any, Target], Any], sample: Any, what: str = "") -> Any:
        """`run(self, sample, target)` on the target; CaseUnavailable or BackendError if it raises."""
        try:
            with traced(self.dispatch_trace):
                return run(self, sample, self.target)
        except Exception as exc:  # noqa: BLE001
            why = self.target.unavailable(exc)
            if why:
                raise CaseUnavailable(why) from exc
            self.raise_backend(exc, what)

    def raise_backend(self, exc: Exception, what: str = "") -> NoReturn:
        """The device raised `exc` where CPU did not: MissingKernelError when it names a missing kernel, else
        BackendError."""
        kernel = missing_kernels.find(exc, self.target.device_type)
        if kernel is not None:
            raise MissingKernelError(f"{self.target.describe()} raised {type(exc).__name__}{what} where CPU did "
                                     f"not: {first_line(exc)}", kernel) from exc
        shown = exc
        if self.target.compile_backend is not None:  # an op's refusal torch.compile wrapped: name the cause
            cause = error_cause.find_cause(exc)
            if cause.wrapped:
                raise BackendError(f"{self.target.describe()} raised {cause.type_name()}{what} where CPU did not: "
                                   f"{first_line(cause.error)}") from exc
        raise BackendError(f"{self.target.describe()} raised {type(shown).__name__}{what} where CPU did not: "
                           f"{first_line(shown)}") from exc

    def device_call(self, sample: Any, variant: str | None = None) -> Any:
        """The device's result for a sample, letting its exceptions through (error parity)."""
        with traced(self.dispatch_trace):
            return self.target.call(self.op, variant or self.item.variant, self.place_for(sample, self.target).value)

    def place_for(self, sample: Any, target: Target) -> Placement:
        """A fresh copy of the sample on the target's device, except the arguments the op takes on CPU."""
        pinned = cpu_pinned_paths(self.op, self.dtype) if self.op is not None else frozenset()  # scenario: none
        return place(sample, target.device, keep_on_cpu=pinned)

    def rejected_for_values(self, sample: Any) -> bool:
        """Whether CPU accepts the sample once its tensors hold other values (all 0 or all 1):
        its rejection then depends on data, which a target that sees no values cannot check."""
        for value in (0, 1):
            try:
                self.on_cpu(filled_twin(sample, value))
            except CpuRejects:
                continue
            return True
        return False

    def error_inputs(self) -> list[Any]:
        """The op's OpInfo error inputs, made under a fixed seed (or the stored ones, replaying)."""
        if self.replay is not None:
            return self.replay
        with seeded_globals(self.seed, fill_uninitialized=True):  # `out=` tensors from torch.empty: filled
            return list(error_inputs(self.op, "cpu"))

    # -- comparing (case_compare) ------------------------------------------------------------------

    def assert_matches(self, actual: Any, expected: Any, *, what: str = "", strides: bool | str = False,
                       widen: float = 1.0, inputs: Any = None, normwise: bool | None = None,
                       categories: tuple[str, ...] | None = None) -> None:
        """AssertionError unless the device's result matches the oracle's (values where comparable): the item's
        tolerance, widened for sums of many inputs and floored norm-wise (`case_compare.assert_matches`)."""
        case_compare.assert_matches(self, actual, expected, what=what, strides=strides, widen=widen, inputs=inputs,
                                    normwise=normwise, categories=categories)

    def assert_ulp(self, actual: Any, expected: Any, sample: Any, *,
                   run: Callable[[Any, Any, Target], Any] | None = None, rule: ulp_oracle.UlpRule | None = None,
                   what: str = "") -> None:
        """After `assert_matches` passed: hold both results to the float64 reference (`case_compare.assert_ulp`,
        docs/oracle.md)."""
        case_compare.assert_ulp(self, actual, expected, sample, run=run, rule=rule, what=what)

    # -- the record ---------------------------------------------------------------------------------

    def failing_case_storable(self) -> bool:
        """Whether the kept failing case can be written as a corpus case (an OpInfo sample or error input)."""
        case = self.failing_case
        return isinstance(case, Case) or (hasattr(case, "sample_input") and hasattr(case, "error_type"))

    def failing_sample(self) -> tuple[Any, tuple[str, str] | None, str]:
        """(sample, (error type, regex) for an error input or None, description) of the kept failure."""
        case = self.failing_case
        if isinstance(case, Case):
            return case.sample, None, case.describe()
        return case.sample_input, (case.error_type.__name__, case.error_regex), "OpInfo error input"

    def count_compile(self, **counts: int) -> None:
        """Add a case's torch.compile counts (graphs compiled, graph breaks) to the item's record."""
        totals = self.compile_stats or {}
        self.compile_stats = {name: totals.get(name, 0) + counts.get(name, 0) for name in {*totals, *counts}}

    def record_fields(self) -> dict[str, Any]:
        return {
            "examples": self.examples,
            # the evidence: distinct cases compared with CPU (a case drawn again, or shrunk to, counts once; one the
            # CPU oracle rejected or the target could not run, not at all)
            "distinct_cases": len(set(self.fingerprints) - self.uncompared),
            **({"max_examples": self.budget} if self.budget else {}),
            "cpu_contract_cases": self.cpu_contract_cases,
            "unavailable_cases": self.unavailable_cases,
            "fingerprints": self.fingerprints,
            "max_abs_error": self.worst.max_abs_error,
            "max_rel_error": self.worst.max_rel_error,
            "max_ulp": self.worst.max_ulp,
            **self.ulp.record_fields(),
            **({"metadata_only_cases": self.metadata_only_cases} if self.metadata_only_cases else {}),
            **({"hypothesis_statistics": self.statistics} if self.statistics is not None else {}),
            **({"compile_stats": dict(sorted(self.compile_stats.items()))} if self.compile_stats is not None else {}),
            **({"shrink_stopped": self.shrink_stopped} if self.shrink_stopped else {}),
            # how the target compiled (backend, shape mode, settings): a compiled run's every executed record says so
            **({"compile": self.target.compile.as_json()} if self.target.compile is not None else {}),
        }
