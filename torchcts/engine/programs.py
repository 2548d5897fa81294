"""Scenario programs: a suite's torch-only function, run on CPU and on the device; the device must give CPU's result.

A tensor-semantics suite (views, copies, promotion, ...) states each scenario as a *program*: a
module-level function `program(input, *args, **kwargs)` that uses only `torch` (and `math`), takes
the case's SampleInput (tensors placed on the target's device, plain values as they are) and returns
what it observes: tensors (compared in dtype, shape, strides where asked, and values within the
tolerance) and plain values (metadata such as strides, `_is_view()`, storage equality: compared
exactly). Because the program is the whole scenario, a stored case replays by running it again, and
`torchcts replay --export-script` writes its source into a torch-only script. Under
`--compile B` the device side runs the program through torch.compile(backend=B).

A program that records an op's refusal (catches it and returns the error type's name, as
`overlap_rules` and the dtype-semantics programs do) cannot do so under torch.compile: dynamo raises
the refusal while tracing (wrapped: `TorchRuntimeError`), or the compiled graph when it runs, outside
the program's `try`. Only the same refusal is excused: where CPU's own run of the program under
torch.compile(backend="eager") (dynamo alone: same tracing, same program structure, the target's
shape mode) raises a cause (`torchcts.engine.error_cause`) of the same type with the same first
message line, and CPU's eager result records a refusal of that type, the case cannot be compared
under torch.compile (`runtime_unavailable`). A compile failure, a refusal where CPU under dynamo
returns, or another refusal than CPU's stays the device's error.
"""

from __future__ import annotations

from typing import Any, Callable

from torch.utils._pytree import tree_leaves

from torchcts.engine.context import BackendError, CpuRejects, MissingKernelError
from torchcts.engine.error_cause import ErrorCause, find_cause
from torchcts.engine.targets import ORACLE_DEVICE, CaseUnavailable, Target, compiled_program

Program = Callable[..., Any]


def run_program(program: Program) -> Callable[[Any, Any, Any], Any]:
    """`run(cts, sample, target)`: the program on a fresh copy of the sample placed on the target."""
    def run(cts: Any, sample: Any, target: Any) -> Any:
        placed = cts.place_for(sample, target).value
        run_ = program if target.compile is None else compiled_program(program, target.compile)
        return run_(placed.input, *placed.args, **placed.kwargs)

    return run


def program_check(cts: Any, program: Program, *, strides: bool | str = True, widen: float = 1.0,
                  what: str = "") -> Callable[[Any], None]:
    """A check for `cts.run(cases, check)`: the program's result on the device equals its result on CPU.

    A CPU that raises makes the case `cpu_contract`; a device that raises where CPU did not is an
    `error` (a missing kernel named); a different result is a failure naming what differed."""
    run = run_program(program)
    label = what or program.__name__

    def check(case: Any) -> None:
        expected = cts.on_cpu_call(run, case.sample)
        actual = device_result(cts, run, case.sample, expected, what=f" ({label})")
        cts.assert_matches(actual, expected, what=label, strides=strides, widen=widen)

    return check


# torch's specific errors, which refine its generic RuntimeError (as the errors property allows them)
_REFINEMENTS_OF_RUNTIME_ERROR = (IndexError, ValueError, TypeError)


def recorded_refusal(expected: Any, error: BaseException) -> str | None:
    """The entry of CPU's program result that records a refusal of `error`'s type (a string that is the type's
    name or ends with it: "RuntimeError", "raises ValueError"), or None. Where CPU's is RuntimeError, torch's
    specific errors count too."""
    names = {cls.__name__ for cls in type(error).__mro__ if cls not in (BaseException, Exception, object)}
    for leaf in tree_leaves(expected):
        if not isinstance(leaf, str) or not leaf:
            continue
        recorded = leaf.rsplit(" ", 1)[-1]
        if recorded in names or (recorded == "RuntimeError" and isinstance(error, _REFINEMENTS_OF_RUNTIME_ERROR)):
            return leaf
    return None


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0]


def same_refusal(cause: ErrorCause, reference: ErrorCause | None) -> bool:
    """Whether the device's cause is the refusal CPU under dynamo alone raised: the same type and first message
    line (neither a compile failure)."""
    return (reference is not None and not reference.compile_failure and not cause.compile_failure
            and type(reference.error) is type(cause.error) and first_line(reference.error) == first_line(cause.error))


def cpu_refusal(expected: Any, cause: ErrorCause, reference: ErrorCause | None) -> str | None:
    """The entry of CPU's result the device's refusal stands for: CPU under dynamo alone raises the same refusal
    (`same_refusal`) and CPU's eager result records a refusal of its type (`recorded_refusal`); else None."""
    return recorded_refusal(expected, cause.error) if same_refusal(cause, reference) else None


def dynamo_reference(cts: Any, run: Callable[[Any, Any, Any], Any], sample: Any) -> ErrorCause | None:
    """How CPU's run of the program under torch.compile(backend="eager") ends (dynamo alone; the target's shape
    mode and fullgraph): the cause it raises, or None where it returns."""
    spec = cts.target.compile.evolve(backend="eager", mode=None, options=())
    reference = Target(ORACLE_DEVICE, spec)
    try:
        cts.on_cpu_call(lambda cts_, sample_, _: run(cts_, sample_, reference), sample)
    except CpuRejects as rejected:
        raised = rejected.__cause__
        return find_cause(raised) if isinstance(raised, Exception) else None
    return None


Refusal = Callable[[Any, ErrorCause, ErrorCause | None], str | None]  # (expected, cause, reference) -> entry


def device_result(cts: Any, run: Callable[[Any, Any, Any], Any], sample: Any, expected: Any, what: str = "",
                  stands_for: Refusal = cpu_refusal) -> Any:
    """`cts.on_device_call(run, sample)`; under torch.compile, a refusal (the cause behind the compiler's
    wrappers, never a compile failure) that `stands_for(expected, cause, reference)` finds in CPU's result makes
    the case unavailable: the compiled program cannot record it, it ends the program. `reference` is CPU's own
    run under dynamo alone (`dynamo_reference`)."""
    try:
        return cts.on_device_call(run, sample, what=what)
    except MissingKernelError:
        raise
    except BackendError as error:
        device_error = error.__cause__
        if cts.target.compile is None or not isinstance(device_error, Exception):
            raise
        cause = find_cause(device_error)
        if cause.compile_failure:
            raise
        entry = stands_for(expected, cause, dynamo_reference(cts, run, sample))
        if entry is None:
            raise
        raise CaseUnavailable(f"under torch.compile the program ends at its first refusal, {cause.type_name()}, "
                              f"which CPU under dynamo alone raises too and CPU's result records ({entry}): the "
                              f"results cannot be compared") from device_error
