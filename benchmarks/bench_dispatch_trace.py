"""What `--trace-dispatch` costs: the same items run with and without the dispatch trace.

    python benchmarks/bench_dispatch_trace.py [--device cpu] [--repeats 5] [--max-examples 10] [--ops abs,add,...]

Runs each item (property `forward`, float32, derandomized: the same cases every time) `--repeats`
times traced and untraced, alternating so that a busy machine slows both alike, and prints the
median seconds per item of each, their ratio and what the trace recorded. Also prints the cost of
one op call under the recording mode (a small `torch.add`, 20,000 calls), the part of the item
cost that grows with the number of ops a case runs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from torchcts.engine.dispatch_trace import DispatchTrace
from torchcts.engine.run import HARNESS_THREADS, EngineSettings, run_item
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan.build import PlanItem

DEFAULT_OPS = "abs,add,mul,sum,nn.functional.linear,matmul,softmax,cumsum,where,index_select"


def per_op_cost(calls: int = 20_000) -> tuple[float, float]:
    """Microseconds of one small `torch.add`, untraced and traced."""
    a, b = torch.ones(4), torch.ones(4)
    times = []
    for traced in (False, True):
        trace = DispatchTrace("cpu")
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            if traced:
                with trace.device_side():
                    for _ in range(calls):
                        torch.add(a, b)
            else:
                for _ in range(calls):
                    torch.add(a, b)
            best = min(best, time.perf_counter() - started)
        times.append(best / calls * 1e6)
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu, meta or faulty (default cpu)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-examples", type=int, default=10)
    parser.add_argument("--ops", default=DEFAULT_OPS, help="comma-separated OpInfo names")
    args = parser.parse_args()
    torch.set_num_threads(HARNESS_THREADS)
    if args.device == "faulty":
        from torchcts.testing.faulty_autoload import enable_for_device

        enable_for_device("faulty")
    path = Path(tempfile.mkdtemp()) / "manifest.py"
    path.write_text(render_template("complete", device_name=args.device))
    manifest, _ = load_manifest(path)
    settings = {traced: EngineSettings(target=Target(args.device), manifest=manifest, level=1,
                                       max_examples=args.max_examples, trace_dispatch=traced)
                for traced in (False, True)}
    untraced_us, traced_us = per_op_cost()
    print(f"one small torch.add: {untraced_us:.2f} us untraced, {traced_us:.2f} us traced "
          f"(+{traced_us - untraced_us:.2f} us per op)")
    print(f"{'item':<50} {'untraced s':>10} {'traced s':>9} {'ratio':>6}  overloads")
    totals = {False: 0.0, True: 0.0}
    for op in args.ops.split(","):
        item = PlanItem("forward", op, "function", "float32", 1)
        run_item(item, settings[True])  # warm up: the op database, first-call caches
        times: dict[bool, list[float]] = {False: [], True: []}
        dispatched: list[str] = []
        for _ in range(args.repeats):
            for traced in (False, True):
                started = time.perf_counter()
                record = run_item(item, settings[traced])
                times[traced].append(time.perf_counter() - started)
                dispatched = record.get("dispatched", dispatched)
        medians = {traced: statistics.median(values) for traced, values in times.items()}
        for traced in totals:
            totals[traced] += medians[traced]
        print(f"{item.id:<50} {medians[False]:>10.4f} {medians[True]:>9.4f} {medians[True] / medians[False]:>6.2f}  "
              f"{len(dispatched)}")
    print(f"{'all items (sum of medians)':<50} {totals[False]:>10.4f} {totals[True]:>9.4f} "
          f"{totals[True] / totals[False]:>6.2f}")


if __name__ == "__main__":
    main()
