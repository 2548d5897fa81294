"""Evidence of crashes and hangs in earlier runs on the same hardware, device and torch minor version.

`--adaptive-isolation auto` isolates an item when an earlier run recorded it `crashed` or
`timed_out`, or when an earlier run died while the item was running (its `started.jsonl` names
an item that never got a record: a suspected crash or hang that took the whole run down).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torchcts.run_history import comparable_runs


def crash_evidence(results_dir: Path, environment: dict[str, Any], exclude: Path | None = None) -> dict[str, str]:
    """item id -> what happened to it before, over the matching runs in `results_dir`."""
    evidence: dict[str, str] = {}
    for folder, summary in comparable_runs(results_dir, environment, exclude):
        recorded = set()
        for record in _lines(folder / "records.jsonl"):
            recorded.add(record.get("item"))
            if record.get("outcome") in ("crashed", "timed_out"):
                evidence[record["item"]] = f"{record['outcome']} in run {summary.get('run_id')}"
        if summary.get("status") == "running":  # the run died: what was running then never finished
            for started in _lines(folder / "started.jsonl"):
                if started.get("item") not in recorded:
                    evidence.setdefault(started["item"], f"run {summary.get('run_id')} died while it ran")
    return evidence


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except OSError:
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return found
