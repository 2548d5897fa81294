"""How a `CaseContext` runs its cases: drawing them with Hypothesis (or replaying stored ones), counting and
fingerprinting each, seeding and isolating each call, cutting a failure smaller, and the item's verdict when no case
compared anything (`finish`).

Apart from the context's executions (`on_cpu`, `on_device`) and comparisons (`case_compare`): this is the loop around
a check, they are what a check does. `CaseContext.run`, `run_each` and `finish` delegate here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

import hypothesis
from hypothesis import strategies as st

from torchcts import interrupts
from torchcts.cases.reduce import reduce_case
from torchcts.cases.replay_items import stored_values_problem
from torchcts.engine.case_errors import (CompileBudgetSpent, CpuRejects, HarnessDefect, MissingKernelError,
                                         MissingKernelFound)
from torchcts.engine.case_fork import check_forked
from torchcts.engine.case_samples import case_fingerprint
from torchcts.engine import compile_target  # its SHRINK_COMPILE_BUDGET read when used (tests set it)
from torchcts.engine.hypothesis_profile import collecting_statistics, item_settings, merge_statistics
from torchcts.engine.outcome import NotRun
from torchcts.engine.targets import CaseUnavailable
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.strategies import Case
from torchcts.strategies.seeding import numpy_left_to_hypothesis, seeded_globals

if TYPE_CHECKING:  # annotations only: context imports this module
    from torchcts.engine.context import CaseContext


def run(cts: CaseContext, strategy: st.SearchStrategy, check: Callable[[Any], None]) -> None:
    """Run `check` on cases drawn from `strategy` with the item's seed; shrink failures.

    When replaying, `check` runs on the stored cases instead, without Hypothesis."""
    if cts.replay is not None:
        run_each(cts, cts.replay, check)
        return

    cts.budget += cts.max_examples  # the item's example budget, next to the distinct cases it ran

    @hypothesis.seed(cts.seed)  # TorchCTS's seed, whatever the profile (`hypothesis_profile.item_settings`)
    @item_settings(cts.draw, max_examples=cts.max_examples, deadline_ms=cts.deadline_ms, shrink=cts.shrink)
    @hypothesis.given(strategy)
    def property_(case):
        interrupts.check()  # a Ctrl-C or SIGTERM swallowed on the way (a finalizer, a gc callback) stops here
        if compile_budget_spent(cts):
            raise CompileBudgetSpent()
        check_within_bounds(cts, case)
        fingerprint = count_case(cts, case)
        cts.in_hypothesis = True
        try:
            check_case(cts, check, case, fingerprint)
        except MissingKernelError as exc:
            raise MissingKernelFound(exc) from exc
        finally:
            cts.in_hypothesis = False

    # No example database (`item_settings`), so no key for one: Hypothesis would otherwise derive it from the
    # test function's source for every item (`function_digest`, ~4 ms an item); `find` sets it the same way.
    property_._hypothesis_internal_database_key = None  # type: ignore[attr-defined]
    try:
        with collecting_statistics(cts.draw is not None and cts.draw.show_statistics,
                                   lambda stats: _note_statistics(cts, stats)), \
                numpy_left_to_hypothesis():  # a case is its draw and its check, each seeded: nothing between
            property_()
    except MissingKernelFound as found:  # the first case that hit it is the case
        error = found.error
        raise error.with_traceback(error.__traceback__) from error.__cause__
    except CompileBudgetSpent:  # shrinking stopped: the last case that failed is the item's case
        cts.shrink_stopped = (f"the compile budget: {compile_target.SHRINK_COMPILE_BUDGET} compiles after the first "
                              "failure; the kept case may not be minimal")
        check_case(cts, check, cts.failing_case)
        raise AssertionError(f"the failing case passed when run again under {cts.target.describe()}: "
                             "the failure is flaky") from None
    except BaseException as exc:
        if cts.shrink and isinstance(cts.failing_case, Case) and isinstance(exc, Exception):
            _reduce_failure(cts, check, type(exc))
        raise
    finish(cts)


def check_within_bounds(cts: CaseContext, case: Any) -> None:
    """A drawn scenario case must be one its suite's declared bounds accept (`ScenarioItems.params`): the case
    reader refuses any other, so a strategy drawing outside them is TorchCTS's defect, said at once."""
    problem = bounds_problem(cts, case)
    if problem is not None:
        raise HarnessDefect(f"TorchCTS defect: {cts.item.property} drew a {cts.item.op} case outside its "
                            f"declared bounds: {problem[0]}: {problem[1]}")


def bounds_problem(cts: CaseContext, case: Any) -> tuple[str, str] | None:
    """(field, what is wrong) when a scenario case lies outside its suite's declared bounds; None otherwise
    (within them, no scenario case, or a suite that declares none)."""
    try:
        spec = registry.get(cts.item.property)
    except registry.RegistryError:
        return None
    if not isinstance(case, Case) or not spec.scenario or spec.items.case_params(cts.item.op) is None:
        return None
    return stored_values_problem(spec, cts.item.op, case.sample)


def _note_statistics(cts: CaseContext, stats: dict[str, Any]) -> None:
    cts.statistics = merge_statistics(cts.statistics, stats)


