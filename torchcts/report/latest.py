"""Which run `torchcts report` reports on when no folder is named: the newest conformance run that
executed at least one item.

A corpus replay (`run_kind` "replay"), a `--collect-only` session ("collect_only") and a run whose
selection executed nothing are never the default: reporting one would show a green page for a run
that tested nothing. Folders are taken newest first by name (a run id starts with its UTC start
time); one whose run.json cannot be read is skipped with a warning naming it. `device` narrows it to
the runs on one device (`torchcts triage cuda`, `torchcts run --last-failed`).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any, Callable

from torchcts.core.outcomes import EXECUTED
from torchcts.report.data import is_conformance_run
from torchcts.results.files import ResultFileError, iter_records, read_summary
from torchcts.results.history import Warn, warn_on_stderr

EXECUTED_VALUES = frozenset(o.value for o in EXECUTED)


def latest_run_folder(results_dir: Path | str, warn: Warn = warn_on_stderr, device: str | None = None,
                      like: Callable[[dict[str, Any]], bool] | None = None) -> tuple[Path | None, dict[str, int]]:
    """The folder to report on by default, or None; and how many newer folders were passed over, by why.

    `device`: only a run whose run.json names that device (`names_device`); `like`: only a run whose run.json
    environment it accepts (`--last-failed`: the same compile backend, validation and shard, not path-shapes);
    others are passed over."""
    passed_over: collections.Counter[str] = collections.Counter()
    for folder in sorted((path.parent for path in Path(results_dir).glob("*/run.json")), reverse=True):
        try:
            summary = read_summary(folder)
        except ResultFileError as exc:
            warn(f"run skipped: {exc}")
            passed_over["unreadable"] += 1
            continue
        if device is not None and not names_device(summary["environment"].get("device"), device):
            passed_over["on another device"] += 1
        elif like is not None and not like(summary["environment"]):
            passed_over["of another kind"] += 1
        elif not is_conformance_run(summary):
            passed_over[str(summary.get("run_kind") or "replay")] += 1
        elif not _executed_any(folder, summary, warn):
            passed_over["executed no item"] += 1
        else:
            return folder, dict(passed_over)
    return None, dict(passed_over)


def names_device(recorded: str | None, device: str) -> bool:
    """Whether a run.json's `environment.device` is `device`: the same string, or (`device` without an index)
    a device of that type (`cuda` names `cuda:1`)."""
    if recorded is None:
        return False
    return recorded == device or (":" not in device and recorded.split(":", 1)[0] == device)


def _executed_any(folder: Path, summary: dict[str, Any], warn: Warn) -> bool:
    """Whether the run executed an item: its final counts say so; a run still `running` (or killed,
    which leaves that status) is asked its records, up to the first executed one."""
    counts = summary["counts"]
    if summary.get("executed") or any(counts.get(outcome) for outcome in EXECUTED_VALUES):
        return True
    if summary.get("status") != "running":
        return False
    try:
        return any(record["outcome"] in EXECUTED_VALUES for record in iter_records(folder))
    except ResultFileError as exc:
        warn(f"run skipped: {exc}")
        return False
