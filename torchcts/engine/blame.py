"""Blame the leg: which layer of `torch.compile` first shows a compiled item's failure.

A compiled result passes three layers: dynamo's tracing, AOTAutograd (functionalization, decompositions),
and the backend's own code. When an item fails under `--compile B`, its stored case is replayed in this
run, once per leg, each a fresh compile (the engine replays a compile case in a forked child, or here after
`targets.reset_compiled` where the device does not survive a fork), in this order:

1. `eager`, static shapes (dynamo alone): fails -> `dynamo`
2. `aot_eager`, static shapes (dynamo + AOTAutograd): fails -> `aot`
3. B, static shapes: fails -> `backend`
4. a run in the static shape mode stops here: `not-reproduced`. Otherwise B with dynamic shapes (the
   nearest fresh compile to an automatic run's recompiles): passes -> `not-reproduced`; fails -> the same
   two references with dynamic shapes: `eager` fails -> `dynamo`, `aot_eager` fails -> `aot`, neither ->
   `backend-dynamic-only`.

A leg "shows the failure" when its replay ends in a problem outcome (failed, error, crashed, timed_out);
each leg's outcome and error line are kept beside the verdict, so a leg that fails differently can be
read. The references take the run's `fullgraph` (it changes what dynamo traces), never B's `mode` or
`options` (they are B's). Blaming is bounded: at most `EngineSettings.blame_cases` (`--blame-cases N`) cases
per run (per process: each worker of `-n N`, or of a fuzz hunt, counts its own), each leg replays the one stored case
(no draws); a failure past the budget, or without a stored case, is `not-blamed` with the reason. Where
the legs run in this process (no fork), they reset dynamo: the run's later items compile afresh, and an
automatic run loses the shape history its earlier items left.

The verdict goes into the item's record (`leg`, `legs`, `leg_reason`) and into the stored case's
`failure` (the same keys), so reports, triage and the corpus carry it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts.engine.compile_target import CompileSpec
from torchcts.outcomes import PROBLEMS, parse

DYNAMO, AOT, BACKEND, BACKEND_DYNAMIC_ONLY = "dynamo", "aot", "backend", "backend-dynamic-only"
NOT_REPRODUCED, NOT_BLAMED = "not-reproduced", "not-blamed"
LEGS = (DYNAMO, AOT, BACKEND, BACKEND_DYNAMIC_ONLY, NOT_REPRODUCED, NOT_BLAMED)
DEFAULT_BLAME_CASES = 25  # cases blamed per run (each at most 6 fresh compiles, most often 3)
# errors of a leg's replay that are not the layer's answer: the case or TorchCTS could not run it
_NOT_AN_ANSWER = ("setup", "case_file", "harness")

_spent: dict[str, int] = {}  # cases blamed so far, per run id (or per process when the run has none)


@attrs.frozen
class References:
    """The backends that stand for dynamo alone and for dynamo + AOTAutograd. Tests may swap them: no backend
    registered in a test can make the real `eager` or `aot_eager` wrong, since neither goes through it."""

    dynamo: str = "eager"
    aot: str = "aot_eager"


@attrs.frozen
class LegResult:
    backend: str
    shape_mode: str
    outcome: str
    error_line: str | None = None

    @property
    def failed(self) -> bool:
        return parse(self.outcome) in PROBLEMS

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Blame:
    leg: str
    legs: tuple[LegResult, ...] = ()
    reason: str | None = None

    def fields(self) -> dict[str, Any]:
        """The keys a record and a stored case's `failure` get."""
        found: dict[str, Any] = {"leg": self.leg, "legs": [leg.as_json() for leg in self.legs]}
        if self.reason:
            found["leg_reason"] = self.reason
        return found


class _NoAnswer(Exception):
    """A leg's replay could not run the case (its error is TorchCTS's or the case file's)."""


