"""The first run on a new backend, measured: the smoke template against tests/backends/tiny_backend.

Writes a smoke manifest for the `tiny` device, runs `torchcts run --level 1 --dtype float32` in a
fresh work folder, and prints what a backend team sees: wall seconds, console lines (stdout +
stderr) and how many carry the dispatcher's "registered at" listings, outcome counts, report
sizes, corpus files written, and the distinct missing kernels. Issue 15's before/after figures
come from this script.

    python benchmarks/bench_first_run.py                      # this checkout
    python benchmarks/bench_first_run.py --pythonpath /work/before_pkg --autoload-off

`--pythonpath` points at another TorchCTS tree laid out as installed (torchcts/ with its
strategies/, properties/, manifests/ and corpus/ inside); it goes first on PYTHONPATH and the
script prints which `torchcts` the runs imported. `--autoload-off` sets
TORCH_DEVICE_BACKEND_AUTOLOAD=0, which trees that autoload the faulty device onto PrivateUse1 need.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MISSING = re.compile(r"Could not run '(aten::[^']+)' with arguments from the '[^']+' backend")
REPORT_FILES = ("scorecard.md", "report.html", "junit.xml", "summary.json")


def _env(args: argparse.Namespace) -> dict[str, str]:
    env = dict(os.environ)
    paths = [args.pythonpath or str(REPO), str(args.backend_path)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    if args.autoload_off:
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    env.setdefault("COLUMNS", "120")
    return env


def _torchcts(args, env, cwd, *argv, capture=True) -> subprocess.CompletedProcess:
    return subprocess.run([args.python, "-m", "torchcts", *argv], cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None,
                          stderr=subprocess.STDOUT if capture else None, check=False)


def _corpus_flag(args, env, cwd) -> str:
    if args.corpus_flag != "auto":
        return args.corpus_flag
    help_text = _torchcts(args, env, cwd, "run", "--help").stdout
    return "--corpus-dir" if "--corpus-dir" in help_text else "--corpus"


def _run_folder(results: Path) -> Path | None:
    folders = [p.parent for p in results.glob("*/run.json")]
    return max(folders, key=lambda p: p.stat().st_mtime) if folders else None


def _report_sizes(args, env, cwd, run: Path) -> tuple[dict[str, int], str]:
    def found() -> dict[str, int]:
        sizes = {}
        for name in REPORT_FILES:
            hits = sorted(run.rglob(name))
            if hits:
                sizes[name] = hits[0].stat().st_size
        return sizes

    sizes = found()
    if len(sizes) == len(REPORT_FILES):
        return sizes, "written by run"
    done = _torchcts(args, env, cwd, "report", "--from", str(run), "--baseline", "none")
    return found(), f"written by `torchcts report` (exit {done.returncode})"


def measure(args: argparse.Namespace) -> dict:
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="bench_first_run_")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = _env(args)
    which = subprocess.run([args.python, "-c", "import torchcts; print(torchcts.__file__)"], cwd=work,
                           env=env, text=True, capture_output=True, check=False).stdout.strip()
    manifest, results, corpus = work / "manifest.py", work / "results", work / "corpus"
    init = _torchcts(args, env, work, "init", "--template", "smoke", "--device-name", "tiny",
                     "--backend-import", "tiny_backend", "--output", str(manifest), "--force",
                     "--non-interactive")
    if init.returncode != 0:
        raise SystemExit(f"torchcts init failed (exit {init.returncode}):\n{init.stdout}")
    argv = ["run", "--device", "tiny", "--manifest", str(manifest), "--level", "1", "--dtype", "float32",
            "--results-dir", str(results), _corpus_flag(args, env, work), str(corpus), *args.extra]
    started = time.monotonic()
    run = _torchcts(args, env, work, *argv)
    wall = time.monotonic() - started
    console = run.stdout
    (work / "console.log").write_text(console, encoding="utf-8")
    lines = console.splitlines()
    folder = _run_folder(results)
    figures = {
        "torchcts": which, "work_dir": str(work), "command": "torchcts " + " ".join(argv),
        "exit_code": run.returncode, "wall_seconds": round(wall, 1), "console_lines": len(lines),
        "console_bytes": len(console.encode()),
        "console_registered_at_lines": sum("registered at" in line for line in lines),
        "corpus_files": sum(1 for p in corpus.rglob("*") if p.is_file()) if corpus.exists() else 0,
    }
    if folder is None:
        figures["error"] = "no run folder with run.json"
        return figures
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]
    outcomes = collections.Counter(r.get("outcome") for r in records)
    by_text = collections.Counter()
    for r in records:
        hit = MISSING.search(str(r.get("error") or ""))
        if hit and r.get("outcome") in ("error", "failed"):
            by_text[hit.group(1)] += 1
    by_kind = collections.Counter(r["missing_kernel"]["overload"] for r in records
                                  if r.get("error_kind") == "missing_kernel" and r.get("missing_kernel"))
    run_json = json.loads((folder / "run.json").read_text())
    sizes, how = _report_sizes(args, env, work, folder)
    figures.update({
        "run_folder": str(folder), "records": len(records), "outcomes": dict(outcomes.most_common()),
        "failed_or_errored": outcomes.get("failed", 0) + outcomes.get("error", 0),
        "missing_kernel_items_by_error_text": sum(by_text.values()),
        "distinct_missing_kernels_by_error_text": len(by_text),
        "top_missing_kernels": by_text.most_common(5),
        "records_error_kind_missing_kernel": sum(by_kind.values()),
        "distinct_missing_kernels_by_error_kind": len(by_kind),
        "run_json_missing_kernels_distinct": (run_json.get("missing_kernels") or {}).get("distinct"),
        "report_bytes": sizes, "report": how,
    })
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pythonpath", help="TorchCTS tree to import first (default: this checkout)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch installed")
    parser.add_argument("--backend-path", type=Path, default=REPO / "tests" / "backends")
    parser.add_argument("--work-dir", help="where the manifest, results and corpus go (default: a temp folder)")
    parser.add_argument("--corpus-flag", default="auto", choices=("auto", "--corpus", "--corpus-dir"),
                        help="the run flag naming the corpus folder (auto: read `run --help`)")
    parser.add_argument("--autoload-off", action="store_true", help="set TORCH_DEVICE_BACKEND_AUTOLOAD=0")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("extra", nargs="*", help="more `torchcts run` arguments (after --)")
    args = parser.parse_args(argv)
    figures = measure(args)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:40} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
