"""Latency of a Tab press: `torchcts` answering click's completion request, per kind of word completed.

Runs the installed `torchcts` command (next to this interpreter) as the shell scripts do
(`_TORCHCTS_COMPLETE=bash_complete`, COMP_WORDS, COMP_CWORD) REPEAT times per case and prints
the median and the slowest wall time, beside a bare `python -c pass` for the interpreter's own
start-up. A completion must stay well under half a second: it imports no torch.

    python benchmarks/bench_completion.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEAT = 15
CASES = {
    "a command": "torchcts sh",
    "an option": "torchcts run --pro",
    "--property": "torchcts run --property ",
    "--dtype": "torchcts fuzz --dtype float32,bf",
    "--capability": "torchcts show-skips --capability ",
    "--template": "torchcts init --template ",
}


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main() -> None:
    script = Path(sys.executable).with_name("torchcts")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "torchcts"]
    base = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    bare = [timed([sys.executable, "-c", "pass"], base) for _ in range(REPEAT)]
    print(f"python -c pass: median {statistics.median(bare) * 1000:.0f} ms")
    for name, line in CASES.items():
        env = dict(base, _TORCHCTS_COMPLETE="bash_complete", COMP_WORDS=line,
                   COMP_CWORD=str(len(line.split(" ")) - 1))
        times = [timed(command, env) for _ in range(REPEAT)]
        print(f"{name:14} {line!r:40} median {statistics.median(times) * 1000:4.0f} ms, slowest {max(times) * 1000:4.0f} ms")


if __name__ == "__main__":
    main()
