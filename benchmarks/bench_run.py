"""Harness overhead of `torchcts run`: a derandomized validation run against executing the same
kind of cases bare (already drawn: place on the device, run on device and CPU, compare).

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

from torchcts.engine import oracle
from torchcts.manifest import load_manifest
from torchcts.plan.catalog import find_op
from torchcts.plan.build import Selection, build_plan
from torchcts.results.writer import read_records
from torchcts.plugin.launch import RunOptions, latest_run, run_suites
from torchcts.strategies import call_variant, opinfo_samples, place
from torchcts.manifest.templates import render_template


def draw_cases(manifest, items, max_examples: int, level: int) -> list[tuple]:
    """The forward cases of every item, drawn once (not timed): (op, dtype, tolerance, case)."""
    drawn = []
    for item in items:
        op, dtype = find_op(item.op), getattr(torch, item.dtype)
        tol = oracle.tolerance(dtype, op, manifest)

        @seed(0)
        @settings(max_examples=max_examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(opinfo_samples(op, dtype, manifest=manifest, level=level))
        def collect(case):
            drawn.append((op, dtype, tol, case))

        collect()
    return drawn


def bare(drawn: list[tuple]) -> float:
    """Seconds to execute already-drawn cases bare: place, run on the device and on CPU, compare."""
    start = time.perf_counter()
    for op, dtype, tol, case in drawn:
        try:
            expected = call_variant(op, "function", place(case.sample, "cpu").value)
        except Exception:  # noqa: BLE001
            continue
        actual = call_variant(op, "function", place(case.sample, "cpu").value)
        oracle.compare(actual, expected, tol)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=".", help="OpInfo ids to include (regex)")
    parser.add_argument("--max-examples", type=int, default=10)
    parser.add_argument("--level", type=int, default=2)
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
    forward = [item for item in plan.items if item.property == "forward"]
    drawn = draw_cases(manifest, forward, args.max_examples, args.level)
    bare_seconds = bare(drawn)
    per_case_run, per_case_bare = run_seconds / cases, bare_seconds / len(drawn)
    print(f"run: {len(executed)} items, {cases} cases in {run_seconds:.1f} s "
          f"({len(executed) / run_seconds:.1f} items/s, {cases / run_seconds:.0f} cases/s)")
    print(f"bare: {len(drawn)} forward cases executed in {bare_seconds:.2f} s "
          f"({per_case_bare * 1e3:.3f} ms per case: place, device, CPU, compare)")
    print(f"harness overhead: {per_case_run / per_case_bare:.1f}x per case "
          f"({per_case_run * 1e3:.2f} ms per case in the run, pytest start-up, planning and drawing included)")


if __name__ == "__main__":
    main()
