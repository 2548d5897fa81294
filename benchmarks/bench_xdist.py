"""Wall time of the same derandomized validation run in one process and over pytest-xdist workers
(`torchcts run -n N`), side by side, and whether the two agree item by item (outcome and case fingerprints).

    python benchmarks/bench_xdist.py [--workers 2] [--level 1] [--ops REGEX] [--max-examples 10]

Each run is a `torchcts run` subprocess, as a user starts it: start-up, planning and, with workers,
every worker's own start-up (torch, the op database, the plan) are in the figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torchcts.manifest.templates import render_template


def timed_run(cwd: Path, results: str, args: list[str]) -> tuple[float, Path]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "torchcts", "run", *args, "--results-dir", results],
                          cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"torchcts run exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    [folder] = [path.parent for path in (cwd / results).glob("*/run.json")]
    return seconds, folder


def executed(folder: Path) -> dict[str, tuple]:
    records = (json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines())
    return {r["item"]: (r["outcome"], r.get("fingerprints")) for r in records
            if r["outcome"] in ("passed", "failed", "error", "crashed", "timed_out")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="2", help="-n for the second run (a count or auto)")
    parser.add_argument("--level", default="1")
    parser.add_argument("--ops", default=".", help="OpInfo and scenario ids to include (regex)")
    parser.add_argument("--max-examples", default="10")
    args = parser.parse_args()
    cwd = Path(tempfile.mkdtemp())
    (cwd / "manifest.py").write_text(render_template("minimal", device_name="cpu"))
    common = ["--validation", "--derandomize", "--level", args.level, "--dtype", "float32", "--ops", args.ops,
              "--max-examples", args.max_examples, "--no-report"]
    alone_s, alone = timed_run(cwd, "single", common)
    spread_s, spread = timed_run(cwd, "workers", common + ["-n", args.workers])
    items = executed(alone)
    same = items == executed(spread)
    print(f"level-{args.level} float32 validation run, {len(items)} items executed, --max-examples {args.max_examples}")
    print(f"one process:        {alone_s:7.1f} s")
    print(f"-n {args.workers:<16} {spread_s:7.1f} s  ({alone_s / spread_s:.2f}x)")
    print(f"same outcomes and fingerprints: {same}")


if __name__ == "__main__":
    main()
