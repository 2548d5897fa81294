"""A scenario check for exact semantics (views, copies): the device's result equals CPU's bit for bit.

Views and copies move bits; they do not compute. A copy one ulp off, a -0.0 turned into 0.0, or a
view reading the element next door is a bug even where it sits inside a floating tolerance, so
after the usual comparison (structure, dtypes, shapes, strides, values) every tensor the program
returns must hold CPU's bits (NaNs only in the same places: payloads are not required).
Targets that hold no values (meta) get the metadata comparison only.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten

from torchcts.engine.programs import Program, device_result, run_program
from torchcts.strategies import same_bits


def exact_program_check(cts: Any, program: Program, *, strides: bool | str = "significant") -> Callable[[Any], None]:
    """A check for `cts.run(cases, check)`: the program's result on the device equals CPU's bit for bit.

    Result tensors' strides are compared on dimensions longer than 1 (`strides`): a size-1
    dimension's stride means nothing (meta's `empty_like` gives another one than CPU's). Strides a
    program returns as values (a view's `stride()`) compare exactly.

    CPU raising makes the case `cpu_contract`, the device raising where CPU did not an `error` (under
    torch.compile, CPU's own refusal, raised by CPU's program under dynamo alone too and recorded in CPU's
    result, makes it unavailable: `programs.device_result`),
    and any difference a failure naming the output, its multi-index and the drawn case."""
    run = run_program(program)

    def check(case: Any) -> None:
        expected = cts.on_cpu_call(run, case.sample)
        actual = device_result(cts, run, case.sample, expected, what=f" ({program.__name__})")
        what = f"{program.__name__} [{'; '.join(case.transforms)}]" if case.transforms else program.__name__
        cts.assert_matches(actual, expected, what=what, strides=strides)
        if cts.target.compares_values:
            assert_same_bits(actual, expected, what)

    return check


def assert_same_bits(actual: Any, expected: Any, what: str) -> None:
    """AssertionError naming the first element whose bits differ (outputs of equal structure and shapes)."""
    got_leaves, _ = tree_flatten(actual)
    want_leaves, _ = tree_flatten(expected)
    for index, (got, want) in enumerate(zip(got_leaves, want_leaves)):
        if not isinstance(want, torch.Tensor) or want.layout != torch.strided or want.is_nested:
            continue
        if same_bits(got, want):
            continue
        where = f"output {index}" if len(want_leaves) > 1 else "output"
        raise AssertionError(f"{what}: device differs from CPU bit for bit: {where}{_first_difference(got, want)}")


def _first_difference(got: torch.Tensor, want: torch.Tensor) -> str:
    """`[1, 2] = -0.0, CPU gives 0.0` for the first element (in logical order) whose bits differ."""
    got = got.detach().cpu().resolve_conj().resolve_neg()
    want = want.detach().cpu().resolve_conj().resolve_neg()
    for flat in range(want.numel()):
        position = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), want.shape)) if want.dim() else ()
        if not same_bits(got[position].reshape(1), want[position].reshape(1)):
            return f"{list(position)} = {got[position].item()!r}, CPU gives {want[position].item()!r}"
    return ""  # pragma: no cover - same_bits said they differ
