"""Where a test selection's CPU goes: the pytest process itself, and each Python program the tests start.

Runs pytest on the given tests with a `sitecustomize` hook on PYTHONPATH that makes every Python interpreter under
it append, at exit, its command line and its own CPU seconds (user + system) to a log; then prints the CPU per kind
of program (`torchcts run`, `torchcts replay`, `python -c`, ...), how many imported torch and the op database, and
the whole selection's CPU. CPU seconds, not wall time: the machine may be shared. Not counted: forked children that
end with os._exit (isolated items, probes), programs killed by a signal, and programs whose test replaces
PYTHONPATH; the total line (all CPU of pytest and its children) shows how much that is.

    python benchmarks/bench_test_programs.py tests/run/test_xdist.py [more pytest arguments]

(issue 42: a one-item `torchcts run` costs ~5 s of CPU, mostly torch and the op database; the test suite starts
~500 programs.)
"""

from __future__ import annotations

import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

HOOK = '''
import atexit, json, os, sys
def _log_cpu():
    try:
        import resource
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with open(os.environ["BENCH_PROGRAMS_LOG"], "a") as log:
            log.write(json.dumps({"argv": sys.argv[:3], "cpu": usage.ru_utime + usage.ru_stime,
                                  "torch": "torch" in sys.modules,
                                  "op_db": "torch.testing._internal.common_methods_invocations" in sys.modules}) + "\\n")
    except Exception:
        pass
if os.environ.get("BENCH_PROGRAMS_LOG"):
    atexit.register(_log_cpu)
'''


def kind(argv: list[str]) -> str:
    """A program's kind: `torchcts <command>`, `python -c`, a script's name, or pytest."""
    if not argv:
        return "?"
    first = Path(argv[0]).name
    if first == "__main__.py" and "torchcts" in argv[0]:
        return f"torchcts {argv[1] if len(argv) > 1 else ''}".strip()
    if first == "__main__.py" and "pytest" in argv[0]:
        return "pytest"
    return "python -c (xdist workers among them)" if argv[0] == "-c" else first


def main(pytest_args: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-programs-") as folder:
        (Path(folder) / "sitecustomize.py").write_text(HOOK)
        log = Path(folder) / "programs.jsonl"
        path = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONPATH=path, BENCH_PROGRAMS_LOG=str(log))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *pytest_args],
                       env=env, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu, count = collections.Counter(), collections.Counter()
    for row in rows:
        cpu[kind(row["argv"])] += row["cpu"]
        count[kind(row["argv"])] += 1
    print(f"{'CPU s':>8} {'programs':>8}  kind")
    for name, seconds in cpu.most_common():
        print(f"{seconds:8.1f} {count[name]:8d}  {name}")
    logged = sum(cpu.values())
    print(f"{logged:8.1f} {len(rows):8d}  logged in all ({sum(r['torch'] for r in rows)} imported torch, "
          f"{sum(r['op_db'] for r in rows)} the op database)")
    print(f"{total:8.1f} {'':8}  pytest and everything under it ({total - logged:.1f} s not logged: forks that "
          "end with os._exit, killed programs, tests that replace PYTHONPATH)")


if __name__ == "__main__":
    main(sys.argv[1:])
