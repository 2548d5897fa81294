"""Replaying corpus cases: each case file becomes one test item of its property, run without Hypothesis.

The engine runs a `ReplayItem` like a plan item, on its stored cases instead of draws; the plugin
collects them instead of plan items when `--corpus PATH` is given, so a CI replays the corpus with
its usual pytest runner; `torchcts replay` runs the same session and reads its records to say, per
case, whether it still fails, and to track `fixed` cases.

Every file is read and decoded (within `CaseLimits`) when the items are made, before any runs:
a file that cannot be read, or is over a limit, becomes an item whose test is an `error` record
naming the file and the field, shown by pytest as that one line, and the other cases still run.
"""

from __future__ import annotations

import builtins
import warnings
from pathlib import Path
from typing import Any, Iterable

import attrs
import torch

from torchcts import dtypes as dtype_names
from torchcts.cases.codec import brief
from torchcts.cases.files import CaseFileError, CorpusCase, case_files, load_case, printable, save_case
from torchcts.cases.limits import CaseLimits
from torchcts.outcomes import PROBLEMS, Outcome, parse
from torchcts.plan import registry

UNREADABLE_PROPERTY = "forward"  # the test function that reports unreadable case files
EXIT_UNREADABLE = 2  # `torchcts replay` when a case file could not be read (the others still ran)


class UnreadableCase(CaseFileError):
    """A case file that cannot be replayed, raised when its item's context is built: the item's
    record is an `error` naming the file, the field and the problem (one line in pytest's output)."""


@attrs.frozen
class ReplayItem:
    """One case file to replay; `problem` is set when the file cannot be read."""

    path: str
    property: str
    op: str
    variant: str
    dtype: str
    level: int
    fingerprint: str = ""
    status: str = ""
    problem: tuple[str, str] | None = None  # (field, what is wrong) when the file cannot be replayed
    crash: bool = False  # the case crashed the process: it is replayed in a forked child

    @property
    def id(self) -> str:
        if self.problem is not None:
            return f"replay::unreadable::{Path(self.path).name}"
        return f"replay::{self.property}::{self.op}::{self.variant}::{self.dtype}::{self.fingerprint[:16]}"

    def as_json(self) -> dict[str, Any]:
        return {"item": self.id, "property": self.property, "op": self.op, "variant": self.variant,
                "dtype": self.dtype, "level": self.level,
                "case": {"path": self.path, "fingerprint": self.fingerprint, "status": self.status,
                         "unreadable": ": ".join(self.problem) if self.problem else None}}


def replay_items(paths: Iterable[Path | str], limits: CaseLimits = CaseLimits()) -> list[ReplayItem]:
    """An item per case file under `paths`; files that cannot be read and decoded within `limits`
    become items that report why. Each case is decoded here once and dropped, one at a time."""
    items = []
    for path in case_files(paths):
        try:
            case = checked_case(path, limits)
            with warnings.catch_warnings():  # nested tensors warn they are a prototype: once, when they run
                warnings.simplefilter("ignore")
                replay_cases(case, limits)
        except CaseFileError as exc:
            items.append(ReplayItem(str(path), UNREADABLE_PROPERTY, "", "", "", 0, problem=(exc.field, exc.message)))
            continue
        items.append(ReplayItem(str(path), case.property, case.op, case.variant, case.dtype,
                                _properties()[case.property].level, case.fingerprint, case.status,
                                crash=parse(case.failure.get("outcome")) in (Outcome.CRASHED, Outcome.TIMED_OUT)))
    return items


def _properties() -> dict[str, registry.PropertySpec]:
    """The registered properties by name (the installed suites, and custom ones loaded before)."""
    registry.load()  # the installed suites; not `load`'s answer, which leaves out custom folders it was not given
    return {spec.name: spec for spec in registry.properties()}


def checked_case(path: Path | str, limits: CaseLimits = CaseLimits()) -> CorpusCase:
    """A case file loaded and checked against what this TorchCTS can replay."""
    from torchcts.plan.catalog import find_op

    case = load_case(path, limits)
    known = _properties()
    if case.property not in known:
        raise CaseFileError(path, "property", f"{brief(case.property)}; known: {', '.join(known)}")
    if case.variant != known[case.property].variant:  # it names the item: nothing else may go there
        raise CaseFileError(path, "variant", f"{brief(case.variant)}; {case.property} cases are "
                                             f"{known[case.property].variant!r}")
    if dtype_names.lookup(case.dtype) is None:
        raise CaseFileError(path, "dtype", f"unknown dtype {brief(case.dtype)}")
    spec = known[case.property]
    if spec.scenario:  # a scenario case's op is the scenario's name: no OpInfo
        if case.op not in spec.items.scenarios:
            raise CaseFileError(path, "op", f"{brief(case.op)}; {case.property} scenarios: "
                                            f"{', '.join(spec.items.scenarios)}")
        return case
    try:
        find_op(case.op)
    except (KeyError, LookupError):
        raise CaseFileError(path, "op", f"no OpInfo {brief(case.op)} in this torch ({torch.__version__})") from None
    return case


