"""The exceptions a case's run raises, by what they mean for the outcome (docs/architecture.md).

Kept apart from `CaseContext` so that suites, the fork child and the outcome classifier name them without the
context's machinery; `torchcts.engine.context` re-exports them where callers import them today.
"""

from __future__ import annotations

from typing import Any


class BackendError(Exception):
    """The device raised where the CPU oracle did not (outcome `error`)."""


class MissingKernelError(BackendError):
    """The device has no kernel for an overload the case needs (`kernel`, a `missing_kernels.MissingKernel`):
    outcome `error` of kind missing_kernel. The first case that hits it is the item's case: not shrunk."""

    def __init__(self, message: str, kernel: Any):
        super().__init__(message)
        self.kernel = kernel


class MissingKernelFound(BaseException):
    """Carries a MissingKernelError out of Hypothesis, which catches Exception (to shrink it) but lets
    other BaseExceptions through at once: no further example, no shrinking. `run` raises `error` again."""

    def __init__(self, error: MissingKernelError):
        super().__init__(str(error))
        self.error = error


class CompileBudgetSpent(BaseException):
    """Ends Hypothesis's shrinking of a compiled item's failure at its compile budget (BaseException: Hypothesis
    lets it through at once). `run` raises the last failing case's failure again."""


class HarnessDefect(Exception):
    """TorchCTS's own code broke a contract (a suite drew a case its declared bounds refuse): a harness error, never
    the backend's failure."""


class CaseCrashed(Exception):
    """The process running one case died (isolated per case): the case is a crash counterexample."""


class CpuRejects(Exception):
    """The CPU oracle itself raised on a case: the case says nothing about the backend."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message ("" for none): what a one-line finding quotes."""
    text = str(exc)
    return text.splitlines()[0] if text else ""


ORACLE_PHASE, DEVICE_PHASE = 1, 0  # the shared phase byte of a case's child: whose code it ran when it died


class CaseError(RuntimeError):
    """A case's child raised an exception the engine does not classify by type (a TypeError in the
    check): the parent's stand-in for it, `<Type>: <message>`, classified as a harness error."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name, self.message = type_name, message
