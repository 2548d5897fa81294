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
the program's `try`. Where CPU's result records a refusal of the type of that cause
(`torchcts.engine.error_cause`), the case cannot be compared under torch.compile
(`runtime_unavailable`); any other exception stays the device's error.
"""

from __future__ import annotations

from typing import Any, Callable

from torch.utils._pytree import tree_leaves

from torchcts.engine.context import BackendError, MissingKernelError
from torchcts.engine.error_cause import find_cause
from torchcts.engine.targets import CaseUnavailable, compiled_program

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


def device_result(cts: Any, run: Callable[[Any, Any, Any], Any], sample: Any, expected: Any, what: str = "",
                  stands_for: Callable[[Any, BaseException], str | None] = recorded_refusal) -> Any:
    """`cts.on_device_call(run, sample)`; under torch.compile, a refusal (the cause behind the compiler's
    wrappers, never a compile failure) that `stands_for(expected, cause)` finds in CPU's result makes the case
    unavailable: the compiled program cannot record it, it ends the program."""
    try:
        return cts.on_device_call(run, sample, what=what)
    except MissingKernelError:
        raise
    except BackendError as error:
        device_error = error.__cause__
        if cts.target.compile is None or not isinstance(device_error, Exception):
            raise
        cause = find_cause(device_error)
        entry = None if cause.compile_failure else stands_for(expected, cause.error)
        if entry is None:
            raise
        raise CaseUnavailable(f"under torch.compile the program ends at its first refusal, {cause.type_name()}, "
                              f"which CPU's result records ({entry}): the results cannot be compared") from device_error
