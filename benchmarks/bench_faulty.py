"""Overhead of the faulty device: every float32 OpInfo sample run on faulty, against CPU.

Prints the number of ops and samples, the time spent executing them on CPU and on the faulty
device (inputs placed beforehand, same seeds), their ratio, and how many samples disagree (with
no bug on, only the differences explained in torchcts.testing.faulty.agreement.EXPLAINED).

    python benchmarks/bench_faulty.py
"""

from __future__ import annotations

import time
import warnings

import torch

from torchcts.testing.faulty.agreement import check_agreement


def main() -> None:
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    started = time.perf_counter()
    report = check_agreement(dtype=torch.float32)
    print(f"float32 OpInfos: {report.ops}, samples run on both: {report.samples}")
    print(f"execution time: CPU {report.cpu_seconds:.2f} s, faulty {report.faulty_seconds:.2f} s, "
          f"overhead {report.overhead:.2f}x")
    explained = sum(d.rounding_only for d in report.disagreements)
    print(f"samples that differ: {len(report.disagreements)} ({explained} only in the last bits), "
          f"in {len({d.op for d in report.disagreements})} ops; wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
