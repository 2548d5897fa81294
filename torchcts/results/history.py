"""Earlier runs comparable with a run: same hardware key, device, compile backend and torch minor.

Baselines (reports) and crash evidence (adaptive isolation) both look only at such runs. Reads
files only (through `result_files`, which validates them); no torch. An earlier run whose
`run.json` cannot be read is skipped with one warning naming the file: a corrupt folder never
breaks a later command.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from torchcts.results.files import ResultFileError, read_summary

Warn = Callable[[str], None]


_warned: set[str] = set()


def warn_on_stderr(message: str) -> None:
    """The default for `warn`: one line on stderr, once per process (a run's crash history and its report's
    baseline search walk the same earlier runs: a corrupt one is said once)."""
    if message in _warned:
        return
    _warned.add(message)
    print(f"torchcts: warning: {message}", file=sys.stderr)


def torch_minor_of(version: Any) -> str:
    """`2.13` for `2.13.0+cpu`."""
    return ".".join(str(version or "").split("+")[0].split(".")[:2])


def comparison_key(environment: dict[str, Any]) -> tuple[Any, ...]:
    return (environment.get("hardware_key"), environment.get("device"), environment.get("compile"),
            torch_minor_of(environment.get("torch")))


def comparable_runs(results_dir: Path | str, environment: dict[str, Any], exclude: Path | str | None = None,
                    warn: Warn = warn_on_stderr) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(folder, validated run.json) of every run in `results_dir` comparable with `environment`.

    A run.json that cannot be read or is malformed is skipped after one `warn` naming it."""
    key = comparison_key(environment)
    excluded = Path(exclude).resolve() if exclude is not None else None
    for summary_path in sorted(Path(results_dir).glob("*/run.json")):
        if excluded is not None and summary_path.parent.resolve() == excluded:
            continue
        try:
            summary = read_summary(summary_path.parent)
        except ResultFileError as exc:
            warn(f"earlier run skipped: {exc}")
            continue
        if comparison_key(summary["environment"]) == key:
            yield summary_path.parent, summary
