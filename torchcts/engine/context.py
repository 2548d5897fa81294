"""What a property test runs with: one plan item, its Hypothesis settings, and the two executions.

A property check receives a `CaseContext` (its `cts` argument). It draws cases, runs each on the
CPU oracle and on the device under test, and compares. The context turns what happens into the
outcomes of docs/architecture.md: the oracle rejecting a case is `cpu_contract` for that case (and for the
item if no case got past the oracle); the device raising where CPU did not is a `BackendError`
(outcome `error`); a different answer is an AssertionError (outcome `failed`).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, NoReturn

import attrs
import hypothesis
import torch
from torch.utils._pytree import tree_leaves
from hypothesis import strategies as st

from torchcts import interrupts
from torchcts.engine import cpu_rejection, error_cause, missing_kernels, oracle, precision, ulp_oracle
from torchcts.engine.dispatch_trace import traced
from torchcts.engine.hypothesis_profile import collecting_statistics, item_settings, merge_statistics
from torchcts.engine.outcome import NotRun
from torchcts.core.outcomes import Outcome
from torchcts.plan.build import PlanItem
from torchcts.cases.reduce import reduce_case
from torchcts.engine.targets import ORACLE, CaseUnavailable, Target
from torchcts.strategies import Case, Placement, copy_exact, place
from torchcts.strategies.samples import cpu_pinned_paths
from torchcts.strategies.opinfo_inputs import error_inputs
from torchcts.strategies.seeding import numpy_left_to_hypothesis, seeded_globals


ORACLE_PHASE, DEVICE_PHASE = 1, 0  # the shared phase byte of a case's child


class BackendError(Exception):
    """The device raised where the CPU oracle did not (outcome `error`)."""


class MissingKernelError(BackendError):
    """The device has no kernel for an overload the case needs (`kernel`, a `missing_kernels.MissingKernel`):
    outcome `error` of kind missing_kernel. The first case that hits it is the item's case: not shrunk."""

    def __init__(self, message: str, kernel: Any):
        super().__init__(message)
        self.kernel = kernel


class _MissingKernelFound(BaseException):
    """Carries a MissingKernelError out of Hypothesis, which catches Exception (to shrink it) but lets
    other BaseExceptions through at once: no further example, no shrinking. `run` raises `error` again."""

    def __init__(self, error: MissingKernelError):
        super().__init__(str(error))
        self.error = error


class _CompileBudgetSpent(BaseException):
    """Ends Hypothesis's shrinking of a compiled item's failure at its compile budget (BaseException: Hypothesis
    lets it through at once). `run` raises the last failing case's failure again."""


class HarnessDefect(Exception):
    """TorchCTS's own code broke a contract (a suite drew a case its declared bounds refuse): a harness error, never
    the backend's failure."""


class CaseCrashed(Exception):
    """The process running one case died (isolated per case): the case is a crash counterexample."""


