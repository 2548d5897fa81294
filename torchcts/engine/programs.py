"""Scenario programs: a suite's torch-only function, run on CPU and on the device; the device must give CPU's result.

A tensor-semantics suite (views, copies, promotion, ...) states each scenario as a *program*: a
module-level function `program(input, *args, **kwargs)` that uses only `torch` (and `math`), takes
the case's SampleInput (tensors placed on the target's device, plain values as they are) and returns
what it observes: tensors (compared in dtype, shape, strides where asked, and values within the
tolerance) and plain values (metadata such as strides, `_is_view()`, storage equality: compared
exactly). Because the program is the whole scenario, a stored case replays by running it again, and
`torchcts replay --export-script` writes its source into a torch-only script. Under
`--compile B` the device side runs the program through torch.compile(backend=B).
"""

from __future__ import annotations

from typing import Any, Callable

from torchcts.engine.targets import compiled_program

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
        actual = cts.on_device_call(run, case.sample, what=f" ({label})")
        cts.assert_matches(actual, expected, what=label, strides=strides, widen=widen)

    return check
