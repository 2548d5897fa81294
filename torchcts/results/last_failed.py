"""`torchcts run --last-failed`: which items an earlier run left failing, read from its run folder.

The earlier run's folder is untrusted data: its run.json and records.jsonl are read only through
the bounded, validating reader (`torchcts.results.files`); a bad file is a `ResultFileError`
naming the file and line. An item is rerun when its last record in that run is failed, error,
crashed or timed_out; every other item of the new plan is deselected with a reason that names
what it was in that run (`--last-failed: passed in <run-id>`). No torch: the CLI reads it before
a run starts, the plugin again when it builds the plan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import attrs

from torchcts.core.outcomes import PROBLEMS
from torchcts.results.files import iter_records, iter_started, read_summary

RERUN_OUTCOMES = frozenset(outcome.value for outcome in PROBLEMS)  # failed, error, crashed, timed_out


@attrs.frozen(eq=False)
class LastFailed:
    """The items of one earlier run and the outcome each last recorded there."""

    run_id: str
    folder: Path
    outcomes: Mapping[str, str]  # item id -> outcome

    @property
    def failed(self) -> tuple[str, ...]:
        """The item ids to rerun, sorted."""
        return tuple(sorted(item for item, outcome in self.outcomes.items() if outcome in RERUN_OUTCOMES))

    def reason(self, item_id: str) -> str | None:
        """Why `--last-failed` leaves the item out, or None when it failed in that run (it is rerun)."""
        outcome = self.outcomes.get(item_id)
        if outcome in RERUN_OUTCOMES:
            return None
        if outcome is None:
            return f"--last-failed: not in {self.run_id}"
        return f"--last-failed: {outcome} in {self.run_id}"

    def describe(self) -> dict[str, object]:
        """What run.json's `selection.last_failed` says: the run, its folder, how many items it reruns."""
        return {"run_id": self.run_id, "folder": str(self.folder), "items": len(self.failed)}


def read_last_failed(folder: Path | str) -> LastFailed:
    """The outcomes of the run in `folder` (ResultFileError when its run.json or records.jsonl cannot be used)."""
    folder = Path(folder)
    summary = read_summary(folder)
    outcomes: dict[str, str] = {}
    for record in iter_records(folder):
        outcomes[record["item"]] = record["outcome"]  # the last record of an item is its outcome
    if summary.get("status") == "running":  # the run died (a crash, SIGKILL): what it was running never finished
        interrupted = summary.get("interrupted") or {}
        for started in iter_started(folder):
            if started["item"] not in outcomes and started["item"] != interrupted.get("item"):
                outcomes[started["item"]] = "crashed"
    run_id = summary.get("run_id")  # untrusted: it goes into every deselected record's reason, so it is bounded
    run_id = run_id if isinstance(run_id, str) and 0 < len(run_id) <= 64 and run_id.isprintable() else folder.name
    return LastFailed(run_id, folder, outcomes)
