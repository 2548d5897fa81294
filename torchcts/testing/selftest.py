"""`torchcts selftest`: do the suites catch bugs? Run them against the faulty device, clean and per bug.

The clean run records, for every item, which aten overloads it ran on the device. Each seeded
bug is then tested by rerunning (with only that bug on) the ops whose items reached one of the
bug's overloads: an item that never runs an overload cannot see its bug. A bug is detected when
some item that passes on the clean backend fails or errors with the bug on; the clean run must
have no failure, except on ops where the faulty device is documented to differ from CPU
(`agreement.EXPLAINED`, e.g. scaled_dot_product_attention: math kernel vs CPU's fused kernel),
which are listed apart. The registered properties (`torchcts.plan.registry`) no clean item
exercised are listed too: a seeded bug only they could see cannot be detected.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from torchcts.outcomes import EXECUTED, PROBLEMS, Outcome
from torchcts.results.files import read_summary
from torchcts.results.writer import read_records
from torchcts.plugin.launch import latest_run, run_folders
from torchcts.plugin.session import TRACE_ENV
from torchcts.manifest.templates import render_template
from torchcts.testing.faulty.bugs import BUGS, ENV_VAR


DETECTS = (Outcome.FAILED, Outcome.ERROR)  # a seeded bug is detected by an item failing or erroring with it on


@attrs.frozen
class BugResult:
    name: str
    description: str
    reached_ops: tuple[str, ...]  # OpInfo ids whose items ran one of the bug's overloads
    failing_items: tuple[str, ...]

    @property
    def detected(self) -> bool:
        return bool(self.failing_items)


@attrs.frozen
class SelftestReport:
    clean_failures: tuple[str, ...]  # items the clean backend fails that nothing explains: harness bugs
    bugs: tuple[BugResult, ...]
    incomplete_runs: tuple[str, ...] = ()  # runs that did not finish
    explained_clean_failures: tuple[str, ...] = ()  # the faulty device's documented disagreements with CPU
    unexercised_properties: tuple[str, ...] = ()  # registered properties no clean item executed

    @property
    def detection_rate(self) -> float:
        return sum(b.detected for b in self.bugs) / len(self.bugs) if self.bugs else 0.0

    @property
    def ok(self) -> bool:
        return not self.clean_failures and not self.incomplete_runs and all(b.detected for b in self.bugs)


def _run(results_dir: Path, manifest: Path, level: int, dtypes: tuple[str, ...], max_examples: int,
         bugs: str, ops: tuple[str, ...] = ()) -> tuple[list[dict], bool]:
    """The records of one run, and whether it completed."""
    args = [sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--manifest", str(manifest),
            "--level", str(level), "--derandomize", "--max-examples", str(max_examples),
            "--results-dir", str(results_dir), "--corpus-dir", str(results_dir / "corpus"), "--no-report",
            "--no-shrink"]
    for dtype in dtypes:
        args[4:4] = ["--dtype", dtype]
    for pattern in ops:
        args[4:4] = ["--ops", pattern]
    env = dict(os.environ, **{ENV_VAR: bugs, TRACE_ENV: "1"})
    before = run_folders(results_dir)
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   check=False)
    folder = latest_run(results_dir, before)
    if folder is None:
        raise RuntimeError(f"the selftest run wrote no results under {results_dir}")
    complete = read_summary(folder)["status"] == "complete"
    return read_records(folder), complete


def run_selftest(level: int = 2, dtypes: tuple[str, ...] = ("float32",), max_examples: int = 10,
                 results_dir: Path = Path("results/selftest"), progress: Callable[[str], None] = print) -> SelftestReport:
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    manifest = results_dir / "manifest.py"
    manifest.write_text(render_template("complete", device_name="faulty"))
    progress("selftest: clean run against the faulty device ...")
    clean, clean_complete = _run(results_dir / "clean", manifest, level, dtypes, max_examples, bugs="")
    incomplete = [] if clean_complete else ["clean"]
    failing_clean = [r for r in clean if r["outcome"] in PROBLEMS]
    failed = tuple(r["item"] for r in failing_clean)
    explained = tuple(r["item"] for r in failing_clean if _documented_disagreement(r["op"]))
    reached: dict[str, set[str]] = {}
    for record in clean:
        for overload in record.get("device_ops", ()):
            reached.setdefault(overload, set()).add(record["op"])
    results = []
    for bug in (b for b in BUGS.values() if b.in_all):
        ops = sorted(set().union(*(reached.get(o, set()) for o in bug.ops)))
        failing: tuple[str, ...] = ()
        if ops:
            progress(f"selftest: {bug.name} ({len(ops)} ops reach it) ...")
            pattern = "^(" + "|".join(re.escape(op) for op in ops) + ")$"
            records, complete = _run(results_dir / bug.name, manifest, level, dtypes, max_examples, bugs=bug.name,
                                     ops=(pattern,))
            if not complete:
                incomplete.append(bug.name)
            # only items the clean backend passes can show a bug
            failing = tuple(r["item"] for r in records if r["outcome"] in DETECTS and r["item"] not in failed
                            and _detects(bug, r))
        else:
            progress(f"selftest: {bug.name}: no item runs {', '.join(bug.ops)}")
        results.append(BugResult(bug.name, bug.description, tuple(ops), failing))
    return SelftestReport(tuple(item for item in failed if item not in explained), tuple(results), tuple(incomplete),
                          explained, unexercised_properties(clean, level))


def _detects(bug: Any, record: dict[str, Any]) -> bool:
    """Whether a failing record shows the bug: a missing-kernel bug only as a missing-kernel error."""
    return bug.kind != "missing-kernel" or record.get("error_kind") == "missing_kernel"


def unexercised_properties(records: Iterable[dict[str, Any]], level: int, specs: Iterable[Any] | None = None
                           ) -> tuple[str, ...]:
    """The registered properties at or below `level` (`specs`: the registry's) with no executed item in `records`."""
    if specs is None:
        from torchcts.plan import registry

        specs = registry.load()
    executed = {r["property"] for r in records if r["outcome"] in EXECUTED}
    return tuple(p.name for p in specs if p.level <= level and p.name not in executed)


def _documented_disagreement(op: str) -> bool:
    """Whether the faulty device is documented to differ from CPU on this op (agreement.EXPLAINED)."""
    from torchcts.testing.faulty.agreement import EXPLAINED

    return EXPLAINED.get(op, ("",))[0] == "mismatch"


def print_report(report: SelftestReport, echo: Callable[[str], None] = print) -> None:
    detected = [b for b in report.bugs if b.detected]
    echo(f"seeded bugs detected: {len(detected)}/{len(report.bugs)} ({report.detection_rate:.0%})")
    for bug in report.bugs:
        if bug.detected:
            shown = ", ".join(bug.failing_items[:4]) + (" ..." if len(bug.failing_items) > 4 else "")
            echo(f"  detected {bug.name}: {len(bug.failing_items)} failing items ({shown})")
    for bug in report.bugs:
        if not bug.detected:
            why = "no item reaches its ops" if not bug.reached_ops else f"{len(bug.reached_ops)} ops reach it"
            echo(f"  MISSED   {bug.name}: {bug.description} ({why})")
    if report.unexercised_properties:
        echo("registered properties no clean item executed (bugs only they could see go unseen): "
             + ", ".join(report.unexercised_properties))
    if report.incomplete_runs:
        echo(f"runs that did not complete (a crash?): {', '.join(report.incomplete_runs)}")
    echo(f"clean backend failures: {len(report.clean_failures)}"
         + (": " + ", ".join(report.clean_failures[:10]) if report.clean_failures else ""))
    if report.explained_clean_failures:
        echo(f"clean backend items failing where the faulty device is documented to differ from CPU "
             f"(torchcts.testing.faulty.agreement.EXPLAINED; not counted): "
             + ", ".join(report.explained_clean_failures[:10]))
