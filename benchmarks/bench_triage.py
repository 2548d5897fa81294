"""How well `torchcts triage` groups a faulty-device run's failures by seeded bug: the cluster/bug table.

Ground truth without trusting triage: the run is made with the faulty device's trace on
(`TORCHCTS_TRACE_DEVICE_OPS=1`), so each record lists the seeded bugs that fired in its item
(`bug:<name>` in `device_ops`). A bug firing is not a bug causing (with many bugs on, several fire
in one item), so every failing item's stored case is replayed with each bug that fired in it
switched on alone: the bugs that reproduce the failure alone are its causes. Items whose failure
no single bug reproduces (bugs acting together), and items without a stored case (crashes, hangs),
are counted apart.

Prints the table (cluster, items, kind, family, condition, causes) and the figures: clusters with
one cause, bugs whose items land in one cluster, and the splits.

    TORCHCTS_FAULTY_BUGS=all TORCHCTS_TRACE_DEVICE_OPS=1 torchcts run --device faulty --manifest M ... \
        --results-dir R --corpus-dir C
    torchcts triage --from R/<run>
    python benchmarks/bench_triage.py R/<run> --manifest M
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROBLEMS = ("failed", "error", "crashed", "timed_out")
PREFIX = "bug:"


def fired_bugs(folder: Path) -> dict[str, tuple[set[str], str | None]]:
    """item -> (the bugs that fired in it, its stored case path) for every failing record."""
    found = {}
    for line in (folder / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("outcome") in PROBLEMS:
            bugs = {name[len(PREFIX):] for name in record.get("device_ops") or () if name.startswith(PREFIX)}
            stored = record.get("counterexample")
            found[record["item"]] = (bugs, stored.get("path") if isinstance(stored, dict) else None)
    return found


def causes(fired: dict[str, tuple[set[str], str | None]], manifest: Path, cwd: Path) -> dict[str, set[str]]:
    """item -> the bugs that alone make its stored case fail again (one replay session per bug)."""
    by_bug: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    for item, (bugs, case) in fired.items():
        for bug in bugs:
            if case:
                by_bug[bug].append((item, case))
    found: dict[str, set[str]] = collections.defaultdict(set)
    for number, (bug, cases) in enumerate(sorted(by_bug.items()), 1):
        print(f"replaying {len(cases)} cases with {bug} alone ({number}/{len(by_bug)}) ...", file=sys.stderr)
        with tempfile.TemporaryDirectory() as results:
            env = dict(os.environ, TORCHCTS_FAULTY="1", TORCHCTS_FAULTY_BUGS=bug)
            subprocess.run([sys.executable, "-m", "torchcts", "replay", "--device", "faulty", "--manifest",
                            str(manifest), "--results-dir", results, *sorted({c for _, c in cases})],
                           env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            failing = set()
            for records in Path(results).glob("*/records.jsonl"):
                for line in records.read_text().splitlines():
                    record = json.loads(line)
                    case = record.get("case")
                    if isinstance(case, dict) and record.get("outcome") in PROBLEMS:
                        failing.add(os.path.realpath(cwd / case.get("path", "")))
        for item, case in cases:
            if os.path.realpath(cwd / case) in failing:
                found[item].add(bug)
    return found


def table(triage: dict, fired: dict, cause: dict[str, set[str]]) -> None:
    bug_clusters: dict[str, list[int]] = collections.defaultdict(list)
    pure = mixed = unexplained = 0
    print("| # | items | kind | family | condition | causes (items) |")
    print("|---|---|---|---|---|---|")
    for number, cluster in enumerate(triage["clusters"], 1):
        counts = collections.Counter(bug for item in cluster["items"] for bug in cause.get(item, ()))
        alone = sum(1 for item in cluster["items"] if not cause.get(item))
        for bug in counts:
            bug_clusters[bug].append(number)
        label = ", ".join(f"{bug} ({n})" for bug, n in counts.most_common()) or "-"
        if alone:
            label += f"; {alone} without a single-bug cause"
        # a cluster is pure when one bug explains every item that has a cause
        explained = [cause[item] for item in cluster["items"] if cause.get(item)]
        if not explained:
            unexplained += 1
        elif set.intersection(*explained):
            pure += 1
        else:
            mixed += 1
        print(f"| {number} | {cluster['count']} | {cluster['kind']} | {cluster['family']} | "
              f"{cluster['condition'][:70]} | {label} |")
    split = {bug: numbers for bug, numbers in bug_clusters.items() if len(numbers) > 1}
    print()
    print(f"clusters: {len(triage['clusters'])}; pure (one bug explains every caused item): {pure}; mixed: {mixed}; "
          f"no single-bug cause: {unexplained}")
    print(f"bugs causing failures: {len(bug_clusters)}; in one cluster: {len(bug_clusters) - len(split)}; "
          f"split: {len(split)}")
    for bug, numbers in sorted(split.items()):
        print(f"  {bug}: clusters {numbers}")
    # the signature keeps the kind (a bug giving wrong values and errors is two clusters by design)
    kinds = {number: c["kind"] for number, c in enumerate(triage["clusters"], 1)}
    whole_per_kind = [bug for bug, numbers in bug_clusters.items()
                      if len({kinds[n] for n in numbers}) == len(numbers)]
    print(f"bugs with one cluster per kind of failure: {len(whole_per_kind)} of {len(bug_clusters)}")
    items_without = sum(1 for item in fired if not cause.get(item))
    print(f"failing items: {len(fired)}; with a single-bug cause: {len(fired) - items_without}")
    # weighted by items: how much of each bug its largest cluster holds, and how many items share their
    # cluster's most common cause
    clusters_of = {item: number for number, c in enumerate(triage["clusters"], 1) for item in c["items"]}
    per_bug: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for item, bugs in cause.items():
        for bug in bugs:
            per_bug[bug][clusters_of.get(item)] += 1
    held = sum(max(c.values()) for c in per_bug.values())
    total = sum(sum(c.values()) for c in per_bug.values())
    print(f"bug items in their bug's largest cluster: {held} of {total} ({100 * held / max(total, 1):.0f}%)")
    majority = 0
    for c in triage["clusters"]:
        counts = collections.Counter(bug for item in c["items"] for bug in cause.get(item, ()))
        if counts:
            top = counts.most_common(1)[0][0]
            majority += sum(1 for item in c["items"] if top in cause.get(item, ()))
    caused = len(fired) - items_without
    print(f"caused items whose cause is their cluster's most common: {majority} of {caused} "
          f"({100 * majority / max(caused, 1):.0f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a triaged run folder (records traced)")
    parser.add_argument("--manifest", type=Path, required=True, help="the manifest the run used")
    parser.add_argument("--triage", type=Path, help="triage.json (default: RUN/triage/triage.json)")
    parser.add_argument("--causes", type=Path, help="cache of the replayed causes (JSON; written when missing)")
    args = parser.parse_args()
    triage = json.loads((args.triage or args.run / "triage" / "triage.json").read_text())
    fired = fired_bugs(args.run)
    if args.causes is not None and args.causes.is_file():
        cause = {item: set(bugs) for item, bugs in json.loads(args.causes.read_text()).items()}
    else:
        cause = causes(fired, args.manifest.resolve(), Path.cwd())
        if args.causes is not None:
            args.causes.write_text(json.dumps({item: sorted(bugs) for item, bugs in cause.items()}, indent=1))
    table(triage, fired, cause)


if __name__ == "__main__":
    main()
