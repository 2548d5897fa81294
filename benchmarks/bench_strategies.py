"""Draw rates of TorchCTS strategies, and the cost of drawing an OpInfo case against running it.

Prints examples per second for each strategy family inside a property that runs one cheap op
(so the figures include Hypothesis's own per-example cost, as a real suite pays it), a naive
`hypothesis.extra.numpy.arrays` baseline in the same property, and, over the OpInfo database in
float32, the ratio of time spent drawing a case to time spent executing the op on CPU.

    python benchmarks/bench_strategies.py [--examples N] [--ops N]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from torchcts.plan.catalog import ops_supporting
from torchcts.strategies import call_variant, opinfo_samples, tensors
from torchcts.strategies.nested import nested_tensors
from torchcts.strategies.samples import NoSamples
from torchcts.strategies.sparse import sparse_tensors

QUIET = settings(database=None, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))


def rate(strategy, body, examples: int) -> float:
    """Examples per second of a derandomized @given property running `body` on each draw."""
    count = 0

    @settings(QUIET, max_examples=examples)
    @given(strategy)
    def prop(value):
        nonlocal count
        count += 1
        body(value)

    start = time.perf_counter()
    prop()
    return count / (time.perf_counter() - start)


def dense_rates(examples: int) -> None:
    add = lambda t: torch.add(t, t)  # noqa: E731
    naive = hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
                       elements={"allow_nan": True, "allow_infinity": True})
    baseline = rate(naive, lambda a: add(torch.from_numpy(a)), examples)
    small = rate(tensors(torch.float32, max_dims=3, relayout=False), add, examples)
    relayouted = rate(tensors(torch.float32, max_dims=3), add, examples)
    print(f"naive hnp.arrays -> torch.add    {baseline:8.0f} examples/s  (baseline)")
    print(f"tensors(), contiguous             {small:8.0f} examples/s  ({small / baseline:.1f}x baseline)")
    print(f"tensors(), re-layouted            {relayouted:8.0f} examples/s  ({relayouted / baseline:.1f}x baseline)")
    csr = rate(sparse_tensors(torch.float32, layouts=(torch.sparse_csr,)), lambda s: s.to_dense(), examples)
    print(f"sparse_tensors(), CSR             {csr:8.0f} examples/s")
    jagged = rate(nested_tensors(torch.float32, layouts=(torch.jagged,)), lambda n: n.unbind(), examples)
    print(f"nested_tensors(), jagged          {jagged:8.0f} examples/s")


def opinfo_rates(examples: int, max_ops: int) -> None:
    """Per op: examples/s, and draw time (total minus execution) over execution time."""
    ops = [op for op in ops_supporting(torch.float32) if not op.name.startswith("_")][:max_ops or None]
    per_op_rates, ratios, draw_ratios, skipped = [], [], [], 0
    started = time.perf_counter()
    for op in ops:
        executing = drawing = 0.0
        count = 0
        cases = opinfo_samples(op, torch.float32)

        @st.composite
        def timed_cases(draw):
            nonlocal drawing
            start = time.perf_counter()
            case = draw(cases)
            drawing += time.perf_counter() - start
            return case

        @settings(QUIET, max_examples=examples)
        @given(timed_cases())
        def prop(case):
            nonlocal executing, count
            count += 1
            start = time.perf_counter()
            try:
                call_variant(op, "function", case.sample)
            except Exception:
                pass
            executing += time.perf_counter() - start

        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prop()
        except NoSamples:
            skipped += 1
            continue
        except Exception:
            skipped += 1
            continue
        total = time.perf_counter() - start
        per_op_rates.append(count / total)
        if executing > 0:
            ratios.append((total - executing) / executing)
            draw_ratios.append(drawing / executing)
    print(f"opinfo_samples(), float32: {len(per_op_rates)} ops ({skipped} skipped), {examples} examples each, "
          f"{time.perf_counter() - started:.0f} s")
    print(f"  examples/s per op: mean {statistics.mean(per_op_rates):.0f}, median {statistics.median(per_op_rates):.0f}")
    print(f"  drawing a case / executing it: median {statistics.median(draw_ratios):.1f}, "
          f"mean {statistics.mean(draw_ratios):.1f}; ops where drawing costs more than executing: "
          f"{sum(r > 1 for r in draw_ratios)}/{len(draw_ratios)}")
    print(f"  whole per-example overhead (Hypothesis engine included) / executing: median "
          f"{statistics.median(ratios):.1f}, mean {statistics.mean(ratios):.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="examples per dense/sparse/nested figure")
    parser.add_argument("--op-examples", type=int, default=20, help="examples per OpInfo")
    parser.add_argument("--ops", type=int, default=0, help="limit the OpInfo sweep to the first N ops (0: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    dense_rates(args.examples)
    opinfo_rates(args.op_examples, args.ops)


if __name__ == "__main__":
    main()
