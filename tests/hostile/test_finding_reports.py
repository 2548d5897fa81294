"""Hostile run folders for the report's device findings (run.json `environment.findings`, records' `finding`) and
cause groups: malformed, huge or unknown values give a bounded report, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchcts.report.grouping import MAX_FINDING_TEXT, MAX_FINDINGS
from torchcts.report.render import write_report

ASSERT = ('RuntimeError: *current_device == options.device() INTERNAL ASSERT FAILED at "/__w/pytorch/pytorch/build/'
          'aten/src/ATen/RegisterCompositeExplicitAutogradNonFunctional_0.cpp":{line}, please report a bug to PyTorch. '
          'structured kernels don\'t support multi-device outputs')


def write_run(root: Path, findings, record_findings: list) -> Path:
    folder = root / "results" / "20261207T090000Z-f1f1f1"
    folder.mkdir(parents=True)
    records = []
    for i, finding in enumerate(record_findings):
        record = {"item": f"forward::op{i}::function::float32", "property": "forward", "op": f"op{i}",
                  "variant": "function", "dtype": "float32", "level": 1, "outcome": "error", "reason": "",
                  "examples": 1, "error": ASSERT.format(line=100 + i), "error_kind": "backend"}
        if finding is not ...:
            record["finding"] = finding
        records.append(record)
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = {"schema_version": 1, "run_id": folder.name, "status": "complete", "complete": True,
               "started": "2026-12-07T09:00:00+00:00", "finished": "2026-12-07T09:01:00+00:00",
               "environment": {"device": "newdev", "hardware_key": "x", "torch": "2.13.0", "findings": findings,
                               "capabilities": ["inference"], "property_capabilities": {"forward": "inference"},
                               "claimed_dtypes": ["float32"]},
               "counts": {"error": len(records)}, "executed": len(records), "interrupted": None, "run_kind": "run"}
    (folder / "run.json").write_text(json.dumps(summary))
    return folder


GOOD = {"id": "device_index_none", "device": "newdev", "summary": "tensors on newdev have no index",
        "symptom": "an assert", "fix": "use newdev:0"}


@pytest.mark.parametrize("findings", [
    "device_index_none", 7, {"id": "device_index_none"}, [None, 3, "x", [GOOD]], [{"id": 5, "summary": "x"}],
    [{**GOOD, "summary": "s" * 10**6, "fix": ["not", "a", "string"]}],
    [{**GOOD, "id": f"id{i}"} for i in range(10_000)],
])
def test_malformed_findings_in_run_json_give_a_bounded_report(tmp_path, findings):
    folder = write_run(tmp_path, findings, ["device_index_none", ..., 5, "z" * 10_000, ["list"]])
    written = write_report(folder, baseline="none", formats=("md", "json"))
    scorecard = Path(written["md"]).read_text()
    report = json.loads(Path(written["json"]).read_text())
    assert len(report["findings"]) <= 2 * MAX_FINDINGS
    for group in report["findings"]:
        assert len(group["id"]) <= 100 and all(len(group[k]) <= MAX_FINDING_TEXT for k in ("summary", "symptom", "fix"))
    assert len(scorecard) < 200_000
    pointing = [g for g in report["findings"] if g["count"]]
    assert sum(g["count"] for g in pointing) == 2  # "device_index_none" and the long id (cut): the others are no id
    others = {f["item"] for f in report["failures"] if not f["finding"]}
    assert others == {"forward::op1::function::float32", "forward::op2::function::float32",
                      "forward::op4::function::float32"}


def test_a_record_pointing_at_a_finding_run_json_does_not_describe_is_shown_by_its_id(tmp_path):
    folder = write_run(tmp_path, [], ["shard_only_finding"] * 3)
    written = write_report(folder, baseline="none", formats=("md",))
    scorecard = Path(written["md"]).read_text()
    assert "**shard\\_only\\_finding (not described in run.json)**: 3 failing items" in scorecard \
        or "**shard_only_finding (not described in run.json)**: 3 failing items" in scorecard, scorecard[:3000]
