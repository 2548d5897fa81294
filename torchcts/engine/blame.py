"""Blame the leg: which layer of `torch.compile` first shows a compiled item's failure.

A compiled result passes three layers: dynamo's tracing, AOTAutograd (functionalization, decompositions),
and the backend's own code. When an item fails under `--compile B`, its stored case is replayed in this
run, once per leg, each a fresh compile in a process of its own, in this order:

1. `eager`, static shapes (dynamo alone): fails -> `dynamo`
2. `aot_eager`, static shapes (dynamo + AOTAutograd): fails -> `aot`
3. B, static shapes: fails -> `backend`
4. a run in the static shape mode stops here: `not-reproduced`. Otherwise B with dynamic shapes (the
   nearest fresh compile to an automatic run's recompiles): passes -> `not-reproduced`; fails -> the same
   two references with dynamic shapes: `eager` fails -> `dynamo`, `aot_eager` fails -> `aot`, neither ->
   `backend-dynamic-only`.

A leg shows THE failure only when its replay ends as the run's failure did: the same problem outcome (failed,
error, crashed, timed_out) and, for an error, the same kind (`error_kind`) and cause type (the exception the
record's error line names). A leg that fails differently (a reference leg that times out, or raises where the run
compared values) ends the blame: `not-blamed`, "leg X fails differently: ...", since a later layer's verdict would
rest on a different failure. Each leg's outcome and error line are kept beside the verdict. The references take
the run's `fullgraph` (it changes what dynamo traces), never B's `mode` or `options` (they are B's).

Blaming runs in the run's process (`engine.run.run_item`, after the item's own forked child or spawned worker
returned its record), so neither the budget nor the item's timeout is spent in a child: at most
`EngineSettings.blame_cases` (`--blame-cases N`) cases per run (per process: each worker of `-n N`, or of a fuzz
hunt, counts its own; a fuzz worker runs the item, and so blames it, in the worker, within its --task-timeout).
Each leg replays the one stored case (no draws) in its own process, started as the run starts isolated items (a
forked child where the device survives a fork, else or under --isolation-start spawn a spawned worker), killed
past the item timeout (`leg_timeout_s`): a stuck leg compile is a `timed_out` leg, never a hung run, and dynamo's
state in the run's process is untouched. A failure past the budget, or without a stored case (a crashed or
timed-out item's process died before storing one), is `not-blamed` with the reason.

The verdict goes into the item's record (`leg`, `legs`, `leg_reason`) and into the stored case's
`failure` (the same keys), so reports, triage and the corpus carry it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts.cases.files import CaseFileError, load_case, save_case
from torchcts.cases.replay_items import replay_items
from torchcts.engine.compile_target import CompileSpec
from torchcts.engine.spawn_messages import SpawnMessageError
from torchcts.engine.spawned_items import run_spawned
from torchcts.core.outcomes import PROBLEMS, Outcome, parse
from torchcts.isolation.fork import run_forked
from torchcts.isolation.policy import DEFAULT_ITEM_TIMEOUT_S, FORK, start_method
from torchcts.isolation.spawn import SpawnError

DYNAMO, AOT, BACKEND, BACKEND_DYNAMIC_ONLY = "dynamo", "aot", "backend", "backend-dynamic-only"
NOT_REPRODUCED, NOT_BLAMED = "not-reproduced", "not-blamed"
LEGS = (DYNAMO, AOT, BACKEND, BACKEND_DYNAMIC_ONLY, NOT_REPRODUCED, NOT_BLAMED)
DEFAULT_BLAME_CASES = 100  # cases blamed per run (each at most 6 fresh compiles, most often 3; ~1 s with openvino)
# errors of a leg's replay that are not the layer's answer: the case or TorchCTS could not run it
_NOT_AN_ANSWER = ("setup", "case_file", "harness")
# the exception type an error line names: "<target> raised TypeName where CPU did not: ...", or "TypeName: ..."
_RAISED = re.compile(r" raised ([A-Za-z_][\w.]*)")
_LEADING_TYPE = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")

_spent: dict[str, int] = {}  # cases blamed so far, per run id (or per process when the run has none)


@attrs.frozen
class References:
    """The backends that stand for dynamo alone and for dynamo + AOTAutograd. Tests may swap them: no backend
    registered in a test can make the real `eager` or `aot_eager` wrong, since neither goes through it."""

    dynamo: str = "eager"
    aot: str = "aot_eager"


@attrs.frozen
class FailureKind:
    """What a failure is, as far as blame compares it: its outcome and, for an error, its kind and cause type
    (None where the record does not say)."""

    outcome: str
    error_kind: str | None = None
    cause: str | None = None

    @classmethod
    def of(cls, record: dict[str, Any]) -> "FailureKind":
        outcome = str(parse(record.get("outcome")) or record.get("outcome"))
        if outcome != Outcome.ERROR:
            return cls(outcome)
        return cls(outcome, record.get("error_kind"), cause_type(record.get("error_line")))

    def shown_by(self, other: "FailureKind") -> bool:
        """Whether `other` (a leg's) is this failure: the same outcome; for errors the same kind and cause type
        where both are known."""
        if self.outcome != other.outcome:
            return False
        return all(mine is None or theirs is None or mine == theirs
                   for mine, theirs in ((self.error_kind, other.error_kind), (self.cause, other.cause)))

    def describe(self) -> str:
        details = ", ".join(part for part in (self.error_kind, self.cause) if part)
        return f"{self.outcome} ({details})" if details else self.outcome


def cause_type(error_line: Any) -> str | None:
    """The exception type an error line names (the cause behind torch.compile's wrappers, as the engine wrote it)."""
    if not isinstance(error_line, str):
        return None
    found = _RAISED.search(error_line) or _LEADING_TYPE.match(error_line)
    return found.group(1) if found else None


@attrs.frozen
class LegResult:
    backend: str
    shape_mode: str
    outcome: str
    error_line: str | None = None

    @property
    def failed(self) -> bool:
        return parse(self.outcome) in PROBLEMS

    def name(self) -> str:
        return f"{self.backend} ({self.shape_mode} shapes)"

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
    """A leg's replay could not run the case, or failed otherwise than the run did: no leg can be named."""


def blame_case(path: Path | str, settings: Any, references: References = References(),
               replay: Callable[[Path | str, Any, CompileSpec], dict[str, Any]] | None = None,
               failure: dict[str, Any] | None = None) -> Blame:
    """The leg that first shows the failure of the stored case at `path`, failed under `settings.target.compile`.

    `failure` is the failing record (its outcome, error kind and error line); None reads them from the stored
    case's `failure`."""
    spec = settings.target.compile
    replay = replay or replay_leg
    tried: list[LegResult] = []
    wanted = FailureKind.of(failure if failure is not None else _stored_failure(path, settings))

    def fails(leg: CompileSpec) -> bool:
        record = replay(path, settings, leg)
        result = LegResult(leg.backend, leg.shape_mode, str(record.get("outcome")), record.get("error_line"))
        tried.append(result)
        if not result.failed:
            return False
        kind = FailureKind.of(record)
        if kind.error_kind in _NOT_AN_ANSWER and kind.error_kind != wanted.error_kind:
            raise _NoAnswer(f"the {result.name()} leg could not replay the case: "
                            f"{record.get('error_line') or record.get('reason') or result.outcome}")
        if not wanted.shown_by(kind):
            line = record.get("error_line") or record.get("reason") or ""
            raise _NoAnswer(f"leg {result.name()} fails differently: {kind.describe()}"
                            + (f": {str(line).splitlines()[0][:200]}" if line else "")
                            + f"; the run's failure was {wanted.describe()}")
        return True

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


def _stored_failure(path: Path | str, settings: Any) -> dict[str, Any]:
    """The stored case's failure as a record would say it (outcome, first line of its message); {} unreadable."""
    try:
        failure = load_case(path, settings.case_limits).failure
    except (CaseFileError, OSError):
        return {}
    message = str(failure.get("message") or "")
    return {"outcome": failure.get("outcome"), "error_line": message.splitlines()[0] if message else None}


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


LEG_TIMEOUT_CAP_S = 300.0  # one leg replays one stored case: a fresh compile or two, seconds even under inductor


def leg_timeout_s(settings: Any) -> float:
    """How long one leg's replay may run before its process is killed (`timed_out`): the run's item timeout, at
    most LEG_TIMEOUT_CAP_S (up to six legs per blamed case: a hanging layer must not cost six item timeouts)."""
    return min(getattr(settings.isolation, "timeout_s", None) or DEFAULT_ITEM_TIMEOUT_S, LEG_TIMEOUT_CAP_S)


# The engine's own item runner, `engine.run.run_here` and `engine.run.ended_record`: engine.run hands them in when it
# loads (`use_item_runner`), since it calls `blame_failure` itself (an import back would be a cycle).
_item_runner: tuple[Callable[..., Any], Callable[..., Any]] | None = None


def use_item_runner(run_here: Callable[..., Any], ended_record: Callable[..., Any]) -> None:
    """Hand blame the engine's runner of one item here and its record of an item whose process ended."""
    global _item_runner
    _item_runner = (run_here, ended_record)


def replay_leg(path: Path | str, settings: Any, spec: CompileSpec) -> dict[str, Any]:
    """The record of the stored case at `path` replayed by the engine on the run's device under `spec`: compiled
    afresh in a process of its own, started as the run starts isolated items (`isolation.policy.start_method`: a
    forked child where the device survives a fork, else or under --isolation-start spawn a spawned worker), killed
    past `leg_timeout_s`; nothing stored (no corpus), so a leg never blames again."""
    if _item_runner is None:
        raise RuntimeError("engine.blame: no item runner; engine.run hands it in when imported")
    run_here, ended_record = _item_runner
    items = replay_items([path], settings.case_limits)
    if len(items) != 1:
        return {"outcome": "error", "error_kind": "case_file", "error_line": f"{path}: not one case file"}
    item = items[0]
    leg_settings = attrs.evolve(settings, target=attrs.evolve(settings.target, compile=spec),
                                replay_shape_mode=spec.shape_mode, corpus_dir=None, trace_device_ops=False,
                                trace_dispatch=False)
    reason = f"a blame leg: {spec.backend}, {spec.shape_mode} shapes"
    if start_method(settings.isolation, settings.target.device_type) == FORK:
        result = run_forked(lambda: run_here(item, leg_settings), leg_timeout_s(settings))
        how = "fork"
    else:
        try:
            result = run_spawned(item, leg_settings, leg_timeout_s(settings))
        except (SpawnError, SpawnMessageError) as exc:
            return {"outcome": "error", "error_kind": "harness", "error_line": f"no spawned worker: {exc}"}
        how = "spawn"
    if result.status == "finished":
        return dict(result.answer)
    return ended_record(item, result, reason, how)


def blame_failure(record: dict[str, Any], settings: Any, references: References = References()) -> dict[str, Any]:
    """The blame fields of a failing compiled item's record (empty for an eager target), its stored case updated
    with them. Within the run's budget of cases; past it, or without a stored case, `not-blamed` says why."""
    if settings.target.compile is None:
        return {}
    if record.get("error_kind") in _NOT_AN_ANSWER:  # TorchCTS's own error (or the case's): no layer's fault
        return Blame(NOT_BLAMED, reason=f"the item's error is TorchCTS's ({record['error_kind']}), not a layer's"
                     ).fields()
    reference = record.get("counterexample") or {}
    path = reference.get("path")
    if not path:
        return Blame(NOT_BLAMED, reason=_why_no_case(record)).fields()
    budget = settings.blame_cases
    key = str((settings.found or {}).get("run_id") or "process")
    if _spent.get(key, 0) >= budget:
        return Blame(NOT_BLAMED, reason=f"the run's budget of {budget} blamed cases is spent").fields()
    _spent[key] = _spent.get(key, 0) + 1
    try:
        blame = blame_case(path, settings, references, failure=record)
    except Exception as exc:  # noqa: BLE001 - the finding stands without its leg; interrupts propagate
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        blame = Blame(NOT_BLAMED, reason=f"blaming raised {type(exc).__name__}: {first}")
    fields = blame.fields()
    note_in_case(path, fields, settings.case_limits)
    return fields


def _why_no_case(record: dict[str, Any]) -> str:
    outcome = parse(record.get("outcome"))
    if outcome in (Outcome.CRASHED, Outcome.TIMED_OUT):
        how = "died" if outcome == Outcome.CRASHED else "was killed past its timeout"
        return f"no stored case to replay: the item {outcome} (its process {how} before a failing case was stored)"
    return "no stored case to replay" + (
        f" ({record['counterexample_error']})" if record.get("counterexample_error") else "")


def note_in_case(path: Path | str, fields: dict[str, Any], limits: Any) -> None:
    """Write the blame into the stored case's `failure` (a case that changed or went away keeps none)."""
    try:
        case = load_case(path, limits)
        failure = {key: value for key, value in case.failure.items() if key not in ("leg", "legs", "leg_reason")}
        save_case(Path(path), attrs.evolve(case, failure={**failure, **fields}))
    except (CaseFileError, OSError):
        pass
