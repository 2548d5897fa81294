"""The evidence store: which aten overloads traced backend runs reached, and how their items ended.

A store is a folder holding `evidence.json` (docs/coverage/evidence.md):
`{"schema_version": 1, "runs": [{run_id, device, compile_backend, torch, torchcts, collected_at}],
"overloads": {"aten.add.Tensor": {"reached", "passed", "failed", "errors": {outcome: n}, "runs": [run_id]}}}`.
`reached` counts the items whose device side dispatched the overload (`--trace-dispatch` records'
`dispatched`), `passed`/`failed`/`errors` how those items ended. Collecting a run adds its counts;
a run already in the store (same run_id) is not counted twice. Stores travel between teams, so
reading one is bounded (size, depth, number of runs and overloads, name format) and validated, and
a problem names the file and the field. No torch.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

import attrs

from torchcts.core.overload_names import OVERLOAD_NAME
from torchcts.coverage.atomic import write_atomic
from torchcts.results.files import MiB, ResultFileError, iter_records, json_kind, read_json_file, read_summary
from torchcts.untrusted_paths import id_problem

SCHEMA_VERSION = 1
FILE_NAME = "evidence.json"
LOCK_NAME = ".evidence.lock"  # flocked around read-merge-replace (`collect_run`)
MAX_STORE_BYTES = 64 * MiB  # a store of 10,000 runs over 3,000 overloads stays well under it
MAX_RUNS = 10_000
MAX_OVERLOADS = 20_000  # torch 2.13 has ~3,100 aten overloads
MAX_TEXT = 200  # characters of a run id, device, version string or overload name
MAX_COUNT = 2**53  # item counts (exact in any JSON reader)
ERROR_KINDS = ("error", "crashed", "timed_out")  # the executed outcomes besides passed and failed
RUN_FIELDS = ("run_id", "device", "compile_backend", "torch", "torchcts", "collected_at")


class EvidenceError(Exception):
    """A store or run that cannot be used: the file, the field (when one is to blame) and what is wrong."""

    def __init__(self, path: Path | str, field: str | None, problem: str):
        super().__init__(f"{path}: {field}: {problem}" if field else f"{path}: {problem}")
        self.path, self.field, self.problem = Path(path), field, problem


@attrs.frozen
class OverloadEvidence:
    """What the collected runs say about one overload."""

    reached: int = 0
    passed: int = 0
    failed: int = 0
    errors: dict[str, int] = attrs.field(factory=dict)  # outcome -> items (error, crashed, timed_out)
    runs: tuple[str, ...] = ()  # the run ids that reached it

    def as_json(self) -> dict[str, Any]:
        """This overload's object in evidence.json (errors sorted by kind)."""
        return {"reached": self.reached, "passed": self.passed, "failed": self.failed,
                "errors": dict(sorted(self.errors.items())), "runs": list(self.runs)}


@attrs.frozen
class Evidence:
    """A validated store: the runs collected into it and, per overload, what they observed."""

    runs: tuple[dict[str, Any], ...] = ()
    overloads: dict[str, OverloadEvidence] = attrs.field(factory=dict)

    def reached(self) -> set[str]:
        """The overloads at least one collected item dispatched (the audit's "reached")."""
        return {name for name, seen in self.overloads.items() if seen.reached > 0}

    def run_ids(self) -> set[str]:
        """The run ids the store holds: a run collected again is recognised by its id and not counted twice."""
        return {run["run_id"] for run in self.runs}

    def as_json(self) -> dict[str, Any]:
        """evidence.json's content: runs in collection order, overloads sorted by name."""
        return {"schema_version": SCHEMA_VERSION, "runs": [dict(run) for run in self.runs],
                "overloads": {name: self.overloads[name].as_json() for name in sorted(self.overloads)}}


# -- reading ----------------------------------------------------------------------------------

