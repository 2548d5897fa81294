"""What isolation costs: a bare forked call, one item in-process vs forked vs in a spawned worker, and a
level-1 validation run fully isolated (forked, then spawned) vs not.

    python benchmarks/bench_isolation.py [--level 1] [--dtype float32] [--max-examples 5] [--out DIR] [--items N]

Prints the cost of `run_forked` on an empty function (ms); for forward::abs::float32 run N times through
`run_item`: the in-process, forked and spawned milliseconds per item, and the spawned pool's start-up
(its first item's wall time less a warm item's: the worker imports torch, the suites and the op
database); then the wall time of the same derandomized run without isolation, with
`--subprocess-per-test`, and with `--subprocess-per-test --isolation-start spawn`, their ratios, and the
extra milliseconds per item.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from torchcts.isolation.fork import run_forked
from torchcts.manifest.templates import render_template


def bare_fork_ms(times: int = 50) -> float:
    import torch  # the parent holds torch, as a run does

    torch.ones(1)
    started = time.perf_counter()
    for _ in range(times):
        assert run_forked(lambda: 0, timeout_s=30).status == "finished"
    return (time.perf_counter() - started) * 1e3 / times


def per_item_ms(manifest: Path, times: int) -> dict[str, float]:
    """Milliseconds per item for one small item in-process, forked and spawned, and the spawned pool's start-up."""
    import attrs

    from torchcts.engine.run import EngineSettings, run_item, versions
    from torchcts.engine.targets import Target
    from torchcts.isolation import spawn
    from torchcts.isolation.policy import IsolationPolicy
    from torchcts.manifest import load_manifest
    from torchcts.plan.build import PlanItem

    loaded, _ = load_manifest(manifest)
    here = EngineSettings(target=Target("cpu"), manifest=loaded, level=1, max_examples=2, versions=versions())
    item = PlanItem("forward", "abs", "function", "float32", 1)
    run_item(item, here)  # the op database and the first draw, in this process

    def timed(settings: Any, count: int) -> float:
        started = time.perf_counter()
        for _ in range(count):
            assert run_item(item, settings)["outcome"] == "passed"
        return (time.perf_counter() - started) * 1e3 / count

    figures = {"in-process": timed(here, times),
               "forked": timed(attrs.evolve(here, isolation=IsolationPolicy(everything=True, start="fork")), times)}
    spawned = attrs.evolve(here, isolation=IsolationPolicy(everything=True, start="spawn"))
    first = timed(spawned, 1)
    figures["spawned"] = timed(spawned, times)
    figures["spawn start-up"] = first - figures["spawned"]
    spawn.close_pools()
    return figures


def timed_run(out: Path, manifest: Path, args: argparse.Namespace, *extra: str) -> tuple[float, int]:
    results = out / ("-".join(arg.strip("-") for arg in extra) or "plain")
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
    parser.add_argument("--items", type=int, default=20, help="runs of the one item per way (default 20)")
    parser.add_argument("--skip-runs", action="store_true", help="only the bare fork and the one-item figures")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = args.out / "manifest.py"
    manifest.write_text(render_template("complete", device_name="cpu"))
    print(f"bare forked call (torch imported): {bare_fork_ms():.1f} ms")
    figures = per_item_ms(manifest, args.items)
    print(f"forward::abs::float32, 2 examples, {args.items} runs each: in-process {figures['in-process']:.1f} ms, "
          f"forked {figures['forked']:.1f} ms, spawned {figures['spawned']:.1f} ms per item; spawned pool start-up "
          f"{figures['spawn start-up'] / 1e3:.1f} s (once per run, and again after each crash or hang)")
    if args.skip_runs:
        return
    plain_s, items = timed_run(args.out, manifest, args)
    for extra in (("--subprocess-per-test",), ("--subprocess-per-test", "--isolation-start", "spawn")):
        isolated_s, isolated_items = timed_run(args.out, manifest, args, *extra)
        print(f"level {args.level} {args.dtype} validation run, {items} items: unisolated {plain_s:.1f} s, "
              f"{' '.join(extra)} {isolated_s:.1f} s ({isolated_items} items): ratio {isolated_s / plain_s:.2f}x, "
              f"{(isolated_s - plain_s) * 1e3 / max(items, 1):.0f} ms more per item")


if __name__ == "__main__":
    main()
