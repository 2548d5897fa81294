"""Probe results on disk and on the console: `probes.jsonl` in the run folder, the summary run.json
holds (`{"total", "failed", "problems"}`), and the few lines a console shows.

`probe_run` is what a conformance run calls before its first item: it picks the probes from the
manifest and the plan, runs them guarded (`runner`), writes the file and returns the summary.
Probes explain the failures that follow; they never change the claims, the plan or the outcomes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from torchcts import dtypes as dtype_names
from torchcts.disk import write_atomic
from torchcts.probe.result import FAILED, NO_PROBE, ProbeResult, error_line
from torchcts.probe.runner import probes_for, run_probes

FILE_NAME = "probes.jsonl"
MODE_ENV = "TORCHCTS_PROBES"  # "off": no probes; "in-process": never forked (unset: forked where the device allows)
MODES = ("", "off", "in-process")
SUMMARY_PROBLEMS = 100  # run.json lists at most this many problem lines (probes.jsonl has them all)
CONSOLE_PROBLEMS = 5  # the console shows at most this many, then "... and N more"


def write_probes(folder: Path, results: Iterable[ProbeResult]) -> Path:
    """Write `probes.jsonl` (one JSON object per probe) atomically into the run folder; its path (WriteError
    names it when it cannot be written)."""
    return write_atomic(Path(folder) / FILE_NAME, "".join(json.dumps(r.as_json(), sort_keys=True) + "\n"
                                                          for r in results))  # WriteError: a full disk


def summary(results: list[ProbeResult]) -> dict[str, Any]:
    """run.json's `probes`: how many ran, how many failed, and each failure's one line."""
    problems = [line for line in (r.problem() for r in results) if line]
    return {"total": len(results), "failed": len(problems), "problems": problems[:SUMMARY_PROBLEMS]}


def console_lines(results: list[ProbeResult], limit: int = CONSOLE_PROBLEMS) -> list[str]:
    """What the console says about the probes: one count line, then the first failures."""
    if not results:
        return []
    failed = [r for r in results if r.status == FAILED]
    unprobed = sum(r.status == NO_PROBE for r in results)
    counts = f"{len(results) - len(failed) - unprobed} ok, {len(failed)} failed" + (
        f", {unprobed} without a probe" if unprobed else "")
    lines = [f"torchcts: probes: {counts}" + (" (they explain the failures that follow; details in "
                                              f"{FILE_NAME})" if failed else "")]
    lines += [f"torchcts:   {r.problem()}" for r in failed[:limit]]
    if len(failed) > limit:
        lines.append(f"torchcts:   ... and {len(failed) - limit} more in {FILE_NAME}")
    return lines


def end_lines(summary: dict[str, Any] | None, folder: Path, limit: int = 3) -> list[str]:
    """The run summary's lines about failed probes (none when every probe passed or none ran)."""
    if not summary or not summary.get("failed"):
        return []
    problems = list(summary.get("problems") or [])
    lines = [f"torchcts: probes: {summary['failed']} of {summary['total']} failed (all in {Path(folder) / FILE_NAME})"]
    lines += [f"torchcts:   {line}" for line in problems[:limit]]
    if summary["failed"] > limit:
        lines.append(f"torchcts:   ... and {summary['failed'] - limit} more")
    return lines


def probe_run(device: str, manifest: Any, plan_dtypes: Iterable[Any], folder: Path, *, fork: bool,
              plan_capabilities: Iterable[str] | None = None, say: Callable[[str], None] = lambda line: None,
              environ: Mapping[str, str] = os.environ) -> dict[str, Any] | None:
    """Probe the run's dtypes (the names or dtypes its plan runs) and declared capabilities (those its plan's items
    test, when `plan_capabilities` is given) on `device`, write probes.jsonl into `folder`, say what failed; run.json's
    summary (None when TORCHCTS_PROBES=off).
    In forked children when `fork` (TORCHCTS_PROBES=in-process: here). Never raises (interrupts
    excepted): probes that cannot run at all are one problem in the summary."""
    mode = environ.get(MODE_ENV, "")
    if mode not in MODES:
        say(f"torchcts: warning: {MODE_ENV}={mode!r} is not one of {', '.join(m for m in MODES if m)}; probes run as usual")
    if mode == "off":
        return None
    fork = fork and mode != "in-process"
    try:
        probes = probes_for(manifest, {dtype_names.lookup(d) for d in plan_dtypes}, plan_capabilities)
        dtypes = sum(kind == "dtype" for kind, _ in probes)
        capabilities = len(probes) - dtypes
        say(f"torchcts: probing {dtypes} dtype(s) and {capabilities} capabilit{'y' if capabilities == 1 else 'ies'} "
            f"on {device} before the items run")
        results = run_probes(device, probes, manifest, fork=fork)
        write_probes(folder, results)
    except Exception as exc:  # noqa: BLE001 - a probe problem never stops the run
        problem = f"probes: could not run: {error_line(exc)}"
        say(f"torchcts: {problem}")
        return {"total": 0, "failed": 0, "problems": [problem]}
    for line in console_lines(results):
        say(line)
    return summary(results)
