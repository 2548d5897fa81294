"""Dispatch: overloads no OpInfo reaches, called with arguments drawn from their schemas, give CPU's results.

One scenario per generated overload (`torchcts.coverage.generated`: relevant, reached by no OpInfo
by name, arguments drawable, accepted by CPU's kernel at least once in a probe). A case is one call
`torch.ops.aten.<packet>.<overload>(*args, **kwargs)` with arguments from `strategies/schema_args.py`,
or, for overloads whose schema draws CPU never accepted, from `strategies/traced_calls.py` (an OpInfo
sample's call of a sibling overload, rebound to this one) or `strategies/curated_calls.py` (hand-written
builders; those with sparse or nested arguments build them on the device and need the `sparse` or
`nested` capability);
the program returns the result and every argument the overload writes (in-place `self`, `out=`), so
a mutated argument is compared too. CPU runs first: a drawn call CPU's kernel rejects is rejected as
a draw (Hypothesis draws another; the record counts it as a `cpu_contract` case, never a pass), and
an overload whose kernel rejects every draw is `cpu_contract` with the last rejection. Random
overloads (tag nondeterministic_seeded) and those returning uninitialized memory compare dtype and
shape only. Building and running one call is `torchcts/coverage/dispatch_calls.py`; see
docs/coverage/generated.md.
"""

from __future__ import annotations

import hypothesis
import torch
from hypothesis.errors import FailedHealthCheck, Unsatisfiable
from torch.utils._pytree import tree_leaves, tree_map

from torchcts.coverage.dispatch_calls import call_overload, metadata_only, overload_cases, run_call
from torchcts.coverage.generated import generated_scenarios
from torchcts.engine.context import CpuRejects
from torchcts.engine.outcome import NotRun
from torchcts.core.outcomes import Outcome
from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.properties.dispatch_bounds import dispatch_params
from torchcts.strategies.curated_calls import CURATED_NEEDS
from torchcts.strategies.overloads import resolve

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("relevant aten overloads no OpInfo reaches, called with arguments drawn from their schemas: CPU's result, "
          "mutated arguments included (dtype and shape only for random ops)")
ITEMS = "scenarios (one per generated overload)"
DOCS = ("docs/coverage/generated.md",)

DTYPES = ("float32",)  # the item's dtype; tensor arguments also take int64 and bool where the manifest claims them
SCENARIOS = generated_scenarios()  # scenario name -> overload name
PROGRAMS = {scenario: call_overload for scenario in SCENARIOS}
# overloads called with sparse or nested arguments (curated calls) run only for a manifest that declares them
NEEDS = {scenario: CURATED_NEEDS[name] for scenario, name in SCENARIOS.items() if name in CURATED_NEEDS}
PARAMS = {scenario: dispatch_params(name) for scenario, name in SCENARIOS.items()}  # what cases store


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
                   items=ScenarioItems(tuple(SCENARIOS) or ("none_generated",), DTYPES, programs=PROGRAMS, needs=NEEDS,
                                       params=PARAMS))
def test_dispatch(cts):
    name = SCENARIOS.get(cts.item.op)
    if name is None:
        raise NotRun(Outcome.RUNTIME_UNAVAILABLE, f"{cts.item.op}: no generated overload of this name in this torch")
    metadata = metadata_only(name)
    pointwise = "pointwise" in {str(tag).rsplit(".", 1)[-1] for tag in resolve(name).tags}
    rejections: list[str] = []

    def check(case):
        try:
            expected = cts.on_cpu_call(run_call, case.sample)
        except CpuRejects as exc:
            if not cts.in_hypothesis:  # replaying: the engine accounts it (cpu_contract)
                raise
            rejections.append(str(exc))
            cts.cpu_contract_cases += 1
            hypothesis.reject()  # another draw; never a pass
        what = case.transforms[0] if case.transforms else name
        # a kernel that answers one call two ways (random, or reading uninitialized memory) is no value oracle
        values = not metadata and _same(expected, cts.on_cpu_call(run_call, case.sample))
        actual = cts.on_device_call(run_call, case.sample, what=f" ({what})")
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
