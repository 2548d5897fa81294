"""What the device runtime suites share: the device's runtime module, the facilities a claim needs, invariant checks.

A runtime suite (device_api, streams, events, pinned_memory, rng, ...) proves facts about the
device's runtime rather than values an op computes, so most of its checks are invariants observed on
the device alone ("the same seed draws the same numbers", "an event's elapsed time is positive"),
not a comparison with CPU. The helpers:

- `runtime_module(cts)`: `torch.<device type>` (`torch.cuda`, `torch.faulty`, `torch.cpu`).
- `require(cts, module, *names)`: before the cases, the attributes a suite needs from that module.
  A missing one is `runtime_unavailable` on the CPU validation target (CPU is the reference, not a
  backend: it has no streams to wait on or device memory to count) and where nothing claims the
  capability (a replay on another device type, or with a --manifest not declaring it), and a `failed`
  item on a device that claimed it (a replay without --manifest on the device type the case was found on
  claims the case's own capability: `engine.replay_manifest`). Reading the attributes runs backend code
  (a module's `__getattr__`): it goes through `cts.on_device_call`, so its exception is the backend's.
- `invariant_check(cts, program, what)`: a check for `cts.run` that runs `program(device, *args)` on
  the device (its exceptions are the backend's `error`s; on CPU, the reference, they are TorchCTS's or,
  replaying, the stored case's) and fails on every `Observation` that does not hold, naming each with
  what was seen.
- `invariants(program, before)`: the same check as a runtime scenario's row of a scenario table
  (`Custom(invariants(...))`, `properties.scenario_table`): its facilities first, then the program given
  the case's values by name.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import attrs
import torch

from torchcts.cases.files import CaseFileError
from torchcts.cases.scenario_case import INPUT, named
from torchcts.engine.outcome import NotRun
from torchcts.engine.targets import CaseUnavailable
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry


@attrs.frozen
class Observation:
    """One fact a runtime program checked: what should hold, whether it did, and what was seen."""

    what: str
    holds: bool
    seen: str = ""

    def describe(self) -> str:
        return f"{self.what}" + (f" (seen: {self.seen})" if self.seen else "")


def observe(what: str, holds: Any, seen: Any = "") -> Observation:
    return Observation(what, bool(holds), str(seen))


def runtime_module(cts: Any) -> Any:
    """`torch.<device type>` of the target, or None when torch has no such module."""
    return getattr(torch, cts.target.device_type, None)


def on_validation_target(cts: Any) -> bool:
    """Whether the device under test is CPU itself (the validation run: the oracle against itself)."""
    return cts.target.device_type == "cpu"


def unavailable(why: str) -> NotRun:
    return NotRun(Outcome.RUNTIME_UNAVAILABLE, why)


def require(cts: Any, owner: Any, *names: str, capability: str = "", label: str = "") -> None:
    """Raise (before any case) unless `owner` (the runtime module, or a class of it such as its `Stream`, named
    `label`) has every attribute in `names`: runtime_unavailable on the CPU validation target and where the manifest
    does not claim the capability (a replay without --manifest claims none), an AssertionError (a `failed` item: the
    claimed facility is missing) on any other device."""
    label = label or f"torch.{cts.target.device_type}"
    missing = [name for name in names if owner is None or not has_attribute(cts, owner, name)]
    if not missing:
        return
    what = f"{label} has no {', '.join(missing)}" if owner is not None else f"{label} does not exist"
    if on_validation_target(cts):
        raise unavailable(f"{what}: CPU has no such facility (the validation target proves only what CPU has)")
    capability = capability or _capability_of(cts.item.property)
    if not claimed(cts, capability):
        raise unavailable(f"{what}, which the {capability} capability needs; {unclaimed(cts)}")
    raise AssertionError(f"{what}, which the {capability} capability the manifest claims needs")


def has_attribute(cts: Any, owner: Any, name: str) -> bool:
    """`hasattr(owner, name)` run as the device's code: what a backend module's `__getattr__` raises (other than
    AttributeError) is the backend's error, not TorchCTS's."""
    if on_validation_target(cts):
        return hasattr(owner, name)
    return cts.on_device_call(lambda *_: hasattr(owner, name), None, what=f" (reading {name})")


def claimed(cts: Any, capability: str = "") -> bool:
    """Whether `capability` (default: the item's property's) is claimed: always for an item that is no replay (the
    plan runs only claimed ones); for a replayed case, when its manifest claims it (a replay without --manifest
    claims the case's own capability on the device type the case names, none elsewhere: `engine.replay_manifest`).
    A facility the device lacks where nothing claims it is runtime_unavailable, not a finding."""
    if cts.replay is None or cts.manifest is None:
        return True
    return cts.manifest.declares(capability or _capability_of(cts.item.property))


def unclaimed(cts: Any) -> str:
    """The end of the reason a facility nobody claims on this target is runtime_unavailable."""
    return (f"nothing claims it on {cts.target.describe()} (a replay without --manifest claims only the case's own "
            f"capability, and only on the device type it was found on; a --manifest only what it declares)")


def _capability_of(prop: str) -> str:
    """The capability a registered property tests (its own name when it is not registered)."""
    try:
        return registry.get(prop).capability
    except registry.RegistryError:
        return prop


def invariant_check(cts: Any, program: Callable[..., Iterable[Observation]], what: str = "",
                    params: Any = None) -> Callable[[Any], None]:
    """A check for `cts.run(cases, check)`: `program(device, *sample.args, **sample.kwargs)` run on the device under
    test (the sample's `input` is not passed: a runtime case stores its drawn sizes and seeds as plain arguments,
    with a placeholder input tensor); fails naming the observations that do not hold. Given the scenario's `params`
    (`cases.bounds.CaseParams`), the program is called with the case's values by name instead
    (`program(device, rows=..., seed=...)`: its parameters are named as the scenario's are)."""
    label = what or program.__name__

    def run(cts_: Any, sample: Any, target: Any) -> list[Observation]:
        if params is not None:
            return list(program(target.device, **by_name(params, sample)))
        return list(program(target.device, *sample.args, **sample.kwargs))

    def check(case: Any) -> None:
        if on_validation_target(cts):
            observations = on_reference(cts, run, case)
        else:
            observations = cts.on_device_call(run, case.sample, what=f" ({label})")
        broken = [o for o in observations if not o.holds]
        if broken:
            detail = "; ".join(o.describe() for o in broken[:4])
            raise AssertionError(f"{label} [{'; '.join(case.transforms)}] on {cts.target.describe()}: {detail}")

    return check


def by_name(params: Any, sample: Any) -> dict[str, Any]:
    """A runtime case's values by name, without its placeholder `input` (`cases.scenario_case.named`)."""
    return {name: value for name, value in named(params, sample).items() if name != INPUT}


def invariants(program: Callable[..., Iterable[Observation]],
               before: Callable[[Any, str], None] | None = None) -> Callable[[Any, Any], Callable[[Any], None]]:
    """A runtime scenario's check for its row of a scenario table (`properties.scenario_table.Custom(...)`): first
    `before(cts, scenario)` (the facilities the scenario needs: `require`, which raises before any case), then
    `invariant_check` of `program` on the device alone, given the case's values by name and labelled by the row's
    scenario. The row states no program of its own: a runtime program observes one device, it has no CPU result to
    compare, and an exported script could not check it."""
    def check(cts: Any, row: Any) -> Callable[[Any], None]:
        if before is not None:
            before(cts, row.name)
        return invariant_check(cts, program, row.name, params=row.params)

    return check


def on_reference(cts: Any, run: Callable[[Any, Any, Any], list[Observation]], case: Any) -> list[Observation]:
    """The program's observations on CPU, the validation target. CPU raising is no backend's error: replaying, CPU
    refuses the stored values (the case cannot be replayed: a `case_file` error naming them); on drawn values,
    TorchCTS drew what CPU refuses (raised as it is: a `harness` error)."""
    try:
        return run(cts, case.sample, cts.target)
    except (NotRun, CaseUnavailable):
        raise
    except Exception as exc:
        if cts.replay is None:
            raise
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise CaseFileError(getattr(cts.item, "path", "") or "the replayed case", "inputs.args",
                            f"CPU, the reference, refuses the stored values: {type(exc).__name__}: {detail}") from exc
