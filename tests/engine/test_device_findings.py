"""A device whose tensors have no index is found once at run start and reported as one finding with its fix; the
items it fails (PyTorch's "structured kernels don't support multi-device outputs" assert) point at it.

The defective device is tests/backends/indexless_backend.py (`newdev`), run in subprocesses: PrivateUse1 can be
registered once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from torchcts.engine import device_findings
from torchcts.manifest.templates import render_template
from tests import warm_programs

REPO = Path(__file__).resolve().parents[2]
BACKENDS = REPO / "tests" / "backends"
MULTI_OUTPUT = ("max.reduction_with_dim", "sort", "topk", "aminmax")


def python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(BACKENDS), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    env.pop("TORCHCTS_FAULTY", None)
    return warm_programs.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_devices_without_an_index_by_design_are_no_finding(device):
    assert device_findings.probe(device) == ()
    assert device_findings.active() == ()


@pytest.mark.slow
def test_the_probe_finds_the_missing_index_and_the_engine_names_the_assert_as_its_symptom():
    done = python("""
import json
import torch, indexless_backend
from torchcts.engine import device_findings
from torchcts.engine.outcome import classify
(finding,) = device_findings.probe("newdev")
x = torch.randn(3, 4).to("newdev")
try:
    torch.sort(x)
except RuntimeError as exc:
    sorted_error = exc
verdict = classify(RuntimeError("newdev raised RuntimeError where CPU did not"), show_traceback=False)
try:
    try:
        torch.topk(x, 2)
    except RuntimeError as inner:
        raise ValueError("wrapped") from inner
except ValueError as outer:
    wrapped = outer
try:
    try:
        torch.topk(x, 2)
    except RuntimeError:
        open("/nonexistent/config.json")  # another error while handling the assert: not its symptom
except OSError as during:
    unrelated = during
print(json.dumps({"finding": finding.as_json(), "sort": device_findings.explaining(sorted_error),
                  "wrapped": device_findings.explaining(wrapped), "other": verdict.finding,
                  "during": device_findings.explaining(unrelated),
                  "abs_device": str(x.abs().device)}))
""")
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["finding"]["id"] == "device_index_none"
    assert answer["finding"]["summary"] == "tensors on newdev report device 'newdev' with no index (device.index is None)"
    assert "torch.device('newdev', 0) or \"newdev:0\"" in answer["finding"]["fix"]
    assert answer["sort"] == answer["wrapped"] == "device_index_none"  # found through __cause__ too
    assert answer["during"] is None  # __context__ is not followed
    assert answer["other"] is None and answer["abs_device"] == "newdev"


@pytest.mark.slow
def test_a_device_with_an_index_is_no_finding():
    done = python("import tiny_backend\nfrom torchcts.engine import device_findings\n"
                  "print(device_findings.probe('tiny'), device_findings.probe('tiny:0'))")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["()", "()"]


@pytest.mark.slow
def test_a_run_reports_one_finding_and_groups_the_items_it_causes(tmp_path):
    manifest = tmp_path / "manifest.py"
    manifest.write_text(render_template("complete", device_name="newdev", backend_import="indexless_backend"))
    env = dict(os.environ, PYTHONPATH=str(BACKENDS), TORCH_DEVICE_BACKEND_AUTOLOAD="0", TORCHCTS_PROBES="off")
    env.pop("TORCHCTS_FAULTY", None)
    command = [sys.executable, "-m", "torchcts", "run", "--device", "newdev", "--manifest", str(manifest),
               "--ops", "^(max.reduction_with_dim|sort|topk|aminmax|abs)$", "--property", "forward",
               "--dtype", "float32", "--max-examples", "3", "--derandomize",
               "--results-dir", str(tmp_path / "results"), "--corpus-dir", str(tmp_path / "corpus")]
    done = warm_programs.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    output = done.stderr + done.stdout  # the start's lines on stderr, the summary's on stdout
    starts = [line for line in output.splitlines() if line.startswith("torchcts: finding: tensors on newdev")]
    assert len(starts) == 2, output[-4000:]  # at the start, and in the summary with its items
    assert starts[0].endswith("(recorded in run.json; the items it fails point at it)")
    assert "fix: give every device tensor an index: torch.device('newdev', 0)" in starts[0]
    assert starts[1].startswith("torchcts: finding: tensors on newdev report device 'newdev' with no index "
                                "(device.index is None): 4 item(s) fail from it (their records' `finding` is "
                                "device_index_none); fix: ")

    (folder,) = [p for p in (tmp_path / "results").iterdir() if (p / "run.json").exists()]
    summary = json.loads((folder / "run.json").read_text())
    assert [f["id"] for f in summary["environment"]["findings"]] == ["device_index_none"]
    records = {r["op"]: r for r in map(json.loads, (folder / "records.jsonl").read_text().splitlines())
               if r["outcome"] not in ("deselected", "capability_not_declared", "level_filtered")}
    for op in MULTI_OUTPUT:
        assert records[op]["outcome"] == "error" and records[op]["finding"] == "device_index_none", records[op]
        assert "structured kernels don't support multi-device outputs" in records[op]["error"]
    assert records["abs"]["outcome"] == "passed" and "finding" not in records["abs"]

    scorecard = (folder / "report" / "scorecard.md").read_text()
    assert "## Device findings (1)" in scorecard
    assert "**tensors on newdev report device 'newdev' with no index (device.index is None)**: 4 failing items " \
           "(aminmax, max.reduction_with_dim, sort, topk)" in scorecard
    assert "## Failures (0 besides the device findings)" in scorecard
    assert "4 of them from 1 device finding" in scorecard
    report = json.loads((folder / "report" / "summary.json").read_text())
    (group,) = report["findings"]
    assert group["count"] == 4 and sorted(group["item_ids"]) == sorted(
        f"forward::{op}::function::float32" for op in MULTI_OUTPUT)
    assert "Device findings (1)" in (folder / "report" / "report.html").read_text()


def test_the_symptom_search_is_bounded_and_cycle_safe():
    device_findings._active.clear()
    device_findings._active[device_findings.INDEX_NONE] = device_findings.index_none_finding("x", "x")
    try:
        first, second = RuntimeError("a"), RuntimeError("b")
        first.__cause__, second.__cause__ = second, first  # a cycle
        assert device_findings.explaining(first) is None
        far = RuntimeError("structured kernels don't support multi-device outputs")
        chain = far
        for depth in range(device_findings.MAX_CHAIN):
            outer = RuntimeError(f"level {depth}")
            outer.__cause__ = chain
            chain = outer
        assert device_findings.explaining(chain) is None  # past MAX_CHAIN: not searched
        huge = RuntimeError("x" * 10**6 + "structured kernels don't support multi-device outputs")
        assert device_findings.explaining(huge) is None  # past MAX_TEXT: not searched
    finally:
        device_findings._active.clear()
    assert torch.empty(1).device.index is None  # CPU: no index by design, which is why cpu is exempt
