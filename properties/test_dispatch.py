"""Dispatch: overloads no OpInfo reaches, called with arguments drawn from their schemas, give CPU's results.

One scenario per generated overload (`torchcts.coverage.generated`: relevant, reached by no OpInfo
by name, arguments drawable, accepted by CPU's kernel at least once in a probe). A case is one call
`torch.ops.aten.<packet>.<overload>(*args, **kwargs)` with arguments from `strategies/schema_args.py`,
or, for overloads whose schema draws CPU never accepted, from `strategies/traced_calls.py` (an OpInfo
sample's call of a sibling overload, rebound to this one);
the program returns the result and every argument the overload writes (in-place `self`, `out=`), so
a mutated argument is compared too. CPU runs first: a drawn call CPU's kernel rejects is rejected as
a draw (Hypothesis draws another; the record counts it as a `cpu_contract` case, never a pass), and
an overload whose kernel rejects every draw is `cpu_contract` with the last rejection. Random
overloads (tag nondeterministic_seeded) and those returning uninitialized memory compare dtype and
shape only. See docs/coverage/generated.md.
"""

from __future__ import annotations

import hypothesis
import torch
from hypothesis import strategies as st
from hypothesis.errors import FailedHealthCheck, Unsatisfiable
from torch.testing._internal.opinfo.core import SampleInput
from torch.utils._pytree import tree_leaves, tree_map

from torchcts.coverage.generated import from_traced_calls, generated_scenarios, resolve, split_name
from torchcts.engine.context import CpuRejects
from torchcts.engine.outcome import NotRun
from torchcts.engine.programs import run_program
from torchcts.outcomes import Outcome
from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.strategies import Case, claimed_dtypes
from torchcts.strategies.schema_args import schema_arguments
from torchcts.strategies.traced_calls import traced_arguments

DTYPES = ("float32",)  # the item's dtype; tensor arguments also take int64 and bool where the manifest claims them
EXTRA_DTYPES = (torch.int64, torch.bool)
METADATA_TAGS = ("nondeterministic_seeded", "nondeterministic_bitwise")
_UNINITIALIZED = ("empty", "resize", "set_")  # packets whose results hold uninitialized memory: metadata only
_UNINITIALIZED_PACKETS = ("_ctc_loss",)  # these exactly: `_ctc_loss`'s log_alpha past each input's length


def call_overload(anchor, packet, overload, args, kwargs, device_slots, mutated):
    """`torch.ops.aten.<packet>.<overload>(*args, **kwargs)`, its Device arguments set to the anchor tensor's
    device; returns [its result, the arguments it writes (by position or name)]."""
    args = list(args)
    kwargs = dict(kwargs)
    for slot in device_slots:
        if isinstance(slot, int):
            args[slot] = anchor.device
        else:
            kwargs[slot] = anchor.device
    function = getattr(getattr(torch.ops.aten, packet), overload)
    result = function(*args, **kwargs)
    written = [args[slot] if isinstance(slot, int) else kwargs[slot] for slot in mutated]
    return [result, written]


SCENARIOS = generated_scenarios()  # scenario name -> overload name
PROGRAMS = {scenario: call_overload for scenario in SCENARIOS}


def describe(name: str, args: tuple, kwargs: dict) -> str:
    """`aten.add.Tensor(float32[2, 3], float32[], alpha=2)`: the call with tensors as dtype[shape]."""
    def text(value: object) -> str:
        if isinstance(value, torch.Tensor):
            return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(text(v) for v in value) + "]"
        return repr(value)

    parts = [text(a) for a in args] + [f"{k}={text(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def overload_cases(name: str, dtype: torch.dtype, manifest: object, scenario: str = "",
                   traced: bool | None = None) -> st.SearchStrategy[Case]:
    """Cases of one call of overload `name`: drawn from its schema (tensors of `dtype`, int64 and bool too where
    claimed, shrinking toward small plain tensors and default arguments) or, with `traced` (default: where the
    packaged list says so), rebound from OpInfo samples' calls of a sibling overload (`traced_calls`)."""
    op = resolve(name)
    claimed = claimed_dtypes(manifest)
    extra = tuple(d for d in EXTRA_DTYPES if d in claimed)
    packet, overload = split_name(name)
    anchor = torch.zeros((), dtype=dtype)

    def case(drawn) -> Case:
        sample = SampleInput(anchor, args=(packet, overload, list(drawn.args), dict(drawn.kwargs),
                                           list(drawn.device_slots), list(drawn.mutated)))
        return Case(scenario or name, "scenario", dtype, sample, 0,
                    transforms=(describe(name, drawn.args, drawn.kwargs),))

    if traced is None:
        traced = name in from_traced_calls()
    if traced:
        return traced_arguments(name).map(case)
    return schema_arguments(op._schema, dtype, dtypes=extra).map(case)