class CpuRejects(Exception):
    """The CPU oracle itself raised on a case: the case says nothing about the backend."""


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

    # -- running -------------------------------------------------------------------------------

    def run(self, strategy: st.SearchStrategy, check: Callable[[Any], None]) -> None:
        """Run `check` on cases drawn from `strategy` with this item's seed; shrink failures.

        When replaying, `check` runs on the stored cases instead, without Hypothesis."""
        if self.replay is not None:
            self.run_each(self.replay, check)
            return

        self.budget += self.max_examples  # the item's example budget, next to the distinct cases it ran

        @hypothesis.seed(self.seed)  # TorchCTS's seed, whatever the profile (`hypothesis_profile.item_settings`)
        @item_settings(self.draw, max_examples=self.max_examples, deadline_ms=self.deadline_ms, shrink=self.shrink)
        @hypothesis.given(strategy)
        def property_(case):
            interrupts.check()  # a Ctrl-C or SIGTERM swallowed on the way (a finalizer, a gc callback) stops here
            if self._compile_budget_spent():
                raise _CompileBudgetSpent()
            self._check_within_bounds(case)
            fingerprint = self._count(case)
            self.in_hypothesis = True
            try:
                self._check(check, case, fingerprint)
            except MissingKernelError as exc:
                raise _MissingKernelFound(exc) from exc
            finally:
                self.in_hypothesis = False

        # No example database (`item_settings`), so no key for one: Hypothesis would otherwise derive it from the
        # test function's source for every item (`function_digest`, ~4 ms an item); `find` sets it the same way.
        property_._hypothesis_internal_database_key = None  # type: ignore[attr-defined]
        try:
            with collecting_statistics(self.draw is not None and self.draw.show_statistics, self._note_statistics), \
                    numpy_left_to_hypothesis():  # a case is its draw and its check, each seeded: nothing between
                property_()
        except _MissingKernelFound as found:  # the first case that hit it is the case
            error = found.error
            raise error.with_traceback(error.__traceback__) from error.__cause__
        except _CompileBudgetSpent:  # shrinking stopped: the last case that failed is the item's case
            from torchcts.engine.compile_target import SHRINK_COMPILE_BUDGET

            self.shrink_stopped = (f"the compile budget: {SHRINK_COMPILE_BUDGET} compiles after the first failure; "
                                   "the kept case may not be minimal")
            self._check(check, self.failing_case)
            raise AssertionError(f"the failing case passed when run again under {self.target.describe()}: "
                                 "the failure is flaky") from None
        except BaseException as exc:
            if self.shrink and isinstance(self.failing_case, Case) and isinstance(exc, Exception):
                self._reduce_failure(check, type(exc))
            raise
        self.finish()

    def _check_within_bounds(self, case: Any) -> None:
        """A drawn scenario case must be one its suite's declared bounds accept (`ScenarioItems.params`): the case
        reader refuses any other, so a strategy drawing outside them is TorchCTS's defect, said at once."""
        problem = self._bounds_problem(case)
        if problem is not None:
            raise HarnessDefect(f"TorchCTS defect: {self.item.property} drew a {self.item.op} case outside its "
                                f"declared bounds: {problem[0]}: {problem[1]}")

    def _bounds_problem(self, case: Any) -> tuple[str, str] | None:
        """(field, what is wrong) when a scenario case lies outside its suite's declared bounds; None otherwise
        (within them, no scenario case, or a suite that declares none)."""
        from torchcts.cases.replay_items import stored_values_problem
        from torchcts.plan import registry

        try:
            spec = registry.get(self.item.property)
        except registry.RegistryError:
            return None
        if not isinstance(case, Case) or not spec.scenario or spec.items.case_params(self.item.op) is None:
            return None
        return stored_values_problem(spec, self.item.op, case.sample)

    def _note_statistics(self, stats: dict[str, Any]) -> None:
        self.statistics = merge_statistics(self.statistics, stats)

    def _reduce_failure(self, check: Callable[[Any], None], kind: type) -> None:
        """Cut the shrunk case's dimensions while it fails the same way; raise the smaller case's failure."""
        def still_fails(candidate: Any) -> bool:
            interrupts.check()  # reducing can take many tries: a swallowed Ctrl-C stops it too
            if self._compile_budget_spent():
                return False
            if self._bounds_problem(candidate) is not None:  # a cut case must stay one the case reader accepts
                return False
            try:
                self._call(check, candidate)  # a crash being shrunk: every try in its own child
            except (CpuRejects, CaseUnavailable):
                return False
            except MissingKernelError:  # another finding (its own item's), not the same failure
                return False
            except Exception as exc:  # noqa: BLE001 - the same kind of failure keeps the cut
                return isinstance(exc, kind)
            return False

        original = self.failing_case
        reduced = reduce_case(original, still_fails)
        if reduced is not original:
            self._check(check, reduced)  # raises the smaller case's failure and keeps it

    def _compile_budget_spent(self) -> bool:
        """Whether a compiled item has spent `SHRINK_COMPILE_BUDGET` compiles since its first failure."""
        from torchcts.engine.compile_target import SHRINK_COMPILE_BUDGET, compiles_so_far

        return (self.compiles_at_failure is not None
                and compiles_so_far() - self.compiles_at_failure >= SHRINK_COMPILE_BUDGET)

    def run_each(self, cases: Iterable[Any], check: Callable[[Any], None]) -> None:
        """Run `check` on every case of a fixed list (error inputs), without Hypothesis."""
        for case in cases:
            interrupts.check()
            self._check(check, case, self._count(case))
        self.finish()

    def _check(self, check: Callable[[Any], None], case: Any, fingerprint: str | None = None) -> None:
        self.failing_comparison = None
        try:
            self._call(check, case, fingerprint)
        except CpuRejects as exc:
            self.cpu_contract_cases += 1
            self.cpu_rejections.add(str(exc))
            self.uncompared.add((fingerprint or case_fingerprint(case))[:16])
        except CaseUnavailable as exc:
            self.unavailable_cases += 1
            self.unavailable_reason = str(exc)
            self.uncompared.add((fingerprint or case_fingerprint(case))[:16])
        except BaseException:
            self.failing_case = case  # Hypothesis replays the shrunk case last: it is the one kept
            if getattr(self.target, "compile", None) is not None and self.compiles_at_failure is None:
                from torchcts.engine.compile_target import compiles_so_far

                self.compiles_at_failure = compiles_so_far()
            raise

    def _call(self, check: Callable[[Any], None], case: Any, fingerprint: str | None = None) -> None:
        """`check(case)`, in a forked child when cases are isolated, with the global RNGs seeded
        from the case (`fingerprint`: the case's, when the caller has it already): a random op sees
        the same stream whether the case is drawn, shrunk or replayed, whatever ran before it in the process."""
        with seeded_globals(int((fingerprint or case_fingerprint(case))[:16], 16)):
            timeout = self._case_timeout(case)
            if timeout is None:
                check(case)
            else:
                from torchcts.engine.case_fork import check_forked

                check_forked(self, check, case, timeout)

    def _case_timeout(self, case: Any) -> float | None:
        """The limit of the forked child a case runs in, or None to run it here. A crash-prone case
        (a CPU-oracle crash rule) on a device that cannot fork is not run: CpuRejects with the rule's reason."""
        isolation = self.case_isolation
        if isolation is not None and isolation.isolates(case):
            if not isolation.fork:
                self.oracle_crashes += 1
                raise CpuRejects(f"not run: the CPU oracle is known to crash on such cases: {isolation.reason}")
            return self.case_timeout_s or isolation.timeout_s
        return self.case_timeout_s

    def _count(self, case: Any) -> str:
        """Count the case and note its fingerprint; the fingerprint (its whole hex digest)."""
        fingerprint = case_fingerprint(case)
        self.examples += 1
        self.fingerprints.append(fingerprint[:16])
        return fingerprint

    def finish(self) -> None:
        """NotRun when no case said anything about the backend (none drawn, all rejected by CPU, none runnable)."""
        if not self.examples:
            raise NotRun(Outcome.RUNTIME_UNAVAILABLE, "the op yields no cases for this property and dtype")
        if self.cpu_contract_cases == self.examples:
            if self.oracle_crashes == self.examples:
                why = self.case_isolation.reason if self.case_isolation is not None else "no ledger rule names it"
                raise NotRun(Outcome.CPU_CONTRACT, f"cpu_contract: the CPU oracle crashed on all {self.examples} "
                                                   f"cases ({why})")
            said = self.cpu_rejections.describe()  # the first rejection's type, line and argument
            raise NotRun(Outcome.CPU_CONTRACT, f"cpu_contract: the CPU oracle rejected all {self.examples} cases"
                                               + (f"; {said}" if said else ""))
        if self.cpu_contract_cases + self.unavailable_cases == self.examples:
            raise NotRun(Outcome.RUNTIME_UNAVAILABLE,
                         f"no case can run on {self.target.describe()}: {self.unavailable_reason}")

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
                                     f"device) where CPU did not: {_first_line(exc)}", kernel) from exc
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
            self._raise_backend(exc, what)

    def _raise_backend(self, exc: Exception, what: str = "") -> NoReturn:
        """The device raised `exc` where CPU did not: MissingKernelError when it names a missing kernel, else
        BackendError."""
        kernel = missing_kernels.find(exc, self.target.device_type)
        if kernel is not None:
            raise MissingKernelError(f"{self.target.describe()} raised {type(exc).__name__}{what} where CPU did "
                                     f"not: {_first_line(exc)}", kernel) from exc
        shown = exc
        if self.target.compile_backend is not None:  # an op's refusal torch.compile wrapped: name the cause
            cause = error_cause.find_cause(exc)
            if cause.wrapped:
                raise BackendError(f"{self.target.describe()} raised {cause.type_name()}{what} where CPU did not: "
                                   f"{_first_line(cause.error)}") from exc
        raise BackendError(f"{self.target.describe()} raised {type(shown).__name__}{what} where CPU did not: "
                           f"{_first_line(shown)}") from exc

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

    def assert_matches(self, actual: Any, expected: Any, *, what: str = "", strides: bool | str = False,
                       widen: float = 1.0, inputs: Any = None, normwise: bool | None = None,
                       categories: tuple[str, ...] | None = None) -> None:
        """AssertionError unless the device's result matches the oracle's (values where comparable).

        `categories` (most specific first) pick the manifest's tolerance overrides: default, the op's category
        (`oracle.comparison_categories`); a run under `--compile` reads `compile` above them.

        With `inputs` (the case's sample), the tolerance widens for results that each sum many
        inputs (`oracle.accumulation_widening`) and, for ops that are not elementwise (or with
        `normwise=True`: a scenario that resamples or averages), gets a norm-wise absolute floor and the
        claimed dtype's accumulation bound sqrt(n) * eps * sum|x| (`oracle.normwise_floor`).
        """
        name = self.op.name if self.op is not None else self.item.op  # a scenario item: the scenario's name
        # a scenario's name is no op name: the op tables (random ops, `empty`) say nothing about it ("subnormal_*")
        values = self.target.compares_values and (self.op is None or oracle.values_comparable(name))
        if inputs is not None:
            widen *= oracle.accumulation_widening([inputs.input, list(inputs.args), dict(inputs.kwargs)], expected)
        if categories is None:
            categories = oracle.comparison_categories(self.op.name if self.op is not None else None)
        if self.target.compile_backend is not None and "compile" not in categories:
            categories = ("compile", *categories)
        tol = oracle.tolerance(_result_dtype(self.dtype, expected), self.op, self.manifest,
                               self.target.device_type, categories).widened(widen)
        if normwise is None:
            normwise = oracle.category(name) != "elementwise"
        case_inputs = [inputs.input, list(inputs.args), dict(inputs.kwargs)] if inputs is not None else None
        if inputs is not None and normwise:
            tol = oracle.normwise_floor(tol, expected, case_inputs, oracle.category(name))
        elif inputs is not None and precision.capped_default(tol):  # an "elementwise" op that sums (scatter_add,
            tol = oracle.accumulation_floor(tol, expected, case_inputs, oracle.category(name))  # pooling): its bound
        try:
            # a scenario program's plain values are metadata it observed (strides, `_is_view()`): shown by every target
            result = oracle.compare(actual, expected, tol, values=values, strides=strides,
                                    plain=values or self.op is None)
        except Exception as exc:  # noqa: BLE001 - reading the device's result (metadata, copy to CPU) raised
            self._raise_backend(exc, " (reading its result back to CPU)")
        if not result.ok:
            self.failing_comparison = result
            prefix = f"{what}: " if what else ""
            raise AssertionError(f"{prefix}{self.target.describe()} differs from CPU: {result.message}")
        if result.max_abs_error > self.worst.max_abs_error or result.max_ulp > self.worst.max_ulp:
            self.worst = result
        if self.targeting and self.in_hypothesis:
            hypothesis.target(float(min(result.max_ulp, 2**60)), label=f"ulp {what}")

    def assert_ulp(self, actual: Any, expected: Any, sample: Any, *, run: Callable[[Any, Any, Target], Any] | None = None,
                   rule: ulp_oracle.UlpRule | None = None, what: str = "") -> None:
        """After `assert_matches` passed: hold both results to the float64 reference (`ulp_oracle`, docs/oracle.md).

        The reference is `run` (default: the item's op on the upcast sample as it is) on CPU with the sample's floating
        tensors upcast to float64; `rule` defaults to the op's in `ulp_oracle.RULES`. AssertionError where a
        correctly rounded op is less accurate on the device than on CPU; the errors of both go to the record.
        Nothing for targets that show no values, random ops, integer items, or a reference CPU cannot compute."""
        name = self.op.name if self.op is not None else self.item.op
        if not (self.target.compares_values and (self.op is None or oracle.values_comparable(name))
                and ulp_oracle.measurable(self.dtype)):
            return
        if rule is None:
            from torchcts.plan.catalog import op_id

            rule = ulp_oracle.rule_for(op_id(self.op) if self.op is not None else self.item.op, self.dtype)
        if rule.applies is not None and not rule.applies(sample):
            rule = ulp_oracle.RECORD_ONLY
        if not ulp_oracle.needs_reference_run(self.dtype):  # float64 items: CPU's result is the reference
            if rule.kind != ulp_oracle.CORRECTLY_ROUNDED:
                return
            # CPU's own result may be one rounding off (as its float32 sqrt is): a correctly rounded device then
            # differs from it by up to one ULP, not half
            rule = attrs.evolve(rule, slack=max(rule.slack, 0.5))
            reference = expected
        else:
            run = run or (lambda cts, s, target: target.call(self.op, self.item.variant,
                                                             self.place_for(s, target).value))  # fresh copies
            try:
                reference = self.on_cpu_call(run, ulp_oracle.float64_sample(sample))
            except CpuRejects:  # the op rejects float64 (or the upcast sample): no reference for this case
                return
        result = ulp_oracle.compare(actual, expected, reference, rule, call=what)
        self.ulp.add(rule, result)
        if not result.ok:
            self.failing_comparison = oracle.Comparison(False, result.message)
            raise AssertionError(f"{self.target.describe()} differs from CPU: {result.message}")
        if self.targeting and self.in_hypothesis and result.measured:
            hypothesis.target(min(result.device_error - result.cpu_error, 2.0**60), label=f"ulp excess {what}")

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


