"""Fuzz against each seeded bug of the faulty device: found or not, time to first failure, case size,
and whether every case found replays (fails with the bug on, passes with it off) and exports.

For each bug, `torchcts fuzz --budget B` hunts over the ops that reach the bug's aten overloads
(read from a clean traced run of the faulty device, as `selftest` does) in float32, bfloat16 and
int32 at level 2. Prints one row per bug and the replay/export totals.

    python benchmarks/bench_fuzz.py [--budget 2m] [--bugs a,b] [--parallel 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from torchcts.fuzz.scheduler import LOST
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.testing.faulty.bugs import BUGS, ENV_VAR

DTYPES = ("float32", "bfloat16", "int32")
PY = sys.executable


def cli(args: list[str], bugs: str, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, **{ENV_VAR: bugs})
    return subprocess.run([PY, "-m", "torchcts", *args], env=env, capture_output=True, text=True, **kwargs)


def reaching_ops(out: Path, manifest: Path) -> dict[str, set[str]]:
    """aten overload -> OpInfo ids whose items ran it on the clean faulty device (level 2)."""
    results = out / "clean"
    if not list(results.glob("*/records.jsonl")):
        env = dict(os.environ, TORCHCTS_TRACE_DEVICE_OPS="1", **{ENV_VAR: ""})
        subprocess.run([PY, "-m", "torchcts", "run", "--device", "faulty", "--manifest", str(manifest),
                        "--level", "2", "--max-examples", "3", "--derandomize", "--results-dir", str(results),
                        "--corpus-dir", str(out / "clean-corpus"), *sum((["--dtype", d] for d in DTYPES), [])],
                       env=env, capture_output=True, text=True)
    reached: dict[str, set[str]] = {}
    for line in next(results.glob("*/records.jsonl")).read_text().splitlines():
        record = json.loads(line)
        for overload in record.get("device_ops", ()):
            reached.setdefault(overload, set()).add(record["op"])
    return reached


def hunt(bug, ops: set[str], out: Path, manifest: Path, budget: str) -> dict:
    folder = out / bug.name
    pattern = "^(" + "|".join(re.escape(o) for o in sorted(ops)) + ")$"
    result = cli(["fuzz", "--device", "faulty", "--manifest", str(manifest), "--budget", budget, "--ops", pattern,
                  "--level", "2", "--corpus-dir", str(folder / "corpus"), "--results-dir", str(folder / "results"),
                  "--task-timeout", "30", "--seed", "1", *sum((["--dtype", d] for d in DTYPES), [])], bug.name)
    summary = json.loads(next((folder / "results").glob("fuzz-*/fuzz.json")).read_text())
    cases = [case for item in summary["items"] for case in item["new_cases"]]
    firsts = [item["first_failure_s"] for item in summary["items"] if item["first_failure_s"] is not None]
    lost = [item["outcome"] for item in summary["items"] if item["outcome"] in LOST]
    return {"bug": bug.name, "kind": bug.kind, "ops": len(ops), "items": len(summary["items"]),
            "examples": summary["examples"], "cases": len(cases), "lost": lost, "exit": result.returncode,
            "first_s": min(firsts) if firsts else None,
            "elements": sorted(case["elements"] for case in cases)}


def replay(bug, out: Path) -> dict:
    """Replays of the bug's cases with the bug on and off; exported scripts of the first three."""
    corpus = out / bug.name / "corpus"
    files = sorted(corpus.glob("*.json"))
    if not files:
        return {"cases": 0}
    counts = {}
    for label, bugs in (("on", bug.name), ("off", "")):
        results = out / bug.name / f"replay-{label}"
        result = cli(["replay", str(corpus), "--device", "faulty", "--results-dir", str(results)], bugs)
        found = sorted(results.glob("*/records.jsonl"))
        if not found:
            print(f"replay of {corpus} with bugs={bugs!r} wrote no records (exit {result.returncode}):\n"
                  f"{result.stdout[-1500:]}{result.stderr[-1500:]}")
            return {"cases": 0}
        records = [json.loads(line) for line in found[-1].read_text().splitlines()]
        counts[label] = sum(r["outcome"] in (Outcome.FAILED, Outcome.ERROR) for r in records if "case" in r)
    scripts = {"on": 0, "off": 0}
    for path in files[:3]:
        script = cli(["replay", "--export-script", str(path)], "").stdout
        target = out / bug.name / f"{path.stem}.py"
        target.write_text(script)
        for label, bugs in (("on", bug.name), ("off", "")):
            env = dict(os.environ, **{ENV_VAR: bugs})
            rc = subprocess.run([PY, str(target)], env=env, capture_output=True, text=True).returncode
            scripts[label] += rc == 1
    return {"cases": len(files), "fail_on": counts["on"], "fail_off": counts["off"],
            "scripts": min(3, len(files)), "scripts_fail_on": scripts["on"], "scripts_fail_off": scripts["off"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="2m")
    parser.add_argument("--bugs", default="", help="comma-separated bug names (default: all)")
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("results/bench-fuzz"))
    parser.add_argument("--replay-only", action="store_true", help="reuse the corpora of an earlier hunt in --out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = args.out / "manifest.py"
    manifest.write_text(render_template("complete", device_name="faulty"))
    reached = reaching_ops(args.out, manifest)
    chosen = [b for b in BUGS.values() if not args.bugs or b.name in args.bugs.split(",")]
    jobs = {b.name: set().union(*(reached.get(o, set()) for o in b.ops)) for b in chosen}
    with ThreadPoolExecutor(args.parallel) as pool:
        rows = [] if args.replay_only else list(pool.map(
            lambda b: hunt(b, jobs[b.name], args.out, manifest, args.budget) if jobs[b.name]
            else {"bug": b.name, "kind": b.kind, "ops": 0}, chosen))
    print(f"{'bug':32} {'kind':12} {'ops':>3} {'found':>5} {'first s':>7} {'cases':>5} {'elements (min/median)':>22}")
    for row in rows:
        found = bool(row.get("cases")) or bool(row.get("lost"))
        sizes = row.get("elements") or []
        size = f"{sizes[0]}/{statistics.median(sizes):g}" if sizes else "-"
        first = f"{row['first_s']:.1f}" if row.get("first_s") is not None else "-"
        print(f"{row['bug']:32} {row['kind']:12} {row['ops']:>3} {'yes' if found else 'NO':>5} {first:>7} "
              f"{row.get('cases', 0):>5} {size:>22}" + (f"  ({', '.join(row['lost'])})" if row.get("lost") else ""))
    wrong = [b for b in chosen if b.kind == "wrong-result"]
    found = sum(1 for row in rows if row.get("cases") and row["kind"] == "wrong-result")
    print(f"wrong-result bugs found within {args.budget}: {found}/{len(wrong)}")
    totals = {"cases": 0, "fail_on": 0, "fail_off": 0, "scripts": 0, "scripts_fail_on": 0, "scripts_fail_off": 0}
    for bug in wrong:
        for key, value in replay(bug, args.out).items():
            totals[key] += value
    if totals["cases"]:
        print(f"replay: {totals['fail_on']}/{totals['cases']} cases fail with the bug on "
              f"({100 * totals['fail_on'] / totals['cases']:.0f}%), {totals['fail_off']}/{totals['cases']} with it off")
        print(f"exported scripts: {totals['scripts_fail_on']}/{totals['scripts']} reproduce with the bug on, "
              f"{totals['scripts_fail_off']}/{totals['scripts']} with it off")


if __name__ == "__main__":
    main()