_PROGRAM = run_program(call_overload)


def _RUN(cts, sample, target):
    """The program on the target; a lazy negated or conjugated result is resolved once, so a kernel that
    cannot compute it ("neg_cpu" not implemented for 'Bool') raises here, on CPU a rejected draw."""
    result = _PROGRAM(cts, sample, target)
    for leaf in tree_leaves(result):
        if isinstance(leaf, torch.Tensor) and (leaf.is_neg() or leaf.is_conj()):
            leaf.resolve_neg().resolve_conj()
    return result


class _CpuOnly:
    """The CPU oracle as a target, for probing and materializing outside an item."""

    device = "cpu"
    compile_backend = None

    @staticmethod
    def place_for(sample, target):
        from torchcts.strategies import place

        return place(sample, "cpu")


def accepted_on_cpu(case: Case) -> str | None:
    """None when CPU's kernel runs the case's call, else `Type: first line` of what it raised."""
    try:
        _RUN(_CpuOnly, case.sample, _CpuOnly)
    except Exception as exc:  # noqa: BLE001 - any rejection: the draw says nothing
        return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    return None


def metadata_only(name: str) -> bool:
    """Whether results are compared in dtype and shape only: random or uninitialized values."""
    op = resolve(name)
    packet, _ = split_name(name)
    tags = {str(tag).rsplit(".", 1)[-1] for tag in op.tags}
    return bool(tags & set(METADATA_TAGS)) or any(word in packet for word in _UNINITIALIZED) \
        or packet in _UNINITIALIZED_PACKETS


def _same(first, second) -> bool:
    """Whether two CPU results of one call agree: structure, dtypes, shapes and values (NaN and inf as numbers)."""
    a, b = tree_leaves(first), tree_leaves(second)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if (x.dtype, x.shape, x.layout) != (y.dtype, y.shape, y.layout):
                return False
            if x.layout == torch.strided and not torch.equal(_plain(x), _plain(y)):
                return False
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor) or not (x == y or (x != x and y != y)):
            return False
    return True


def _plain(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    return torch.nan_to_num(t) if t.is_floating_point() or t.is_complex() else t


def _metadata(value):
    return tree_map(lambda v: (str(v.dtype), tuple(v.shape)) if isinstance(v, torch.Tensor) else type(v).__name__,
                    value)


@register_property("dispatch", capability="inference", level=4,
                   items=ScenarioItems(tuple(SCENARIOS) or ("none_generated",), DTYPES, programs=PROGRAMS))
def test_dispatch(cts):
    name = SCENARIOS.get(cts.item.op)
    if name is None:
        raise NotRun(Outcome.RUNTIME_UNAVAILABLE, f"{cts.item.op}: no generated overload of this name in this torch")
    metadata = metadata_only(name)
    pointwise = "pointwise" in {str(tag).rsplit(".", 1)[-1] for tag in resolve(name).tags}
    rejections: list[str] = []

    def check(case):
        try:
            expected = cts.on_cpu_call(_RUN, case.sample)
        except CpuRejects as exc:
            if not cts.in_hypothesis:  # replaying: the engine accounts it (cpu_contract)
                raise
            rejections.append(str(exc))
            cts.cpu_contract_cases += 1
            hypothesis.reject()  # another draw; never a pass
        what = case.transforms[0] if case.transforms else name
        # a kernel that answers one call two ways (random, or reading uninitialized memory) is no value oracle
        values = not metadata and _same(expected, cts.on_cpu_call(_RUN, case.sample))
        actual = cts.on_device_call(_RUN, case.sample, what=f" ({what})")
        if not values:  # counted in the record (`metadata_only_cases`): a pass that compared no values
            cts.metadata_only_cases += 1
            actual, expected = _metadata(actual), _metadata(expected)
        cts.assert_matches(actual, expected, what=what, inputs=case.sample if values else None,
                           normwise=not pointwise)

    try:
        cts.run(overload_cases(name, cts.dtype, cts.manifest, cts.item.op), check)
    except (Unsatisfiable, FailedHealthCheck):  # Hypothesis gave up: too many draws CPU's kernel rejected
        if cts.examples > cts.cpu_contract_cases:
            cts.finish()
            return
        last = rejections[-1] if rejections else "none"
        raise NotRun(Outcome.CPU_CONTRACT, f"cpu_contract: CPU's kernel of {name} rejected all {cts.examples} drawn "
                                           f"argument sets (last: {last})") from None