def _result_dtype(dtype: torch.dtype, expected: Any) -> torch.dtype:
    """The dtype the tolerance is for: the first floating result's (fft of int32, a float16 item promoted to
    float64 by its partner, a float32 item cast to float16), else the item's."""
    for leaf in tree_leaves(expected):
        if isinstance(leaf, torch.Tensor) and (leaf.is_floating_point() or leaf.is_complex()):
            return leaf.dtype
    return dtype


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else ""


def case_fingerprint(case: Any) -> str:
    """A case's fingerprint: a strategies Case's own, an OpInfo ErrorInput's, or that of a scenario's drawn value."""
    if isinstance(case, Case):
        return case.fingerprint
    from torchcts.strategies import fingerprint

    if hasattr(case, "sample_input") and hasattr(case, "error_type"):  # an OpInfo ErrorInput
        return fingerprint(case.sample_input, case.error_type.__name__)
    return fingerprint(case)


def filled_twin(sample: Any, value: int) -> Any:
    """The sample with every dense tensor's elements set to `value`: same metadata, other data."""
    def filled(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.is_nested:
            return t
        twin = copy_exact(t)
        with torch.no_grad():
            twin.fill_(value)
        return twin

    return sample.transform(filled)


def contiguous_twin(sample: Any) -> Any:
    """The sample with every dense tensor copied contiguous: same values, plain layout."""
    def plain(t: Any) -> Any:  # SampleInput.transform also hands over dtypes
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.is_nested:
            return t
        return copy_exact(t.contiguous())

    return sample.transform(plain)