def replayable(item: ReplayItem, limits: CaseLimits = CaseLimits()) -> tuple[CorpusCase, list[Any]]:
    """(the case, what its check runs on) for an item; `UnreadableCase` when its file cannot be read."""
    if item.problem is not None:
        raise UnreadableCase(item.path, *item.problem)
    try:
        case = checked_case(item.path, limits)
        return case, replay_cases(case, limits)
    except CaseFileError as exc:  # the file changed since the items were made
        raise UnreadableCase(item.path, exc.field, exc.message) from None


def replay_cases(case: CorpusCase, limits: CaseLimits = CaseLimits()) -> list[Any]:
    """What the property's check runs on: a strategies Case, or an OpInfo ErrorInput for `errors`."""
    from torch.testing._internal.opinfo.core import ErrorInput

    from torchcts.strategies.samples import Case

    sample = case.sample(limits)
    if case.property == "errors":
        error_type = getattr(builtins, str(case.inputs.get("error_type", "RuntimeError")), None)
        if not (isinstance(error_type, type) and issubclass(error_type, Exception)):
            raise CaseFileError(case.path or case.short_id, "inputs.error_type",
                                f"{brief(case.inputs.get('error_type'))} is not a built-in exception type")
        return [ErrorInput(sample, error_type=error_type, error_regex=str(case.inputs.get("error_regex", "")))]
    return [Case(case.op, case.variant, dtype_names.lookup(case.dtype), sample, -1,
                 (f"corpus case {case.short_id}",))]


def mark_status(path: Path | str, status: str, limits: CaseLimits = CaseLimits()) -> None:
    """Record a case as `open` or `fixed` in its file."""
    save_case(Path(path), load_case(path, limits).with_status(status))


@attrs.frozen
class ReplayVerdict:
    path: str
    case_id: str
    status: str  # the case's status before this replay
    outcome: str  # passed, failed, error, or not run
    reason: str
    unreadable: str | None = None  # "field: what is wrong" when the case file could not be replayed

    @property
    def still_failing(self) -> bool:
        return parse(self.outcome) in PROBLEMS and self.unreadable is None

    @property
    def regression(self) -> bool:
        return self.status == "fixed" and self.still_failing


def verdicts(records: Iterable[dict[str, Any]]) -> list[ReplayVerdict]:
    """One verdict per replayed case, from a replay run's result records."""
    found = []
    for record in records:
        case = record.get("case")
        if not isinstance(case, dict):
            continue
        found.append(ReplayVerdict(case.get("path", ""), record["item"], case.get("status", ""), record["outcome"],
                                   record.get("error") or record.get("reason") or "", case.get("unreadable")))
    return found


def run_replay(paths: list[Path], *, device: str, compile_backend: str | None, manifest: Path | None,
               results_dir: Path, update_status: bool, strict: bool, echo: Any,
               limits: CaseLimits = CaseLimits()) -> int:
    """Replay the cases under `paths` through the plugin, print a verdict per case; the exit status.

    A file that cannot be read (or is over `limits`) is one `unreadable` line; the others run, and
    the status is then 2."""
    from torchcts.results.writer import read_records
    from torchcts.plugin.launch import RunOptions, latest_run, run_folders, run_suites

    before = run_folders(results_dir)
    options = RunOptions(device=device, manifest=manifest, corpus=tuple(str(p) for p in paths),
                         results_dir=results_dir, compile_backend=compile_backend,
                         pytest_args=("--max-case-bytes", str(limits.max_case_bytes)))
    code = run_suites(options)
    folder = latest_run(results_dir, before)
    if folder is None:
        return code if code else 2
    found = verdicts(read_records(folder))
    for verdict in found:
        if verdict.unreadable is not None:
            echo(f"{'unreadable':24} {printable(verdict.path)}: {printable(verdict.unreadable)[:300]}")
            continue
        state = "REGRESSION (was fixed)" if verdict.regression else (
            "still failing" if verdict.still_failing else "now passing" if verdict.outcome == Outcome.PASSED
            else f"not run ({verdict.outcome})")
        echo(f"{state:24} {printable(verdict.path)}  {printable(verdict.case_id)}")
        if verdict.still_failing and verdict.reason:
            echo(f"{'':24} {printable(verdict.reason.splitlines()[0][:200])}")
        if update_status and verdict.path and verdict.outcome in (Outcome.PASSED, Outcome.FAILED):
            new_status = "fixed" if verdict.outcome == Outcome.PASSED else "open"
            if new_status != verdict.status and verdict.status in ("open", "fixed"):
                try:
                    mark_status(verdict.path, new_status, limits)
                except (CaseFileError, OSError) as exc:  # changed or removed since it was replayed
                    echo(f"{'':24} status not updated: {printable(str(exc))}")
                else:
                    echo(f"{'':24} status: {verdict.status} -> {new_status}")
    failing = sum(v.still_failing for v in found)
    regressions = sum(v.regression for v in found)
    unreadable = sum(v.unreadable is not None for v in found)
    echo(f"torchcts replay: {len(found)} cases, {failing} still failing, {regressions} regressions, "
         f"{unreadable} unreadable; records in {folder}")
    if code >= 128:  # interrupted: 128 + the signal's number
        return code
    if code == 2:  # the run itself stopped on bad input or an internal error
        return 2
    if unreadable:
        return EXIT_UNREADABLE
    return 1 if regressions or (strict and failing) else 0
