"""Peak memory of replaying hostile corpus cases under the default case limits.

    python benchmarks/bench_case_limits.py [--out DIR] [--max-case-bytes N]

Writes four `forward::abs` float32 cases and replays each with `torchcts replay --device cpu` in
its own process, printing that process's peak RSS (ru_maxrss) and its exit status:
- a plain 2-element case (what any replay costs: Python, torch, the op database);
- the hostile one of issue 13: a ~700-byte file whose input is a stride-0 view of 2.5e8 elements
  (before the limits, ~19 GB);
- a null storage (`"base64": null`) of 5e8 elements (before the limits, 2.3 GB);
- the largest stride-0 view the limit admits (N / 4 elements): what a case within the limit can
  cost, the bound a laptop must survive.
The hostile cases must exit 2 (unreadable, over the limit) with a peak close to the plain one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.files import new_case
from torchcts.core.case_limits import DEFAULT_MAX_CASE_BYTES, byte_count


def write_case(path: Path, tensor: torch.Tensor) -> int:
    case = new_case(prop="forward", op="abs", variant="function", dtype="float32", device_type="cpu",
                    backend=None, sample=SampleInput(tensor), failure={"outcome": "failed", "message": "bench"},
                    found={})
    path.write_text(json.dumps(case.as_json(), separators=(",", ":")))  # compact, as an attacker would send it
    return path.stat().st_size


def cases(folder: Path, max_case_bytes: int) -> list[tuple[str, Path, int]]:
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for name, tensor in (
            ("plain 2 elements", torch.tensor([1.0, -2.0])),
            ("stride-0 view of 2.5e8", torch.zeros(1).expand(250_000_000)),
            ("null storage of 5e8", torch.empty(500_000_000, device="meta")),
            (f"largest view admitted ({max_case_bytes // 4} elements)", torch.zeros(1).expand(max_case_bytes // 4))):
        path = folder / f"{len(made)}.json"
        made.append((name, path, write_case(path, tensor)))
    return made


def peak_rss_mb(path: Path, out: Path, max_case_bytes: int) -> tuple[float, int]:
    """(peak RSS in MB, exit status) of `torchcts replay` on one case, in its own process."""
    command = [sys.executable, "-m", "torchcts", "replay", str(path), "--device", "cpu", "--results-dir",
               str(out / "results"), "--max-case-bytes", str(max_case_bytes)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, process.returncode  # Linux reports KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench-case-limits"))
    parser.add_argument("--max-case-bytes", type=byte_count, default=DEFAULT_MAX_CASE_BYTES)
    args = parser.parse_args()
    print(f"torchcts replay --device cpu, --max-case-bytes {args.max_case_bytes}: peak RSS per case")
    for name, path, size in cases(args.out / "cases", args.max_case_bytes):
        rss, code = peak_rss_mb(path, args.out, args.max_case_bytes)
        print(f"  {name:44} file {size:6} bytes  exit {code}  peak RSS {rss:7.0f} MB")


if __name__ == "__main__":
    main()
