"""`torchcts replay`: replay corpus cases through the plugin and say, per case, whether it still fails.

The plugin collects a `ReplayItem` per case file (`cases.replay_items`) instead of plan items when
`--replay PATH` is given, so a CI replays the corpus with its usual pytest runner; `run_replay`
runs the same session and reads its records to say, per case, whether it still fails, and to
track `fixed` cases. A file that cannot be read is one `unreadable` line; the other cases still run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import attrs

from torchcts.cases.files import CaseFileError, load_case, printable, save_case
from torchcts.cases.limits import CaseLimits
from torchcts.cases.replay_items import (  # noqa: F401 - re-exported for callers of the old location
    ReplayItem, UnreadableCase, checked_case, replay_cases, replay_items, replayable)
from torchcts.outcomes import PROBLEMS, Outcome, parse

EXIT_UNREADABLE = 2  # `torchcts replay` when a case file could not be read (the others still ran)


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
               shape_mode: str | None = None,
               results_dir: Path, update_status: bool, strict: bool, echo: Any,
               limits: CaseLimits = CaseLimits()) -> int:
    """Replay the cases under `paths` through the plugin, print a verdict per case; the exit status.

    A file that cannot be read (or is over `limits`) is one `unreadable` line; the others run, and
    the status is then 2."""
    from torchcts.results.writer import read_records
    from torchcts.plugin.launch import RunOptions, latest_run, run_folders, run_suites

    before = run_folders(results_dir)
    options = RunOptions(device=device, manifest=manifest, replay=tuple(str(p) for p in paths),
                         results_dir=results_dir, compile_backend=compile_backend, shape_mode=shape_mode,
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
