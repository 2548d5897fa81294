"""`torchcts replay`: replay corpus cases through the plugin and say, per case, whether it still fails.

The plugin collects a `ReplayItem` per case file (`cases.replay_items`) instead of plan items when
`--replay PATH` is given, so a CI replays the corpus with its usual pytest runner; `run_replay`
runs the same session and reads its records to say, per case, whether it still fails, and to
track `fixed` cases. A file that cannot be read is one `unreadable` line; the other cases still run.
A case whose replay could not start says so and is never counted as failing: its file, or CPU (the reference),
refusing what it stores is `unreadable`; TorchCTS's own error (`error_kind` harness or setup) is a `harness error`.
The engine says `harness` only where the error is certainly TorchCTS's (`engine.outcome.certainly_torchcts`): an
unexpected exception that passed through torch or backend code is `backend`, so it still fails (a regression of a
fixed case). A replay without --manifest claims the case's own capability on the device type it names
(`engine.replay_manifest`): a facility the backend dropped since is a failure, not "not run".

A case found under `torch.compile(B)` says something about B only: replayed eagerly, or under another backend, its
verdict line says where it was found and where it ran, it is never a regression, and `--update-status` leaves its
status alone (passing elsewhere is no fix, failing elsewhere is not this finding). The same holds for an eager case
replayed under a compile backend, and for a case replayed on another device type than the one it names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import attrs

from torchcts.cases.files import CaseFileError, load_case, printable, save_case
from torchcts.core.case_limits import CaseLimits
from torchcts.cases.replay_items import (  # noqa: F401 - re-exported for callers of the old location
    ReplayItem, UnreadableCase, checked_case, replay_cases, replay_items, replayable)
from torchcts.core.outcomes import PROBLEMS, Outcome, parse
from torchcts.plugin.launch import RunOptions, latest_run, run_folders, run_suites
from torchcts.results.writer import read_records

EXIT_UNREADABLE = 2  # `torchcts replay` when a case file could not be read, or a replay could not start
NOT_STARTED_KINDS = ("harness", "setup")  # error kinds of a replay that TorchCTS itself could not run


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
    found_on: str | None = None  # the compile backend the case was found under (None: eager)
    replayed_on: str | None = None  # the compile backend this replay ran it under (None: eager)
    error_kind: str | None = None  # the record's, for an `error`: backend, missing_kernel, harness, setup, case_file
    found_device: str | None = None  # the device type the case names (None: not known)
    replayed_device: str | None = None  # the device type this replay ran it on (None: not known)

    @property
    def harness_error(self) -> bool:
        """Whether TorchCTS's own code could not replay the case: no verdict about the backend."""
        return self.unreadable is None and parse(self.outcome) is Outcome.ERROR and self.error_kind in NOT_STARTED_KINDS

    @property
    def still_failing(self) -> bool:
        return parse(self.outcome) in PROBLEMS and self.unreadable is None and not self.harness_error

    @property
    def other_device(self) -> bool:
        """Whether the case ran on another device type than the one it names (a faulty case replayed on cpu)."""
        return None not in (self.found_device, self.replayed_device) and self.found_device != self.replayed_device

    @property
    def elsewhere(self) -> bool:
        """Whether the case ran on another target than the one it was found on: eager vs a compile backend, another
        backend, or another device type."""
        return self.unreadable is None and (self.found_on != self.replayed_on or self.other_device)

    @property
    def regression(self) -> bool:
        return self.status == "fixed" and self.still_failing and not self.elsewhere

    def where(self) -> str:
        """Where it was found and where it ran, for a case replayed elsewhere."""
        found = "without torch.compile" if self.found_on is None else f"under torch.compile({self.found_on})"
        ran = "eager (no torch.compile)" if self.replayed_on is None else f"torch.compile({self.replayed_on})"
        if self.other_device:
            found, ran = f"on {self.found_device} {found}", f"{self.replayed_device}, {ran}"
        return f"found {found}; replayed on {ran}"


