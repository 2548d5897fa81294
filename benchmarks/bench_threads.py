"""Intra-op threads for the harness: time every float32 OpInfo sample on CPU with 1 and with N
threads, and check that the thread count does not move results beyond the oracle's tolerance.

    python benchmarks/bench_threads.py [--threads N] [--ops REGEX]
"""

from __future__ import annotations

import argparse
import re
import time
import warnings

import torch

from torchcts.engine import oracle
from torchcts.plan.catalog import op_id, ops_supporting
from torchcts.strategies import call_variant, place, sample_pool


def sweep(ops, threads: int) -> tuple[float, dict]:
    """Seconds spent executing every sample with `threads` intra-op threads, and the results."""
    torch.set_num_threads(threads)
    results, seconds = {}, 0.0
    for op in ops:
        for index, sample in enumerate(sample_pool(op, torch.float32)):
            copy = place(sample, "cpu").value
            start = time.perf_counter()
            try:
                results[(op_id(op), index)] = call_variant(op, "function", copy)
            except Exception:  # noqa: BLE001 - samples CPU rejects are left out of both sweeps
                results[(op_id(op), index)] = None
            seconds += time.perf_counter() - start
    return seconds, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--ops", default=".", help="OpInfo ids to include (regex)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    ops = [op for op in ops_supporting(torch.float32)
           if re.search(args.ops, op_id(op)) and oracle.values_comparable(op.name)]
    for op in ops:
        sample_pool(op, torch.float32)  # made once, outside the timed sweeps
    one_s, one = sweep(ops, 1)
    many_s, many = sweep(ops, args.threads)
    beyond = set()
    for key, expected in one.items():
        actual = many[key]
        if expected is None or actual is None:
            continue
        op = next(o for o in ops if op_id(o) == key[0])
        if not oracle.compare(actual, expected, oracle.tolerance(torch.float32, op)).ok:
            beyond.add(key[0])
    print(f"{len(ops)} ops, {len(one)} samples: 1 thread {one_s * 1e3:.0f} ms, {args.threads} threads {many_s * 1e3:.0f} ms")
    print(f"ops whose results move beyond tolerance with the thread count: {len(beyond)} {sorted(beyond)[:10]}")


if __name__ == "__main__":
    main()