def load_evidence(store: Path | str, missing_ok: bool = False) -> Evidence:
    """The store in folder `store`, validated; an empty one when `missing_ok` and it has no evidence.json.
    EvidenceError names the file and field of any problem."""
    path = Path(store) / FILE_NAME
    if missing_ok and not os.path.lexists(path):
        return Evidence()
    try:
        data = read_json_file(path, MAX_STORE_BYTES, "evidence store")
    except ResultFileError as exc:
        raise EvidenceError(path, None, exc.problem) from None
    return parse_evidence(data, path)


def parse_evidence(data: Any, path: Path | str) -> Evidence:
    """A parsed evidence.json checked field by field; EvidenceError for the first problem."""
    def bad(field: str | None, problem: str) -> EvidenceError:
        return EvidenceError(path, field, problem)

    if not isinstance(data, dict):
        raise bad(None, f"must be a JSON object, got {json_kind(data)}")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise bad("schema_version", f"must be {SCHEMA_VERSION}, got {shown(data.get('schema_version'))}")
    extra = sorted(set(data) - {"schema_version", "runs", "overloads"})
    if extra:
        raise bad(_text(extra[0]), "is not a field of an evidence store (schema_version, runs, overloads)")
    runs = data.get("runs")
    if not isinstance(runs, list) or len(runs) > MAX_RUNS:
        raise bad("runs", f"must be a list of at most {MAX_RUNS} runs, got {json_kind(runs)}")
    checked_runs = tuple(_run(run, f"runs[{index}]", bad) for index, run in enumerate(runs))
    known: set[str] = set()
    for run in checked_runs:
        if run["run_id"] in known:
            raise bad("runs", f"run_id {shown(run['run_id'])} appears more than once")
        known.add(run["run_id"])
    overloads = data.get("overloads")
    if not isinstance(overloads, dict) or len(overloads) > MAX_OVERLOADS:
        raise bad("overloads", f"must be an object of at most {MAX_OVERLOADS} overloads, got {json_kind(overloads)}")
    checked = {name: _overload(name, value, known, bad) for name, value in overloads.items()}
    return Evidence(checked_runs, checked)


def _run(run: Any, where: str, bad) -> dict[str, Any]:  # noqa: ANN001 - `bad` builds the error
    if not isinstance(run, dict):
        raise bad(where, f"must be an object, got {json_kind(run)}")
    extra = sorted(set(run) - set(RUN_FIELDS))
    if extra:
        raise bad(f"{where}.{_text(extra[0])}", f"is not a run field ({', '.join(RUN_FIELDS)})")
    for field in RUN_FIELDS:
        value = run.get(field)
        required = field == "run_id"
        if not (isinstance(value, str) and 0 < len(value) <= MAX_TEXT) and (required or value is not None):
            allowed = "a non-empty string" + ("" if required else " or null")
            raise bad(f"{where}.{field}", f"must be {allowed} of at most {MAX_TEXT} characters, got {shown(value)}")
    unsafe = id_problem(run["run_id"])  # an id never names a path out of the store, whoever reads it later
    if unsafe is not None:  # a store of an older TorchCTS may hold one ("run 1 (copy)"): say how to mend it
        raise bad(f"{where}.run_id", f"{unsafe}; rename it here and in each overload's runs "
                                     "(docs/coverage/evidence.md), or collect into a new store")
    return {field: run.get(field) for field in RUN_FIELDS}


