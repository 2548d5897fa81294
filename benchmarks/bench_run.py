"""Harness overhead of `torchcts run`: a derandomized validation run against executing the same
cases bare (draw, place on the device, run on device and CPU, compare), over the same items.

    python benchmarks/bench_run.py [--ops REGEX] [--max-examples N] [--level N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import torch
from hypothesis import HealthCheck, given, seed, settings

from torchcts import oracle
from torchcts.manifest import load_manifest
from torchcts.opinfo_catalog import find_op
from torchcts.plan import Selection, build_plan
from torchcts.results import read_records
from torchcts.runner import RunOptions, latest_run, run_suites
from torchcts.strategies import call_variant, opinfo_samples, place
from torchcts.templates import render_template


def bare(manifest, items, max_examples: int) -> tuple[float, int]:
    """Seconds and cases for drawing and checking every forward item's cases without the harness."""
    cases = 0
    start = time.perf_counter()
    for item in items:
        op, dtype = find_op(item.op), getattr(torch, item.dtype)
        tol = oracle.tolerance(dtype, op, manifest)

        @seed(0)
        @settings(max_examples=max_examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(opinfo_samples(op, dtype, manifest=manifest))
        def check(case):
            nonlocal cases
            cases += 1
            try:
                expected = call_variant(op, "function", place(case.sample, "cpu").value)
            except Exception:  # noqa: BLE001
                return
            actual = call_variant(op, "function", place(case.sample, "cpu").value)
            oracle.compare(actual, expected, tol)

        check()
    return time.perf_counter() - start, cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="^[a-f]", help="OpInfo ids to include (regex)")
    parser.add_argument("--max-examples", type=int, default=10)
    parser.add_argument("--level", type=int, default=1)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    folder = Path(tempfile.mkdtemp())
    manifest_path = folder / "manifest.py"
    manifest_path.write_text(render_template("minimal", device_name="cpu"))
    options = RunOptions(device=None, manifest=manifest_path, level=args.level, dtypes=("float32",), ops=(args.ops,),
                         derandomize=True, max_examples=args.max_examples, results_dir=folder / "results",
                         validation=True)
    start = time.perf_counter()
    run_suites(options)
    run_seconds = time.perf_counter() - start
    records = read_records(latest_run(folder / "results"))
    executed = [r for r in records if r["outcome"] in ("passed", "failed", "error")]
    cases = sum(r.get("examples", 0) for r in executed)
    manifest, _ = load_manifest(manifest_path)
    plan = build_plan(manifest, Selection(level=args.level, dtypes=(torch.float32,), op_patterns=(args.ops,)))
    bare_seconds, bare_cases = bare(manifest, plan.items, args.max_examples)
    print(f"run: {len(executed)} items, {cases} cases in {run_seconds:.1f} s "
          f"({len(executed) / run_seconds:.1f} items/s, {cases / run_seconds:.0f} cases/s)")
    print(f"bare: {bare_cases} cases in {bare_seconds:.1f} s; harness overhead {run_seconds / bare_seconds:.2f}x "
          "(run wall time, pytest start-up and plan included, over bare drawing + executing + comparing)")


if __name__ == "__main__":
    main()