def blame_case(path: Path | str, settings: Any, references: References = References(),
               replay: Callable[[Path | str, Any, CompileSpec], dict[str, Any]] | None = None) -> Blame:
    """The leg that first shows the failure of the stored case at `path`, failed under `settings.target.compile`."""
    spec = settings.target.compile
    replay = replay or replay_leg
    tried: list[LegResult] = []

    def fails(leg: CompileSpec) -> bool:
        record = replay(path, settings, leg)
        result = LegResult(leg.backend, leg.shape_mode, str(record.get("outcome")), record.get("error_line"))
        tried.append(result)
        if result.failed and record.get("error_kind") in _NOT_AN_ANSWER:
            raise _NoAnswer(f"the {leg.backend} leg ({leg.shape_mode} shapes) could not replay the case: "
                            f"{record.get('error_line') or record.get('reason') or result.outcome}")
        return result.failed

    def reference(backend: str, shape_mode: str) -> CompileSpec:
        return CompileSpec(backend, shape_mode=shape_mode, fullgraph=spec.fullgraph)

    try:
        leg = _first_failing_leg(spec, fails, reference, references)
    except _NoAnswer as exc:
        return Blame(NOT_BLAMED, tuple(tried), str(exc))
    reason = None
    if leg == NOT_REPRODUCED:
        reason = "no leg failed the stored case again, each compiled afresh" + (
            "" if spec.shape_mode == "static" else f" (the {spec.shape_mode} run's failure may need the shapes "
                                                   "compiled before it)")
    return Blame(leg, tuple(tried), reason)


def _first_failing_leg(spec: CompileSpec, fails: Callable[[CompileSpec], bool],
                       reference: Callable[[str, str], CompileSpec], references: References) -> str:
    if fails(reference(references.dynamo, "static")):
        return DYNAMO
    if fails(reference(references.aot, "static")):
        return AOT
    if fails(spec.evolve(shape_mode="static")):
        return BACKEND
    if spec.shape_mode == "static" or not fails(spec.evolve(shape_mode="dynamic")):
        return NOT_REPRODUCED
    if fails(reference(references.dynamo, "dynamic")):
        return DYNAMO
    if fails(reference(references.aot, "dynamic")):
        return AOT
    return BACKEND_DYNAMIC_ONLY


def replay_leg(path: Path | str, settings: Any, spec: CompileSpec) -> dict[str, Any]:
    """The record of the stored case at `path` replayed by the engine on the run's device under `spec`: compiled
    afresh (in a forked child where the device survives a fork, else here after `reset_compiled`), nothing stored
    (no corpus), so a leg never blames again."""
    from torchcts.cases.replay_items import replay_items
    from torchcts.engine.run import run_item

    items = replay_items([path], settings.case_limits)
    if len(items) != 1:
        return {"outcome": "error", "error_kind": "case_file", "error_line": f"{path}: not one case file"}
    leg_settings = attrs.evolve(settings, target=attrs.evolve(settings.target, compile=spec),
                                replay_shape_mode=spec.shape_mode, corpus_dir=None, trace_device_ops=False,
                                trace_dispatch=False)
    return run_item(items[0], leg_settings)


def blame_failure(record: dict[str, Any], settings: Any, references: References = References()) -> dict[str, Any]:
    """The blame fields of a failing compiled item's record (empty for an eager target), its stored case updated
    with them. Within the run's budget of cases; past it, or without a stored case, `not-blamed` says why."""
    if settings.target.compile is None:
        return {}
    reference = record.get("counterexample") or {}
    path = reference.get("path")
    if not path:
        return Blame(NOT_BLAMED, reason="no stored case to replay" + (
            f" ({record['counterexample_error']})" if record.get("counterexample_error") else "")).fields()
    budget = settings.blame_cases
    key = str((settings.found or {}).get("run_id") or "process")
    if _spent.get(key, 0) >= budget:
        return Blame(NOT_BLAMED, reason=f"the run's budget of {budget} blamed cases is spent").fields()
    _spent[key] = _spent.get(key, 0) + 1
    try:
        blame = blame_case(path, settings, references)
    except Exception as exc:  # noqa: BLE001 - the finding stands without its leg; interrupts propagate
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        blame = Blame(NOT_BLAMED, reason=f"blaming raised {type(exc).__name__}: {first}")
    fields = blame.fields()
    note_in_case(path, fields, settings.case_limits)
    return fields


def note_in_case(path: Path | str, fields: dict[str, Any], limits: Any) -> None:
    """Write the blame into the stored case's `failure` (a case that changed or went away keeps none)."""
    from torchcts.cases.files import CaseFileError, load_case, save_case

    try:
        case = load_case(path, limits)
        failure = {key: value for key, value in case.failure.items() if key not in ("leg", "legs", "leg_reason")}
        save_case(Path(path), attrs.evolve(case, failure={**failure, **fields}))
    except (CaseFileError, OSError):
        pass
