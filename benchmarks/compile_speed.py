"""Items per minute of `torchcts run` under real compilers: OpenVINO (when installed) and inductor, level 1 and 2.

    python benchmarks/compile_speed.py                          # 20 ops, float32, levels 1 and 2
    python benchmarks/compile_speed.py --ops 100 --levels 2     # the 100 common ops of issue 40's goal
    python benchmarks/compile_speed.py --backends openvino --shape-mode static
    PYTHONPATH=/work/ovsite python benchmarks/compile_speed.py  # OpenVINO installed outside the venv

Each (backend, level) is one `torchcts run --device cpu --compile B --level L --dtype D` over the first N ops of
a fixed list of common ops (`COMMON_OPS`), with the shipped target manifest of B, in a fresh results folder.
Printed per run: executed items, wall minutes (start-up, planning, report included), items per minute, the items'
own minutes (their records' `duration_s`), the outcomes, and the slowest items: a compile that is slow, or a
failure whose shrinking recompiles for every candidate case, shows there. OpenVINO that is not importable is
one line saying what to install, and the other backends still run.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# 100 common ops (OpInfo ids), in a fixed order: elementwise, reductions, matmul, shape ops, nn.functional.
COMMON_OPS = (
    "abs", "acos", "add", "addmm", "amax", "amin", "argmax", "argmin", "asin", "atan", "atan2", "bmm", "cat", "ceil",
    "clamp", "cos", "cosh", "cumsum", "div.no_rounding_mode", "div.floor_rounding", "eq", "erf", "exp", "flip",
    "floor", "fmod", "gather", "ge", "nn.functional.gelu", "gt", "index_select", "isnan", "le", "log", "log1p",
    "log_softmax", "logical_and", "logical_not", "lt", "masked_fill", "matmul", "max.reduction_with_dim",
    "min.reduction_with_dim", "maximum", "minimum", "mean", "mm", "mul", "ne", "neg", "nn.functional.relu",
    "nn.functional.silu", "nn.functional.linear", "softmax", "nn.functional.layer_norm", "nn.functional.conv2d",
    "nn.functional.max_pool2d", "nn.functional.avg_pool2d", "nn.functional.embedding", "nn.functional.leaky_relu",
    "nn.functional.hardtanh", "nn.functional.elu", "nn.functional.mse_loss", "nn.functional.cross_entropy",
    "permute", "pow", "prod", "reciprocal", "remainder", "repeat", "reshape", "round", "rsqrt", "scatter", "select",
    "sigmoid", "sign", "sin", "sinh", "split", "sqrt", "square", "squeeze", "stack", "std", "sub", "sum", "t", "tanh",
    "topk", "transpose", "tril", "triu", "trunc", "unsqueeze", "var", "where", "nn.functional.batch_norm", "baddbmm",
    "expand",
)
BACKEND_PACKAGES = {"openvino": ("openvino.torch", "pip install openvino")}
EXECUTED = ("passed", "failed", "error", "crashed", "timed_out")


def ops_regex(count: int) -> str:
    """`--ops` for the first `count` common ops, each matched whole."""
    return "^(" + "|".join(re.escape(op) for op in COMMON_OPS[:count]) + ")$"


def missing_package(backend: str, env: dict[str, str]) -> str | None:
    """What to install when the backend's package is not importable in the runs' environment, else None."""
    if backend not in BACKEND_PACKAGES:
        return None
    module, install = BACKEND_PACKAGES[backend]
    found = subprocess.run([sys.executable, "-c", f"import importlib.util as u; print(u.find_spec({module.split('.')[0]!r}) is not None)"],
                           env=env, capture_output=True, text=True, check=False)
    return None if found.stdout.strip() == "True" else f"{backend}: {module} is not installed ({install}); skipped"


def measure(backend: str, level: int, args: argparse.Namespace, env: dict[str, str], work: Path) -> dict:
    """One `torchcts run`: wall seconds, exit status and its records' outcomes and item durations."""
    results = work / f"{backend}-level{level}"
    command = [sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--compile", backend, "--level", str(level),
               "--dtype", args.dtype, "--ops", ops_regex(args.ops), "--results-dir", str(results), "--no-report"]
    command += ["--shape-mode", args.shape_mode] if args.shape_mode else []
    command += ["--max-examples", str(args.max_examples)] if args.max_examples else []
    command += list(args.run_args)
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False,
                              timeout=args.timeout_minutes * 60)
        status, tail = done.returncode, (done.stdout + done.stderr)[-1500:]
    except subprocess.TimeoutExpired:  # the records written so far still count
        status, tail = f"killed after {args.timeout_minutes} min", ""
    wall = time.monotonic() - start
    records = [json.loads(line) for path in results.glob("*/records.jsonl") for line in path.read_text().splitlines()]
    executed = [r for r in records if r.get("outcome") in EXECUTED]
    return {"backend": backend, "level": level, "exit": status, "wall_s": wall, "executed": len(executed),
            "items_s": sum(r.get("duration_s") or 0.0 for r in executed),
            "outcomes": collections.Counter(r["outcome"] for r in executed),
            "slowest": sorted(executed, key=lambda r: -(r.get("duration_s") or 0.0))[:args.slowest],
            "tail": tail}


def show(row: dict) -> None:
    minutes = row["wall_s"] / 60
    rate = row["executed"] / minutes if minutes else 0.0
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(row["outcomes"].items()))
    print(f"{row['backend']:>10} level {row['level']}: {row['executed']:5d} items in {minutes:6.2f} min "
          f"= {rate:7.1f} items/min (items' own {row['items_s'] / 60:.2f} min; exit {row['exit']}; {outcomes})")
    for record in row["slowest"]:
        why = (record.get("error_line") or record.get("reason") or "")[:100]
        print(f"{'':>12}{record.get('duration_s') or 0:7.1f}s {record['item']} {record['outcome']}"
              f" ({record.get('examples', '?')} examples) {why}")
    if row["executed"] == 0:
        print(f"{'':>12}no item executed; the run's last lines:\n{row['tail']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="openvino,inductor", help="comma-separated compile backends")
    parser.add_argument("--levels", default="1,2", help="comma-separated levels")
    parser.add_argument("--ops", type=int, default=20, help=f"the first N of the {len(COMMON_OPS)} common ops")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--shape-mode", choices=("static", "dynamic", "automatic"), default=None)
    parser.add_argument("--max-examples", type=int, default=None, help="default: the manifest's")
    parser.add_argument("--slowest", type=int, default=5, help="the slowest items shown per run")
    parser.add_argument("--timeout-minutes", type=float, default=60.0, help="safety net per run")
    parser.add_argument("--work", type=Path, default=None, help="keep the run folders here (default: a temporary folder)")
    parser.add_argument("run_args", nargs="*", help="more `torchcts run` arguments (after --)")
    args = parser.parse_args(argv)
    if not 1 <= args.ops <= len(COMMON_OPS):
        parser.error(f"--ops: 1 to {len(COMMON_OPS)}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))))
    with tempfile.TemporaryDirectory(prefix="compile_speed_") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        print(f"compile_speed: {args.ops} ops, {args.dtype}, shape mode: {args.shape_mode or 'from the manifest'}, "
              f"{os.cpu_count()} cores")
        for backend in args.backends.split(","):
            missing = missing_package(backend, env)
            if missing:
                print(missing)
                continue
            for level in (int(x) for x in args.levels.split(",")):
                show(measure(backend, level, args, env, work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
