"""One case in a forked child (`CaseContext` with a per-case limit): a crash or hang costs the case, not the run.

The child runs the check and answers what it raised; the parent raises the same kind of exception
(an exception other than the engine's own and AssertionError comes back as `CaseError`: a harness
error, as the same exception raised in one process is).
A child that dies or hangs is a `CaseCrashed` finding, unless it did so while the CPU oracle ran:
the child sets a shared byte around `on_cpu_call`, so such a death is the oracle's (`CpuRejects`,
with the CPU-oracle crash rule's reason), not the backend's.
A missing kernel comes back as the same `MissingKernelError` (its overload and dispatch key), and
the warnings the child recorded are added to the item's (`item_warnings.merge`).
An oracle death is remembered per case: a rerun of that case gets the same verdict without running.
"""

from __future__ import annotations

import mmap
from typing import TYPE_CHECKING, Any, Callable

from torchcts.engine import item_warnings
from torchcts.engine.case_errors import (DEVICE_PHASE, ORACLE_PHASE, BackendError, CaseCrashed, CaseError,
                                         CpuRejects, MissingKernelError)
from torchcts.engine.case_samples import case_fingerprint
from torchcts.engine.missing_kernels import MissingKernel
from torchcts.engine.targets import CaseUnavailable
from torchcts.isolation.fork import AUTOGRAD_AFTER_FORK, run_forked

if TYPE_CHECKING:
    from torchcts.engine.context import CaseContext


def check_forked(context: CaseContext, check: Callable[[Any], None], case: Any, timeout_s: float) -> None:
    """`check(case)` in a forked child; its outcome raised here as the same kind of exception.

    A child that dies or hangs is CaseCrashed, unless it did so while the CPU oracle ran (a shared
    byte the child sets around `on_cpu_call` says so): then the case is CpuRejects, with the
    CPU-oracle crash rule's reason when one isolated it."""
    fingerprint = case_fingerprint(case)
    if fingerprint in context.oracle_deaths:  # the oracle died on this case before: the same verdict, not a rerun
        context.oracle_crashes += 1
        raise CpuRejects(context.oracle_deaths[fingerprint])
    phase = mmap.mmap(-1, 1)  # anonymous and shared: the child's writes are seen here after it dies
    phase[0] = DEVICE_PHASE

    def work() -> dict[str, str]:
        context.phase = phase
        answer = _case_answer(check, case)
        if context.dispatch_trace is not None:  # --trace-dispatch: what the child dispatched comes back
            answer["dispatched"] = context.dispatch_trace.names()
        return answer

    try:
        result = run_forked(work, timeout_s)
        oracle_died = phase[0] == ORACLE_PHASE
    finally:
        phase.close()
    if result.status != "finished":
        if oracle_died:
            context.oracle_crashes += 1
            why = context.case_isolation.reason if context.case_isolation is not None else "no rule names it"
            verdict = (f"the CPU oracle {'crashed' if result.status == 'crashed' else 'hung'} on the case "
                       f"({result.describe()}): {why}")
            context.oracle_deaths[fingerprint] = verdict
            raise CpuRejects(verdict)
        raise CaseCrashed(f"{result.describe()}\n{result.output_tail}")
    item_warnings.merge(result.answer.get("warnings"))
    if context.dispatch_trace is not None:
        context.dispatch_trace.add(result.answer.get("dispatched"))
    kind, message = result.answer["kind"], result.answer["message"]
    isolation = context.case_isolation
    if AUTOGRAD_AFTER_FORK in message and isolation is not None and isolation.isolates(case):
        # torch refused autograd in the child (this process started autograd's device threads): the crash-prone
        # case could not run isolated, so, as on a device that cannot fork, it is not run (never CPU's rejection)
        context.oracle_crashes += 1
        raise CpuRejects("not run: torch refuses autograd in a forked child once autograd's device threads started; "
                         f"the CPU oracle is known to crash on such cases: {isolation.reason}")
    if kind == "missing_kernel":
        raise MissingKernelError(message, MissingKernel(**result.answer["missing_kernel"]))
    if kind == "error":
        raise CaseError(result.answer["type"], message)
    raised = {"cpu_rejects": CpuRejects, "unavailable": CaseUnavailable, "backend_error": BackendError,
              "failed": AssertionError}.get(kind)
    if raised is not None:
        raise raised(message)


def _case_answer(check: Callable[[Any], None], case: Any) -> dict[str, Any]:
    """What `check(case)` did, as the child's JSON answer, with the warnings it raised."""
    with item_warnings.capture() as log:
        answer = _checked(check, case)
    return {**answer, "warnings": log.as_json()}


def _checked(check: Callable[[Any], None], case: Any) -> dict[str, Any]:
    try:
        check(case)
    except CpuRejects as exc:
        return {"kind": "cpu_rejects", "message": str(exc)}
    except CaseUnavailable as exc:
        return {"kind": "unavailable", "message": str(exc)}
    except MissingKernelError as exc:
        return {"kind": "missing_kernel", "message": str(exc), "missing_kernel": exc.kernel.as_json()}
    except BackendError as exc:
        return {"kind": "backend_error", "message": str(exc)}
    except AssertionError as exc:  # a failed comparison
        return {"kind": "failed", "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a harness error, to raise in the parent as CaseError
        return {"kind": "error", "type": type(exc).__name__, "message": str(exc)}
    return {"kind": "passed", "message": ""}
