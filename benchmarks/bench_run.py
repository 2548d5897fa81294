"""Harness overhead of `torchcts run`: a derandomized validation run against executing the same
kind of cases bare (already drawn: place on the device, run on device and CPU, compare).

    python benchmarks/bench_run.py [--ops REGEX] [--max-examples N] [--level N]

Two figures (issue 21):
- old style: the whole run's time per case (pytest start-up, planning, recording included) over
  the forward property's bare core (CPU run, device run, value comparison) per drawn case.
- per property: the items' own time per case (their records' `duration_s`) over what the same
  property executes bare for each of the same kind of cases -- forward: CPU run, device run,
  comparison (with the tolerance model's widening) and the ULP rule's float64 reference run and
  comparison; layout: CPU run, device run on the re-laid-out case and on its contiguous twin,
  comparison -- weighted by the run's cases of the
  properties measured. Start-up, planning and recording are printed apart, and the whole run's time
  over the same bare cost for all its cases (start-up included). This is the fair
  figure: the run's forward items do the ULP reference run the old bare left out, and half of its
  cases are layout cases.
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import torch
from hypothesis import HealthCheck, given, seed, settings

from torchcts.engine import oracle, ulp_oracle
from torchcts.engine.context import contiguous_twin
from torchcts.manifest import load_manifest
from torchcts.plan.catalog import find_op, op_id
from torchcts.plan.build import Selection, build_plan
from torchcts.results.writer import read_records
from torchcts.plugin.launch import RunOptions, latest_run, run_suites
from torchcts.strategies import call_variant, opinfo_samples, place
from torchcts.manifest.templates import render_template

MEASURED = ("forward", "layout")  # the properties timed bare: 97% of a level-2 run's cases


def draw_cases(manifest, items, max_examples: int, level: int, special_values: bool | None = None) -> list[tuple]:
    """The cases of every item, drawn once (not timed): (op, dtype, tolerance, case)."""
    drawn = []
    for item in items:
        op, dtype = find_op(item.op), getattr(torch, item.dtype)
        tol = oracle.tolerance(dtype, op, manifest)

        @seed(0)
        @settings(max_examples=max_examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(opinfo_samples(op, dtype, manifest=manifest, level=level, special_values=special_values))
        def collect(case):
            drawn.append((op, dtype, tol, case))

        collect()
    return drawn


def run(op: Any, sample: Any) -> Any:
    return call_variant(op, "function", place(sample, "cpu").value)


def bare(drawn: list[tuple]) -> float:
    """Seconds to execute already-drawn cases bare: place, run on the device and on CPU, compare (the old measure)."""
    start = time.perf_counter()
    for op, dtype, tol, case in drawn:
        try:
            expected = run(op, case.sample)
        except Exception:  # noqa: BLE001
            continue
        oracle.compare(run(op, case.sample), expected, tol)
    return time.perf_counter() - start


def tolerance_for(op: Any, tol: Any, sample: Any, expected: Any) -> Any:
    """The tolerance model's answer for one case, as `CaseContext.assert_matches` computes it (part of comparing)."""
    tol = tol.widened(oracle.accumulation_widening([sample.input, list(sample.args), dict(sample.kwargs)], expected))
    return oracle.normwise_floor(tol, expected) if oracle.category(op.name) != "elementwise" else tol


def bare_forward(op: Any, dtype: torch.dtype, tol: Any, case: Any) -> None:
    """What the forward property executes for a case: CPU, device, comparison, the ULP rule's reference."""
    expected = run(op, case.sample)
    actual = run(op, case.sample)
    oracle.compare(actual, expected, tolerance_for(op, tol, case.sample, expected))
    if oracle.values_comparable(op.name) and ulp_oracle.measurable(dtype) and ulp_oracle.needs_reference_run(dtype):
        try:
            reference = run(op, ulp_oracle.float64_sample(case.sample))
        except Exception:  # noqa: BLE001 - no float64 reference: the property skips the rule too
            return
        ulp_oracle.compare(actual, expected, reference, ulp_oracle.rule_for(op_id(op), dtype))


def bare_layout(op: Any, dtype: torch.dtype, tol: Any, case: Any) -> None:
    """What the layout property executes for a case: CPU, the device on the case and on its contiguous twin, compare."""
    run(op, case.sample)
    relaid = run(op, case.sample)
    plain = run(op, contiguous_twin(case.sample))
    oracle.compare(relaid, plain, tolerance_for(op, tol, case.sample, plain))


def bare_seconds_per_case(drawn: list[tuple], execute: Callable[..., None]) -> float:
    """Mean seconds per drawn case of `execute` (a case CPU rejects costs what its rejection costs, as in the run)."""
    start = time.perf_counter()
    for op, dtype, tol, case in drawn:
        try:
            execute(op, dtype, tol, case)
        except Exception:  # noqa: BLE001 - the CPU oracle rejected the case: the run counts it too
            pass
    return (time.perf_counter() - start) / max(len(drawn), 1)


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
    item_seconds = sum(r.get("duration_s") or 0.0 for r in executed)
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
    print(f"harness overhead (old style): {per_case_run / per_case_bare:.1f}x per case "
          f"({per_case_run * 1e3:.2f} ms per case in the run, pytest start-up, planning and drawing included)")

    layout_items = [item for item in plan.items if item.property == "layout"]
    per_property_bare = {
        "forward": bare_seconds_per_case(drawn, bare_forward),
        "layout": bare_seconds_per_case(draw_cases(manifest, layout_items, args.max_examples, args.level,
                                                   special_values=False), bare_layout),
    }
    seconds, counts = collections.Counter(), collections.Counter()
    for record in executed:
        seconds[record["property"]] += record.get("duration_s") or 0.0
        counts[record["property"]] += record.get("examples", 0)
    measured = [name for name in MEASURED if counts[name]]
    run_measured = sum(seconds[name] for name in measured)
    bare_measured = sum(per_property_bare[name] * counts[name] for name in measured)
    for name in measured:
        per_case = seconds[name] / counts[name]
        print(f"  {name}: {counts[name]} cases, {per_case * 1e3:.2f} ms per case in its items, "
              f"{per_property_bare[name] * 1e3:.3f} ms bare: {per_case / per_property_bare[name]:.1f}x")
    print(f"start-up, planning and recording: {run_seconds - item_seconds:.1f} s of the run's {run_seconds:.1f} s "
          f"(items {item_seconds:.1f} s)")
    if bare_measured:
        print(f"harness overhead (per property, items only): {run_measured / bare_measured:.1f}x per case "
              f"({', '.join(measured)}: {sum(counts[n] for n in measured)} cases, "
              f"{run_measured / sum(counts[n] for n in measured) * 1e3:.2f} ms per case in the run)")
        bare_per_case = bare_measured / sum(counts[n] for n in measured)  # for the few cases of other properties too
        print(f"harness overhead (per property, whole run): {run_seconds / (bare_per_case * cases):.1f}x per case "
              f"(the run's {run_seconds:.1f} s, start-up and planning included, over {cases} cases at "
              f"{bare_per_case * 1e3:.3f} ms bare)")


if __name__ == "__main__":
    main()
