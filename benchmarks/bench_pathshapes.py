"""Time to validate the shipped path-shapes corpus and to run it against CPU, by family and tier.

    python benchmarks/bench_pathshapes.py [--tier T ...] [--device cpu]

Prints the load-and-validate time (one meta call per case), then for each family the cases, draws and
seconds of `run_case` on the device (CPU against itself by default, one intra-op thread as a run uses),
and the slowest cases. Outcomes other than `passed` are printed: on CPU they are harness bugs.
"""

from __future__ import annotations

import argparse
import collections
import time

import torch

from torchcts.engine.run import HARNESS_THREADS
from torchcts.pathshapes.corpus import TIERS, load_corpus
from torchcts.pathshapes.runner import run_case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", action="append", choices=list(TIERS), help="only these tiers (default: all)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(HARNESS_THREADS)
    started = time.perf_counter()
    corpus = load_corpus()
    print(f"load + validate: {time.perf_counter() - started:.2f} s for {len(corpus.cases)} cases")
    per_family: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0, 0.0])
    timings = []
    for case in corpus.cases:
        if args.tier and case.tier not in args.tier:
            continue
        t0 = time.perf_counter()
        record = run_case(case, args.device)
        seconds = time.perf_counter() - t0
        if record["outcome"] != "passed":
            print(f"{record['outcome']}: {case.id}: {record.get('error_line')}")
        row = per_family[case.family]
        row[0] += 1
        row[1] += case.budget
        row[2] += seconds
        timings.append((seconds, case.id, case.tier))
    for family, (cases, draws, seconds) in sorted(per_family.items()):
        print(f"{family:24s} {cases:4d} cases {draws:4d} draws {seconds:8.2f} s")
    print(f"{'total':24s} {sum(r[0] for r in per_family.values()):4d} cases "
          f"{sum(r[1] for r in per_family.values()):4d} draws {sum(r[2] for r in per_family.values()):8.2f} s")
    for seconds, case_id, tier in sorted(timings, reverse=True)[:5]:
        print(f"slowest: {seconds:6.2f} s {case_id} ({tier})")


if __name__ == "__main__":
    main()
