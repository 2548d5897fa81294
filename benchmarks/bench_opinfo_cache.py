"""The OpInfo metadata cache, measured: `show-skips` and a run's collection with a warm cache and a cold one.

Writes the minimal template's manifest (`torchcts init --template minimal --device-name cpu`) in a
temporary folder, then times, as a user starts them (a subprocess each):

- `torchcts show-skips --manifest M`
- `torchcts run --validation --manifest M --no-report -- --collect-only -q` (planning and pytest's
  collection of every item; nothing runs)
- `torchcts sync-opinfo` (building the cache)

each with a cold cache (an empty TORCHCTS_CACHE_DIR, so the command builds it) and a warm one (a
folder `sync-opinfo` filled), `--repeats` times, printing the median and minimum wall seconds side
by side, with the CPU seconds each used (steadier than wall time on a busy machine), and whether the
command imported torch's op database
(`torch.testing._internal.common_methods_invocations`, seen with `python -X importtime`).

    python benchmarks/bench_opinfo_cache.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OP_DATABASE = "torch.testing._internal.common_methods_invocations"


def _torchcts(work: Path, cache: Path, *argv: str, importtime: bool = False) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stderr) of `python -m torchcts ARGV` in `work` with TORCHCTS_CACHE_DIR=cache.

    CPU seconds (user + system of the command and its children) say more than wall time on a busy machine."""
    env = dict(os.environ, TORCHCTS_CACHE_DIR=str(cache), COLUMNS="120")
    command = [sys.executable] + (["-X", "importtime"] if importtime else []) + ["-m", "torchcts", *argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=env, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return seconds, cpu, done.stderr


def _imports_op_database(stderr: str) -> bool:
    return any(line.rstrip().endswith(f"| {OP_DATABASE}") for line in stderr.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timings per command and cache state (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-opinfo-cache-") as folder:
        work = Path(folder)
        manifest = work / "M.py"
        _torchcts(work, work / "unused", "init", "--template", "minimal", "--device-name", "cpu",
                  "--non-interactive", "--output", str(manifest))
        commands = {
            "show-skips": ["show-skips", "--manifest", str(manifest)],
            "run --collect-only": ["run", "--validation", "--manifest", str(manifest), "--no-report",
                                   "--results-dir", str(work / "results"), "--", "--collect-only", "-q"],
        }
        warm = work / "warm-cache"
        sync_wall, sync_cpu, _ = _torchcts(work, warm, "sync-opinfo")
        print(f"torch {_version('torch')}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f}; sync-opinfo (building the cache): {sync_wall:.2f} s wall, "
              f"{sync_cpu:.2f} s CPU")
        print(f"median (min) of {args.repeats}, seconds")
        print(f"{'command':20} {'cold wall':>13} {'warm wall':>13} {'cold CPU':>13} {'warm CPU':>13}  "
              "op database imported (cold / warm)")
        for name, argv in commands.items():
            timings: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
            for repeat in range(args.repeats):
                timings["cold"].append(_torchcts(work, work / f"cold-{name[:4]}-{repeat}", *argv)[:2])
                timings["warm"].append(_torchcts(work, warm, *argv)[:2])
            imported = [_imports_op_database(_torchcts(work, cache, *argv, importtime=True)[2])
                        for cache in (work / f"cold-{name[:4]}-probe", warm)]
            cells = [_cell([t[i] for t in timings[state]]) for i in (0, 1) for state in ("cold", "warm")]
            print(f"{name:20} {' '.join(cells)}  {'yes' if imported[0] else 'no'} / {'yes' if imported[1] else 'no'}")


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):5.2f})"


def _version(package: str) -> str:
    done = subprocess.run([sys.executable, "-c", f"import {package}; print({package}.__version__)"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


if __name__ == "__main__":
    main()
