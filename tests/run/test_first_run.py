"""Issue 15's done-when: the first run on a new backend, as a backend team would do it.

`tests/backends/tiny_backend.py` is a user-style Python PrivateUse1 backend (13 aten kernels, no
fallback, one real bug: `neg` forgets the tail of its blocks of 4). Against it, in subprocesses:

1. `torchcts init --template smoke` and `torchcts run`: every missing kernel is one finding (records
   say `missing_kernel`, the corpus holds one case per overload), the console stays short, the
   reports group the missing kernels by overload, and the `neg` bug is a `failed` item, not buried;
2. `torchcts init --probe` writes a draft manifest whose claims avoid the missing kernels, and a run
   with it has no missing-kernel error and still executes items.

The three commands run once for the module (`first_run`). The environment does not set
TORCH_DEVICE_BACKEND_AUTOLOAD: the faulty device registers only when asked, so a user's own
PrivateUse1 backend works in TorchCTS's environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from torchcts.results.writer import read_records
from tests import warm_programs

BACKENDS = Path(__file__).resolve().parent.parent / "backends"
# The ops the runs select, a sample of the smoke template that keeps the module short: the backend's
# own kernels (abs, neg, add, mul), three ops that meet one missing kernel (aten::zero_ through
# zeros_like, new_zeros and zero_), and four that each miss a kernel of their own. The whole template
# behaves the same on this backend (benchmarks/bench_first_run.py measures it).
OPS = r"^(abs|neg|add|mul|zeros_like|new_zeros|zero_|exp|sum|where|cat)$"
# This selection printed 30 lines (header, probes, a progress line per item, one line per failure and
# per missing kernel, the summary); before issue 15 the same run printed 92 (pytest's failure blocks).
# 60 leaves room for more header or summary lines and still fails on a block per failing item.
MAX_CONSOLE_LINES = 60
NEG_ITEM = "forward::neg::function::float32"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)  # a user's environment: autoload as torch does by default
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BACKENDS), env.get("PYTHONPATH")]))
    return env


def _torchcts(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return warm_programs.run([sys.executable, "-m", "torchcts", *argv], cwd=cwd, env=_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900, check=False)


def _run(cwd: Path, manifest: Path, name: str, ops: str = OPS) -> dict:
    results, corpus = cwd / f"results-{name}", cwd / f"corpus-{name}"
    done = _torchcts(cwd, "run", "--device", "tiny", "--manifest", str(manifest), "--level", "1",
                     "--dtype", "float32", "--ops", ops, "--results-dir", str(results), "--corpus-dir", str(corpus))
    (cwd / f"console-{name}.log").write_text(done.stdout, encoding="utf-8")
    folders = sorted(results.glob("*/run.json"))
    assert folders, f"no run folder; exit {done.returncode}:\n{done.stdout[-3000:]}"
    folder = folders[-1].parent
    return {"exit": done.returncode, "console": done.stdout, "folder": folder, "corpus": corpus,
            "records": read_records(folder), "run": json.loads((folder / "run.json").read_text())}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> dict:
    """The smoke run, the probe, and the run with the probed manifest (each once)."""
    cwd = tmp_path_factory.mktemp("first_run")
    smoke = cwd / "manifest.py"
    init = _torchcts(cwd, "init", "--template", "smoke", "--device-name", "tiny", "--backend-import", "tiny_backend",
                     "--output", str(smoke), "--non-interactive")
    assert init.returncode == 0, init.stdout
    first = _run(cwd, smoke, "smoke")
    drafted = cwd / "probed.py"
    probe = _torchcts(cwd, "init", "--probe", "--device", "tiny", "--backend-import", "tiny_backend",
                      "--ops", OPS, "--output", str(drafted))
    # neg's failure (shrunk, the slowest item) is already covered by the first run
    probed = _run(cwd, drafted, "probed", OPS.replace("|neg", "")) if probe.returncode == 0 and drafted.exists() else None
    return {"smoke": first, "probe": probe, "draft": drafted, "probed": probed}


def _missing(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("error_kind") == "missing_kernel"]


def _items_per_overload(records: list[dict]) -> Counter:
    return Counter(r["missing_kernel"]["overload"] for r in _missing(records))


def _report_file(folder: Path, name: str) -> str:
    found = sorted(folder.rglob(name))
    assert found, f"`torchcts run` wrote no {name} under {folder}"
    return found[0].read_text(encoding="utf-8")


@pytest.mark.slow
def test_missing_kernels_are_errors_that_name_the_overload(first_run):
    records = first_run["smoke"]["records"]
    missing = _missing(records)
    assert len(missing) >= 5, Counter(r["outcome"] for r in records)
    for record in missing:
        assert record["outcome"] == "error"
        assert record["missing_kernel"]["dispatch_key"] == "PrivateUse1"
        assert re.fullmatch(r"aten::\w+(\.\w+)?", record["missing_kernel"]["overload"])
        assert "registered at" not in record.get("error_line", "")
    # several items meet the same missing kernel: that is what grouping is for
    assert max(_items_per_overload(records).values()) >= 2


@pytest.mark.slow
def test_the_corpus_holds_one_case_per_missing_overload(first_run):
    smoke = first_run["smoke"]
    missing = _missing(smoke["records"])
    cases = {r["counterexample"]["path"] for r in missing}
    assert len(cases) == len(_items_per_overload(smoke["records"]))
    assert all(Path(path).is_file() for path in cases)
    assert sum(r["counterexample"]["new"] for r in missing) == len(cases)
    # and no other case file for them: every file in the corpus is a missing kernel's or another failure's
    others = {r["counterexample"]["path"] for r in smoke["records"]
              if r.get("counterexample") and r.get("error_kind") != "missing_kernel"}
    assert {str(p) for p in smoke["corpus"].rglob("*.json")} == cases | others


@pytest.mark.slow
def test_the_wrong_value_bug_is_a_failure_not_buried(first_run):
    smoke = first_run["smoke"]
    neg = next(r for r in smoke["records"] if r["item"] == NEG_ITEM)
    assert neg["outcome"] == "failed" and neg.get("error_kind") is None
    assert "differs from CPU" in neg["error"]
    assert smoke["exit"] == 1
    # one console line, with its replay command
    assert [line for line in smoke["console"].splitlines() if NEG_ITEM in line and "torchcts replay" in line]
    assert NEG_ITEM in _report_file(smoke["folder"], "scorecard.md")


@pytest.mark.slow
def test_the_console_stays_short(first_run):
    console = first_run["smoke"]["console"]
    lines = console.splitlines()
    assert len(lines) < MAX_CONSOLE_LINES, console[-5000:]
    assert not any("registered at" in line for line in lines)
    distinct = len(_items_per_overload(first_run["smoke"]["records"]))
    summary = [line for line in lines if "missing" in line and "kernel" in line and re.search(rf"\b{distinct}\b", line)]
    assert summary, console[-3000:]  # a run summary line says how many distinct kernels are missing


@pytest.mark.slow
def test_run_json_counts_the_distinct_missing_kernels(first_run):
    smoke = first_run["smoke"]
    per_overload = _items_per_overload(smoke["records"])
    summary = smoke["run"]["missing_kernels"]
    assert summary["distinct"] == len(per_overload)
    assert {o["overload"]: o["items"] for o in summary["overloads"]} == dict(per_overload)
    assert [o["items"] for o in summary["overloads"]] == sorted(per_overload.values(), reverse=True)
    assert all(o["dispatch_key"] == "PrivateUse1" for o in summary["overloads"])


@pytest.mark.slow
@pytest.mark.parametrize("report", ["scorecard.md", "report.html", "junit.xml"])
def test_the_reports_group_missing_kernels_by_overload_most_items_first(first_run, report):
    smoke = first_run["smoke"]
    text = _report_file(smoke["folder"], report)
    per_overload = _items_per_overload(smoke["records"])
    first_mention = {}
    for overload, items in per_overload.items():
        position = text.find(overload)
        assert position >= 0, f"{report} does not name {overload}"
        first_mention[overload] = position
        if report != "junit.xml":
            line = text[text.rfind("\n", 0, position) + 1:text.find("\n", position)]
            assert re.search(rf"\b{items}\b", line), f"{report}: {overload} without its {items} items: {line[:300]}"
    in_order = sorted(per_overload, key=first_mention.get)
    assert [per_overload[o] for o in in_order] == sorted(per_overload.values(), reverse=True)


@pytest.mark.slow
def test_a_probed_draft_manifest_runs_without_missing_kernels(first_run):
    probe = first_run["probe"]
    assert probe.returncode == 0, probe.stdout[-3000:]
    draft = first_run["draft"].read_text(encoding="utf-8")
    assert "draft" in draft.lower() and "aten::" in draft  # claims withdrawn, each naming its missing kernel
    probed = first_run["probed"]
    assert probed is not None
    records = probed["records"]
    assert _missing(records) == []
    assert probed["run"]["missing_kernels"]["distinct"] == 0
    executed = [r for r in records if r["outcome"] in ("passed", "failed")]
    assert any(r["outcome"] == "passed" for r in executed), Counter(r["outcome"] for r in records)
    # the ops whose kernels are missing are left out by the draft's claims, each with its reason
    excluded = {r["op"]: r["reason"] for r in records if r["property"] == "forward" and r["dtype"] == "float32"
                and r["outcome"] not in ("passed", "failed", "error", "deselected")}
    for op in ("zeros_like", "new_zeros", "zero_", "exp", "sum", "where", "cat"):
        assert "aten::" in excluded.get(op, ""), (op, excluded.get(op))

