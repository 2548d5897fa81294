"""Earlier runs comparable with a run: same hardware key, device, compile backend and torch minor.

Baselines (reports) and crash evidence (adaptive isolation) both look only at such runs. Reads
files only; no torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator


def torch_minor_of(version: Any) -> str:
    """`2.13` for `2.13.0+cpu`."""
    return ".".join(str(version or "").split("+")[0].split(".")[:2])


def comparison_key(environment: dict[str, Any]) -> tuple[Any, ...]:
    return (environment.get("hardware_key"), environment.get("device"), environment.get("compile"),
            torch_minor_of(environment.get("torch")))


def comparable_runs(results_dir: Path | str, environment: dict[str, Any],
                    exclude: Path | str | None = None) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(folder, run.json) of every readable run in `results_dir` comparable with `environment`."""
    key = comparison_key(environment)
    excluded = Path(exclude).resolve() if exclude is not None else None
    for summary_path in sorted(Path(results_dir).glob("*/run.json")):
        if excluded is not None and summary_path.parent.resolve() == excluded:
            continue
        try:
            summary = json.loads(summary_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if comparison_key(summary.get("environment", {})) == key:
            yield summary_path.parent, summary