def _overload(name: Any, value: Any, known: set[str], bad) -> OverloadEvidence:  # noqa: ANN001
    where = f"overloads[{shown(name)}]"
    if not (len(name) <= MAX_TEXT and OVERLOAD_NAME.fullmatch(name)):
        raise bad(where, "is not an aten overload name like \"aten.add.Tensor\"")
    if not isinstance(value, dict):
        raise bad(where, f"must be an object, got {json_kind(value)}")
    extra = sorted(set(value) - {"reached", "passed", "failed", "errors", "runs"})
    if extra:
        raise bad(f"{where}.{_text(extra[0])}", "is not a field of an overload (reached, passed, failed, errors, runs)")
    counts = {field: _count(value.get(field), f"{where}.{field}", bad) for field in ("reached", "passed", "failed")}
    errors = value.get("errors", {})
    if not isinstance(errors, dict):
        raise bad(f"{where}.errors", f"must be an object of outcome -> items, got {json_kind(errors)}")
    for kind, n in errors.items():
        if kind not in ERROR_KINDS:
            raise bad(f"{where}.errors", f"{shown(kind)} is not one of {', '.join(ERROR_KINDS)}")
        _count(n, f"{where}.errors.{kind}", bad)
    if counts["passed"] + counts["failed"] + sum(errors.values()) > counts["reached"]:
        raise bad(where, "passed, failed and errors add up to more items than reached")
    runs = value.get("runs")
    if not isinstance(runs, list) or len(runs) > MAX_RUNS or not all(isinstance(r, str) for r in runs):
        raise bad(f"{where}.runs", f"must be a list of at most {MAX_RUNS} run ids, got {json_kind(runs)}")
    unknown = [r for r in runs if r not in known]
    if unknown:
        raise bad(f"{where}.runs", f"run id {shown(unknown[0])} is not in the store's runs")
    return OverloadEvidence(errors=dict(errors), runs=tuple(runs), **counts)


def _count(value: Any, where: str, bad) -> int:  # noqa: ANN001
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT):
        raise bad(where, f"must be an integer from 0 to 2**53, got {shown(value)}")
    return value


# -- collecting a run -----------------------------------------------------------------------------

@attrs.frozen
class Observations:
    """One run's records folded per overload: counts by outcome, and how many records were traced."""

    overloads: dict[str, dict[str, Any]]  # name -> {"reached", "passed", "failed", "errors": {kind: n}}
    traced: int  # records that carry `dispatched`
    untraced: int  # executed records without it (an item whose child crashed, or an untraced run)


def observe(records: Iterable[dict[str, Any]], path: Path | str = "records.jsonl") -> Observations:
    """Fold records (already validated by `results.files`) per dispatched overload. A name that is
    not an aten overload name is an EvidenceError (the store would refuse it)."""
    folded: dict[str, dict[str, Any]] = {}
    traced = untraced = 0
    for record in records:
        names = record.get("dispatched")
        outcome = record.get("outcome")
        if names is None:
            untraced += outcome in ("passed", "failed") + ERROR_KINDS
            continue
        traced += 1
        for name in set(names):
            if not OVERLOAD_NAME.fullmatch(name) or len(folded) >= MAX_OVERLOADS and name not in folded:
                raise EvidenceError(path, f"item {shown(record.get('item'))}: dispatched",
                                    f"{shown(name)} is not an aten overload name (or too many overloads)")
            seen = folded.setdefault(name, {"reached": 0, "passed": 0, "failed": 0, "errors": {}})
            seen["reached"] += 1
            if outcome in ("passed", "failed"):
                seen[outcome] += 1
            elif outcome in ERROR_KINDS:
                seen["errors"][outcome] = seen["errors"].get(outcome, 0) + 1
    return Observations(folded, traced, untraced)


def merged(evidence: Evidence, run: dict[str, Any], observed: Observations) -> Evidence:
    """The store with one more run's observations added (the caller checked its run_id is new)."""
    overloads = dict(evidence.overloads)
    for name, seen in observed.overloads.items():
        before = overloads.get(name, OverloadEvidence())
        errors = dict(before.errors)
        for kind, n in seen["errors"].items():
            errors[kind] = errors.get(kind, 0) + n
        overloads[name] = OverloadEvidence(reached=before.reached + seen["reached"], passed=before.passed + seen["passed"],
                                           failed=before.failed + seen["failed"], errors=errors,
                                           runs=before.runs + (run["run_id"],))
    return Evidence(evidence.runs + (dict(run),), overloads)


