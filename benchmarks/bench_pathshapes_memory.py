"""Measured peak host memory of path-shapes items against `pathshapes.memory.peak_bytes` (Linux).

    python benchmarks/bench_pathshapes_memory.py [--corpus DIR] [--max-mib 16] [--per-op 1] [--id ID ...]

For the largest cases of each op up to --max-mib of operands and results (or the --id cases), runs the
forward and the backward item on CPU (one draw, one intra-op thread as a run uses), each in a child forked
from a process that has loaded the corpus, and prints the child's peak RSS (VmHWM, reset through
/proc/self/clear_refs) over its RSS before the item, the estimate, and their ratio, worst first. Exits 1
when a measurement is above its estimate: the factors in `memory.py` then need raising. The figures of
docs/path-shapes.md ("Memory") come from this measurement.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from pathlib import Path

import attrs
import torch

from torchcts.engine.run import HARNESS_THREADS
from torchcts.pathshapes.corpus import Case, load_corpus
from torchcts.pathshapes.memory import MiB, peak_bytes
from torchcts.pathshapes.runner import run_backward, run_case


def _status(field: str) -> int:
    with open("/proc/self/status") as stream:
        return next(int(line.split()[1]) * 1024 for line in stream if line.startswith(field + ":"))


def measure(case: Case, backward: bool) -> int:
    """Bytes the item held at its peak over what the process held before it, in a forked child."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the item once, report, exit without cleanup
        os.close(read)
        gc.collect()
        with open("/proc/self/clear_refs", "w") as stream:
            stream.write("5")  # reset VmHWM to the current RSS
        before = _status("VmRSS")
        (run_backward if backward else run_case)(attrs.evolve(case, budget=1), "cpu")
        os.write(write, json.dumps(_status("VmHWM") - before).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as stream:
        data = stream.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None, help="a corpus folder (default: the shipped one)")
    parser.add_argument("--max-mib", type=float, default=16, help="largest case measured, MiB (default: 16)")
    parser.add_argument("--per-op", type=int, default=1, help="cases per op, the largest first (default: 1)")
    parser.add_argument("--id", action="append", default=[], help="measure these cases only")
    args = parser.parse_args()
    torch.set_num_threads(HARNESS_THREADS)
    cases = [c for c in load_corpus(args.corpus).cases if (c.id in args.id if args.id else
                                                            c.needed_bytes <= args.max_mib * MiB)]
    if not args.id:
        by_op: dict[str, list[Case]] = {}
        for case in sorted(cases, key=lambda c: -c.needed_bytes):
            by_op.setdefault(case.op, []).append(case)
        cases = [c for op in sorted(by_op) for c in by_op[op][:args.per_op]]
    rows = []
    for case in cases:
        for backward in (False, True):
            measured, estimate = measure(case, backward), peak_bytes(case, backward)
            rows.append((measured / estimate if estimate else float("inf"), case, backward, measured, estimate))
    for ratio, case, backward, measured, estimate in sorted(rows, key=lambda r: -r[0]):
        print(f"{ratio:5.2f} {case.op:28s} {'backward' if backward else 'forward ':8s} needed "
              f"{case.needed_bytes / MiB:8.2f} MiB measured {measured / MiB:8.1f} (x{measured / case.needed_bytes:5.1f})"
              f" estimate {(estimate or 0) / MiB:8.1f} MiB  {case.id}")
    sys.exit(1 if any(r[0] > 1 for r in rows) else 0)


if __name__ == "__main__":
    main()