def verdicts(records: Iterable[dict[str, Any]], compile_backend: str | None = None,
             limits: CaseLimits = CaseLimits(), device: str | None = None) -> list[ReplayVerdict]:
    """One verdict per replayed case, from a replay run's result records: where the case was found (its file's
    `backend` and `device_type`) and where it ran (the record's `compile`, else `compile_backend`, the replay's
    --compile; `device`, the replay's --device)."""
    replayed_device = device.partition(":")[0] if device else None
    found = []
    for record in records:
        case = record.get("case")
        if not isinstance(case, dict):
            continue
        compiled = record.get("compile")
        replayed_on = compiled.get("backend") if isinstance(compiled, dict) else compile_backend
        path = case.get("path", "")
        unreadable = case.get("unreadable") or _refused_when_run(record, path)
        found_on, found_device = (_found_on(path, limits, replayed_on) if unreadable is None
                                  else (replayed_on, None))
        error_kind = record.get("error_kind")
        found.append(ReplayVerdict(path, record["item"], case.get("status", ""), record["outcome"],
                                   record.get("error") or record.get("reason") or "", unreadable,
                                   found_on, replayed_on, error_kind if isinstance(error_kind, str) else None,
                                   found_device, replayed_device))
    return found


def _refused_when_run(record: dict[str, Any], path: str) -> str | None:
    """"field: what is wrong" of a case refused once its replay began (its file changed since the items were made,
    or CPU refuses the values it stores: the record's `case_file` error); None otherwise."""
    if parse(record.get("outcome")) is not Outcome.ERROR or record.get("error_kind") != "case_file":
        return None
    line = str(record.get("error_line") or record.get("reason") or "")
    where = f"{path}: " if path else ""
    return line.split(where, 1)[1] if where and where in line else line


def _found_on(path: str, limits: CaseLimits, otherwise: str | None) -> tuple[str | None, str | None]:
    """(the compile backend, the device type) the case file at `path` was found under; (`otherwise`, None) when it
    cannot be read now (its status is then not updated either: `mark_status` reads it again)."""
    try:
        case = load_case(path, limits)
    except (CaseFileError, OSError):
        return otherwise, None
    return case.backend, case.device_type.partition(":")[0]


def run_replay(paths: list[Path], *, device: str, compile_backend: str | None, manifest: Path | None,
               shape_mode: str | None = None,
               results_dir: Path, update_status: bool, strict: bool, echo: Any,
               limits: CaseLimits = CaseLimits()) -> int:
    """Replay the cases under `paths` through the plugin, print a verdict per case; the exit status.

    A file that cannot be read (or is over `limits`) is one `unreadable` line; the others run, and
    the status is then 2."""
    before = run_folders(results_dir)
    options = RunOptions(device=device, manifest=manifest, replay=tuple(str(p) for p in paths),
                         results_dir=results_dir, compile_backend=compile_backend, shape_mode=shape_mode,
                         pytest_args=("--max-case-bytes", str(limits.max_case_bytes)))
    code = run_suites(options)
    folder = latest_run(results_dir, before)
    if folder is None:
        return code if code else 2
    found = verdicts(read_records(folder), compile_backend, limits, device)
    for verdict in found:
        if verdict.unreadable is not None:
            echo(f"{'unreadable':24} {printable(verdict.path)}: {printable(verdict.unreadable)[:300]}")
            continue
        state = "REGRESSION (was fixed)" if verdict.regression else (
            "still failing" if verdict.still_failing else "harness error" if verdict.harness_error
            else "now passing" if verdict.outcome == Outcome.PASSED else f"not run ({verdict.outcome})")
        where = f"  ({printable(verdict.where())})" if verdict.elsewhere else ""
        echo(f"{state:24} {printable(verdict.path)}  {printable(verdict.case_id)}{where}")
        if verdict.harness_error:
            echo(f"{'':24} TorchCTS could not replay the case (no verdict about the backend): "
                 f"{printable(verdict.reason.strip().splitlines()[0][:200]) if verdict.reason.strip() else ''}")
        elif verdict.reason and verdict.outcome != Outcome.PASSED:  # why it failed, or why it did not run
            echo(f"{'':24} {printable(verdict.reason.strip().splitlines()[0][:200])}")
        if update_status and verdict.elsewhere and verdict.status in ("open", "fixed"):
            echo(f"{'':24} status not updated: a replay on another target than the case's says nothing about it")
        elif update_status and verdict.path and verdict.outcome in (Outcome.PASSED, Outcome.FAILED):
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
    harness = sum(v.harness_error for v in found)
    echo(f"torchcts replay: {len(found)} cases, {failing} still failing, {regressions} regressions, "
         f"{unreadable} unreadable" + (f", {harness} harness errors" if harness else "") + f"; records in {folder}")
    if code >= 128:  # interrupted: 128 + the signal's number
        return code
    if code == 2:  # the run itself stopped on bad input or an internal error
        return 2
    if unreadable or harness:
        return EXIT_UNREADABLE
    return 1 if regressions or (strict and failing) else 0
