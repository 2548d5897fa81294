"""Evidence of crashes and hangs in earlier runs on the same hardware, device and torch minor version.

`--adaptive-isolation auto` isolates an item when an earlier run recorded it `crashed` or
`timed_out`, or when an earlier run died while the item was running (its `started.jsonl` names
an item that never got a record: a suspected crash or hang that took the whole run down). The records
of a finished run (complete or partial) are read only when its run.json counts a crash or a hang: a
results folder of many 27,000-record runs is otherwise read whole at every run's start. A run
whose files cannot be read (`torchcts.results.files` says why) gives no evidence and one warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchcts.core.outcomes import Outcome
from torchcts.results.files import ResultFileError, iter_records, iter_started
from torchcts.results.history import Warn, comparable_runs, warn_on_stderr


def crash_evidence(results_dir: Path, environment: dict[str, Any], exclude: Path | None = None,
                   warn: Warn = warn_on_stderr) -> dict[str, str]:
    """item id -> what happened to it before, over the matching runs in `results_dir`."""
    evidence: dict[str, str] = {}
    for folder, summary in comparable_runs(results_dir, environment, exclude, warn):
        try:
            crashes, died_in = _run_evidence(folder, summary)
        except ResultFileError as exc:
            warn(f"earlier run skipped: {exc}")
            continue
        evidence.update(crashes)  # a later recorded crash or hang says more than an earlier one
        for item, what in died_in.items():
            evidence.setdefault(item, what)
    return evidence


def _run_evidence(folder: Path, summary: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """One run's evidence: items recorded crashed or timed out, and items it died in."""
    crashes: dict[str, str] = {}
    died_in: dict[str, str] = {}
    if summary["status"] != "running" and not any(summary["counts"].get(str(outcome))
                                                  for outcome in (Outcome.CRASHED, Outcome.TIMED_OUT)):
        return crashes, died_in  # a finished run's counts come from its records: none crashed or hung, none to read
    recorded = set()
    for record in iter_records(folder):
        recorded.add(record["item"])
        if record["outcome"] in (Outcome.CRASHED, Outcome.TIMED_OUT):
            crashes[record["item"]] = f"{record['outcome']} in run {summary.get('run_id')}"
    if summary["status"] == "running":  # the run died: what was running then never finished
        for started in iter_started(folder):
            if started["item"] not in recorded:
                died_in.setdefault(started["item"], f"run {summary.get('run_id')} died while it ran")
    return crashes, died_in