def run_metadata(summary: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A store's record of one run, from its validated run.json."""
    environment = summary.get("environment") or {}
    fields = {"device": "device", "compile_backend": "compile", "torch": "torch", "torchcts": "torchcts"}
    run_id = summary.get("run_id") or folder.name
    unsafe = id_problem(run_id)
    if unsafe is not None:
        raise EvidenceError(folder / "run.json", "run_id", unsafe)
    return {"run_id": run_id,
            **{field: _text(environment[key]) if environment.get(key) else None for field, key in fields.items()},
            "collected_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


@attrs.frozen
class Collected:
    """What collecting one run did: its metadata, whether it was new, what it observed, the store after."""

    run: dict[str, Any]
    added: bool  # False: the store already held this run_id (nothing changed)
    observed: Observations
    evidence: Evidence
    status: str  # the run's status (complete or partial)


def collect_run(store: Path | str, folder: Path | str) -> Collected:
    """Add the traced run in `folder` to the store in `store` (created when missing), written atomically.

    EvidenceError when the run cannot be evidence (unreadable, still running, under torch.compile, no
    record carries `dispatched`) or the store is malformed; evidence.json is not written then. The
    read-merge-replace holds an flock on DIR/.evidence.lock, so concurrent collects into one store
    each add their run."""
    folder = Path(folder)
    try:
        summary = read_summary(folder)
    except ResultFileError as exc:
        raise EvidenceError(exc.path, None, exc.problem) from None
    status = summary.get("status")
    if status == "running":
        raise EvidenceError(folder / "run.json", "status", "the run is still running (or was killed before it "
                                                           "closed): collect a finished run")
    if (summary.get("environment") or {}).get("compile"):
        raise EvidenceError(folder / "run.json", "environment.compile", "a run under torch.compile is not traced "
                                                                        "(docs/coverage/evidence.md)")
    with _store_lock(store):  # read, merge and replace as one step: a concurrent collect waits its turn
        return _collect_locked(store, folder, summary, str(status))


def _collect_locked(store: Path | str, folder: Path, summary: dict[str, Any], status: str) -> Collected:
    evidence = load_evidence(store, missing_ok=True)  # a malformed store stops before any record is read
    run = run_metadata(summary, folder)
    try:
        observed = observe(iter_records(folder), folder / "records.jsonl")
    except ResultFileError as exc:
        raise EvidenceError(exc.path, f"line {exc.line}" if exc.line else None, exc.problem) from None
    if not observed.traced:
        raise EvidenceError(folder / "records.jsonl", "dispatched", "no record carries it: run it with "
                                                                    "--trace-dispatch")
    if run["run_id"] in evidence.run_ids():
        return Collected(run, False, observed, evidence, status)
    if len(evidence.runs) >= MAX_RUNS:
        raise EvidenceError(Path(store) / FILE_NAME, "runs", f"the store holds {MAX_RUNS} runs, its limit")
    updated = merged(evidence, run, observed)
    if len(updated.overloads) > MAX_OVERLOADS:
        raise EvidenceError(Path(store) / FILE_NAME, "overloads", f"would hold more than {MAX_OVERLOADS} overloads")
    write_evidence(store, updated)
    return Collected(run, True, observed, updated, status)


@contextlib.contextmanager
def _store_lock(store: Path | str) -> Iterator[None]:
    """Hold an exclusive flock on DIR/.evidence.lock (created with the store folder): two collects into one
    store would otherwise both read the old file and the later replace would drop the other's run."""
    folder = Path(store)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / LOCK_NAME, "a")
    except OSError as exc:
        raise EvidenceError(folder / LOCK_NAME, None, f"cannot create the store's lock file: "
                                                      f"{exc.strerror or type(exc).__name__}") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_evidence(store: Path | str, evidence: Evidence) -> Path:
    """Write the store's evidence.json atomically (a reader sees the old file or the new one, never half)."""
    import json

    return write_atomic(Path(store) / FILE_NAME, json.dumps(evidence.as_json(), indent=1, sort_keys=False) + "\n")


def _text(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 3] + "..."


def shown(value: Any) -> str:
    """A value from an untrusted file, for an error message: its kind for containers, else its repr cut to 60."""
    if isinstance(value, (dict, list)):
        return json_kind(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
