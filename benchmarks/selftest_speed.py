"""How much the selftest's pruning and workers save: items per bug run before and after, and wall time.

Runs `torchcts selftest` with the options given after `--` (e.g. `-- --phase opinfo --ops '^(add|sum)$'`; none:
the whole selftest), or reads the results folder of one already run (`--from DIR`), and prints, per phase, the
items its clean run executed and, per bug, the items the selftest reran for it before this pruning (every item of
an op or scenario that reached one of its overloads) and after (the items of the properties x ops its run
selects: those where its condition held, `torchcts/testing/selftest_reach.py`), and what the bug runs (some shared
by several bugs) executed.
Also the wall time and the load average around it: the machine may be shared, so say under which load you measured.

    python benchmarks/selftest_speed.py --workers 2 -- --phase opinfo --dtype float32
    python benchmarks/selftest_speed.py --from results/selftest
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from torchcts.results.writer import read_records
from torchcts.testing.faulty.bugs import BUGS
from torchcts.testing.selftest import phases
from torchcts.testing.selftest_reach import bug_reach, reached_items, selected_items


def run_folders(folder: Path) -> list[Path]:
    """The run folders under a run's --results-dir (a clean run's shards each have their own)."""
    return sorted(p.parent for p in folder.glob("**/run.json"))


def executed(records: list[dict]) -> list[dict]:
    return [r for r in records if "device_ops" in r]


def report(results_dir: Path) -> None:
    every = {phase.name: phase for phase in phases(2, ())}
    owned = {suite for phase in every.values() for suite in phase.bug_suites}
    totals = {"bugs": 0, "runs": 0, "before": 0, "after": 0, "ran": 0}
    for phase_dir in sorted(p for p in results_dir.iterdir() if p.is_dir() and p.name in every):
        clean = [r for folder in run_folders(phase_dir / "clean") for r in executed(read_records(folder))]
        print(f"\n## {phase_dir.name}: clean run executed {len(clean)} items\n")
        print("| bug | reached ops | items before | items after | would fire |")
        print("| --- | --- | --- | --- | --- |")
        for bug in BUGS.values():
            if not bug.in_all or not every[phase_dir.name].runs(bug, owned) or not _reached(clean, bug):
                continue
            reach = bug_reach(clean, bug, every[phase_dir.name].properties)
            before, after = len(reached_items(clean, reach)), len(selected_items(clean, reach))
            print(f"| {bug.name} | {len(reach.reached_ops)} | {before} | {after} | {len(reach.firing_items)} |")
            totals["bugs"] += 1
            totals["before"] += before
            totals["after"] += after
        runs = [f for d in phase_dir.iterdir() if d.is_dir() and d.name not in ("clean", "corpus") for f in run_folders(d)]
        ran = sum(len(executed(read_records(folder))) for folder in runs)
        print(f"\n{phase_dir.name}: {len(runs)} bug runs (shared ones: "
              f"{sum(f.parent.name.startswith('group-') for f in runs)}) executed {ran} items")
        totals["runs"] += len(runs)
        totals["ran"] += ran
    print(f"\nbugs reached: {totals['bugs']}, bug runs: {totals['runs']}; items a run per bug would rerun before the "
          f"pruning: {totals['before']}, after: {totals['after']}; items the bug runs executed: {totals['ran']}")


def _reached(clean: list[dict], bug) -> bool:
    overloads = set(bug.ops)
    return any(overloads.intersection(r["device_ops"]) for r in clean)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="read this selftest results folder; run nothing")
    parser.add_argument("--workers", type=int, help="selftest --workers (default: its own, one per usable core)")
    parser.add_argument("--results-dir", type=Path, default=Path("results/selftest-speed"))
    parser.add_argument("selftest_args", nargs="*", help="options for `torchcts selftest`, after --")
    options = parser.parse_args()
    if options.source is None:
        command = [sys.executable, "-m", "torchcts", "selftest", "--results-dir", str(options.results_dir),
                   *(["--workers", str(options.workers)] if options.workers else []), *options.selftest_args]
        load = os.getloadavg()
        started = time.monotonic()
        done = subprocess.run(command, check=False)
        seconds = time.monotonic() - started
        print(f"\n`{' '.join(command[1:])}`: exit {done.returncode}, {seconds:.0f} s wall on {os.cpu_count()} cores; "
              f"load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after")
        options.source = options.results_dir
    report(options.source)


if __name__ == "__main__":
    main()
