"""What a `torchcts run` process spends on full garbage collections, and its CPU in all.

Runs one derandomized validation run of five OpInfos (level 2, float32, no report) in a child interpreter whose
garbage collector is watched (`gc.callbacks`), and prints its full collections, their CPU and the process's CPU.
CPU seconds, not wall time: the machine may be shared. The op database is imported with the collector paused and then frozen (`torchcts.plan.catalog.all_ops`);
before that change the same run made 9 full collections, 1.5-1.7 s of its 5.5-6.4 s of CPU.

    python benchmarks/bench_process_overhead.py [--ops REGEX] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

WATCHED = r'''
import atexit, gc, runpy, sys, time
full = [0, 0.0]
began = {}
def watch(phase, info):
    if info["generation"] != 2:
        return
    if phase == "start":
        began[2] = time.process_time()
    else:
        full[0] += 1
        full[1] += time.process_time() - began[2]
gc.callbacks.append(watch)
atexit.register(lambda: sys.stderr.write(f"\nOVERHEAD {full[0]} {full[1]:.3f} {time.process_time():.3f}\n"))
sys.argv = ["torchcts", *sys.argv[1:]]
runpy.run_module("torchcts", run_name="__main__")
'''


def measure(folder: Path, ops: str, env: dict[str, str]) -> tuple[int, float, float]:
    """(full collections, their CPU seconds, the process's CPU seconds) of one run."""
    done = subprocess.run([sys.executable, "-c", WATCHED, "run", "--validation", "--derandomize", "--ops", ops,
                           "--dtype", "float32", "--level", "2", "--max-examples", "10", "--no-report",
                           "--manifest", str(folder / "manifest.py"), "--results-dir", str(folder / "results")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
    found = re.search(r"OVERHEAD (\d+) ([\d.]+) ([\d.]+)", done.stderr)
    if done.returncode not in (0, 1) or found is None:
        sys.exit(f"the run failed ({done.returncode}): {done.stderr[-2000:]}")
    return int(found[1]), float(found[2]), float(found[3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", default="^(add|mul|sin|cos|sum)$")
    parser.add_argument("--repeat", type=int, default=2)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_overhead_") as name:
        folder = Path(name)
        subprocess.run([sys.executable, "-m", "torchcts", "init", "--template", "minimal", "--device-name", "cpu",
                        "--non-interactive", "--force", "--output", str(folder / "manifest.py")],
                       check=True, capture_output=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        measure(folder, options.ops, env)  # warms the bytecode and the OpInfo metadata cache
        print(f"load average before: {os.getloadavg()[0]:.1f}")
        for _ in range(options.repeat):
            count, gc_cpu, cpu = measure(folder, options.ops, env)
            print(f"full collections {count:2d} ({gc_cpu:.2f} s CPU)   process CPU {cpu:.2f} s")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
