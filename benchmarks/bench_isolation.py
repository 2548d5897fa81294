"""What isolation costs: a bare forked call, and a level-1 validation run fully isolated vs not.

    python benchmarks/bench_isolation.py [--level 1] [--dtype float32] [--max-examples 5] [--out DIR]

Prints the cost of `run_forked` on an empty function (ms), the wall time of the same derandomized
run with and without `--subprocess-per-test`, their ratio, and the extra milliseconds per item.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from torchcts.isolation.fork import run_forked
from torchcts.manifest.templates import render_template


def bare_fork_ms(times: int = 50) -> float:
    import torch  # the parent holds torch, as a run does

    torch.ones(1)
    started = time.perf_counter()
    for _ in range(times):
        assert run_forked(lambda: 0, timeout_s=30).status == "finished"
    return (time.perf_counter() - started) * 1e3 / times


def timed_run(out: Path, manifest: Path, args: argparse.Namespace, *extra: str) -> tuple[float, int]:
    results = out / ("isolated" if extra else "plain")
    command = [sys.executable, "-m", "torchcts", "run", "--validation", "--derandomize", "--manifest", str(manifest),
               "--level", str(args.level), "--dtype", args.dtype, "--max-examples", str(args.max_examples),
               "--results-dir", str(results), "--adaptive-isolation", "off", "--known-segfault-policy", "off", *extra]
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    summary = json.loads(sorted(results.glob("*/run.json"))[-1].read_text())
    return elapsed, summary["executed"] + summary["counts"].get("cpu_contract", 0) + \
        summary["counts"].get("runtime_unavailable", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--max-examples", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("results/bench-isolation"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = args.out / "manifest.py"
    manifest.write_text(render_template("complete", device_name="cpu"))
    print(f"bare forked call (torch imported): {bare_fork_ms():.1f} ms")
    plain_s, items = timed_run(args.out, manifest, args)
    isolated_s, isolated_items = timed_run(args.out, manifest, args, "--subprocess-per-test")
    print(f"level {args.level} {args.dtype} validation run, {items} items: unisolated {plain_s:.1f} s, "
          f"fully isolated {isolated_s:.1f} s ({isolated_items} items): ratio {isolated_s / plain_s:.2f}x, "
          f"{(isolated_s - plain_s) * 1e3 / max(items, 1):.0f} ms more per item")


if __name__ == "__main__":
    main()