def _reduce_failure(cts: CaseContext, check: Callable[[Any], None], kind: type) -> None:
    """Cut the shrunk case's dimensions while it fails the same way; raise the smaller case's failure."""
    def still_fails(candidate: Any) -> bool:
        interrupts.check()  # reducing can take many tries: a swallowed Ctrl-C stops it too
        if compile_budget_spent(cts):
            return False
        if bounds_problem(cts, candidate) is not None:  # a cut case must stay one the case reader accepts
            return False
        try:
            call_case(cts, check, candidate)  # a crash being shrunk: every try in its own child
        except (CpuRejects, CaseUnavailable):
            return False
        except MissingKernelError:  # another finding (its own item's), not the same failure
            return False
        except Exception as exc:  # noqa: BLE001 - the same kind of failure keeps the cut
            return isinstance(exc, kind)
        return False

    original = cts.failing_case
    reduced = reduce_case(original, still_fails)
    if reduced is not original:
        check_case(cts, check, reduced)  # raises the smaller case's failure and keeps it


def compile_budget_spent(cts: CaseContext) -> bool:
    """Whether a compiled item has spent `SHRINK_COMPILE_BUDGET` compiles since its first failure."""
    return (cts.compiles_at_failure is not None
            and compile_target.compiles_so_far() - cts.compiles_at_failure >= compile_target.SHRINK_COMPILE_BUDGET)


def run_each(cts: CaseContext, cases: Iterable[Any], check: Callable[[Any], None]) -> None:
    """Run `check` on every case of a fixed list (error inputs), without Hypothesis."""
    for case in cases:
        interrupts.check()
        check_case(cts, check, case, count_case(cts, case))
    finish(cts)


def check_case(cts: CaseContext, check: Callable[[Any], None], case: Any, fingerprint: str | None = None) -> None:
    """`check(case)` with its verdict noted: a CPU rejection or an unavailable case is counted and uncompared; a
    failure keeps the case as the item's failing case (and, compiled, the compile count it was first seen at)."""
    cts.failing_comparison = None
    try:
        call_case(cts, check, case, fingerprint)
    except CpuRejects as exc:
        cts.cpu_contract_cases += 1
        cts.cpu_rejections.add(str(exc))
        cts.uncompared.add((fingerprint or case_fingerprint(case))[:16])
    except CaseUnavailable as exc:
        cts.unavailable_cases += 1
        cts.unavailable_reason = str(exc)
        cts.uncompared.add((fingerprint or case_fingerprint(case))[:16])
    except BaseException:
        cts.failing_case = case  # Hypothesis replays the shrunk case last: it is the one kept
        if getattr(cts.target, "compile", None) is not None and cts.compiles_at_failure is None:
            cts.compiles_at_failure = compile_target.compiles_so_far()
        raise


def call_case(cts: CaseContext, check: Callable[[Any], None], case: Any, fingerprint: str | None = None) -> None:
    """`check(case)`, in a forked child when cases are isolated, with the global RNGs seeded
    from the case (`fingerprint`: the case's, when the caller has it already): a random op sees
    the same stream whether the case is drawn, shrunk or replayed, whatever ran before it in the process."""
    with seeded_globals(int((fingerprint or case_fingerprint(case))[:16], 16)):
        timeout = case_timeout(cts, case)
        if timeout is None:
            check(case)
        else:

            check_forked(cts, check, case, timeout)


def case_timeout(cts: CaseContext, case: Any) -> float | None:
    """The limit of the forked child a case runs in, or None to run it here. A crash-prone case
    (a CPU-oracle crash rule) on a device that cannot fork is not run: CpuRejects with the rule's reason."""
    isolation = cts.case_isolation
    if isolation is not None and isolation.isolates(case):
        if not isolation.fork:
            cts.oracle_crashes += 1
            raise CpuRejects(f"not run: the CPU oracle is known to crash on such cases: {isolation.reason}")
        return cts.case_timeout_s or isolation.timeout_s
    return cts.case_timeout_s


def count_case(cts: CaseContext, case: Any) -> str:
    """Count the case and note its fingerprint; the fingerprint (its whole hex digest)."""
    fingerprint = case_fingerprint(case)
    cts.examples += 1
    cts.fingerprints.append(fingerprint[:16])
    return fingerprint


def finish(cts: CaseContext) -> None:
    """NotRun when no case said anything about the backend (none drawn, all rejected by CPU, none runnable)."""
    if not cts.examples:
        raise NotRun(Outcome.RUNTIME_UNAVAILABLE, "the op yields no cases for this property and dtype")
    if cts.cpu_contract_cases == cts.examples:
        if cts.oracle_crashes == cts.examples:
            why = cts.case_isolation.reason if cts.case_isolation is not None else "no ledger rule names it"
            raise NotRun(Outcome.CPU_CONTRACT, f"cpu_contract: the CPU oracle crashed on all {cts.examples} "
                                               f"cases ({why})")
        said = cts.cpu_rejections.describe()  # the first rejection's type, line and argument
        raise NotRun(Outcome.CPU_CONTRACT, f"cpu_contract: the CPU oracle rejected all {cts.examples} cases"
                                           + (f"; {said}" if said else ""))
    if cts.cpu_contract_cases + cts.unavailable_cases == cts.examples:
        raise NotRun(Outcome.RUNTIME_UNAVAILABLE,
                     f"no case can run on {cts.target.describe()}: {cts.unavailable_reason}")
