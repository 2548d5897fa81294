"""The report's capability table comes from run.json and the records alone: a property the report
has never heard of (a custom scenario suite's) is counted under the capability it proves."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

from torchcts.report.render import write_report

ENVIRONMENT = {
    "device": "faulty", "hardware_key": "cpu:test", "torch": "2.13.0", "torchcts": "0", "hypothesis": "6",
    "python": "3.12", "seed": None, "derandomize": True, "level": 2, "manifest": "manifest.py",
    "capabilities": ["inference", "serialization", "ieee754", "training"],
    "property_capabilities": {"forward": "inference", "view_clone": "serialization", "backward": "training"},
    "capability_also_tested_by": {"ieee754": ["forward", "view_clone"]},
}
# (property, op, variant, outcome): view_clone's items are scenarios, named in `op`
ITEMS = [
    ("forward", "abs", "function", "passed"),
    ("view_clone", "contiguous_view", "scenario", "passed"),
    ("view_clone", "strided_view", "scenario", "passed"),
    ("view_clone", "offset_view", "scenario", "failed"),
    ("view_clone", "transposed_view", "scenario", "deselected"),
]


def run_folder(tmp_path):
    folder = tmp_path / "results" / "hand"
    folder.mkdir(parents=True)
    records = [{"item": f"{p}::{op}::{variant}::float32", "property": p, "op": op, "variant": variant,
                "dtype": "float32", "level": 2, "outcome": outcome, "reason": None if outcome == "passed" else "why",
                "error": "differs" if outcome == "failed" else None}
               for p, op, variant, outcome in ITEMS]
    (folder / "records.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    counts = {"passed": 3, "failed": 1, "deselected": 1}
    summary = {"schema_version": 1, "run_id": "hand", "status": "complete", "complete": True,
               "started": "2026-12-03T10:00:00+00:00", "finished": "2026-12-03T10:01:00+00:00",
               "environment": ENVIRONMENT, "counts": counts, "executed": 4, "interrupted": None}
    (folder / "run.json").write_text(json.dumps(summary))
    return folder


def test_a_custom_scenario_property_is_counted_under_its_capability(tmp_path):
    folder = run_folder(tmp_path)
    written = write_report(folder, baseline="none")
    summary = json.loads(written["json"].read_text())
    capabilities = {c["capability"]: c for c in summary["capabilities"]}
    serialization = capabilities["serialization"]
    assert serialization["properties"] == ["view_clone"]
    assert (serialization["executed"], serialization["passed"], serialization["problems"]) == (3, 2, 1)
    assert serialization["verdict"] == "failing"
    assert capabilities["ieee754"]["properties"] == ["forward", "view_clone"]
    assert (capabilities["ieee754"]["executed"], capabilities["ieee754"]["passed"]) == (4, 3)
    assert capabilities["inference"]["properties"] == ["forward"] and capabilities["inference"]["verdict"] == "passing"
    assert capabilities["training"]["verdict"] == "declared; nothing executed"
    assert "| serialization | failing | view_clone | 3 | 2 | 1 |" in written["md"].read_text()
    rows = {row["family"]: row for row in summary["dtype_matrix"]["rows"]}
    assert rows["scenarios"]["cells"][0] == {"dtype": "float32", "passed": 2, "problems": 1, "not_run": 1,
                                             "pass_rate": 0.6667}
    groups = {g["name"]: g["count"] for g in summary["coverage"]["groups"]}
    assert groups == {"passed": 3, "failed or error": 1, "manifest policy": 0, "coverage policy": 0, "selection": 1,
                      "CPU contract": 0, "runtime availability": 0}
    junit = ElementTree.parse(written["junit"]).getroot()
    cases = {case.get("name"): case for case in junit.iter("testcase")}
    assert cases["view_clone::offset_view::scenario::float32"].get("classname") == "torchcts.view_clone"
    assert cases["view_clone::offset_view::scenario::float32"].find("failure") is not None
    assert junit.get("tests") == "4" and junit.get("failures") == "1" and junit.get("errors") == "0"


def test_junit_kinds_follow_the_outcome_groups(tmp_path):
    folder = run_folder(tmp_path)
    extra = [("forward", "neg", "crashed"), ("forward", "mul", "timed_out"), ("forward", "add", "error"),
             ("forward", "sub", "cpu_contract"), ("forward", "div", "runtime_unavailable"),
             ("forward", "pow", "dtype_not_listed"), ("forward", "exp", "level_filtered")]
    with open(folder / "records.jsonl", "a") as lines:
        for p, op, outcome in extra:
            lines.write(json.dumps({"item": f"{p}::{op}::function::float32", "property": p, "op": op,
                                    "dtype": "float32", "level": 1, "outcome": outcome, "reason": "why"}) + "\n")
    junit = ElementTree.parse(write_report(folder, baseline="none", formats=("junit",))["junit"]).getroot()
    assert (junit.get("tests"), junit.get("failures"), junit.get("errors"), junit.get("skipped")) == ("9", "1", "3", "2")
    cases = {case.get("name").split("::")[1]: case for case in junit.iter("testcase")}
    assert cases["neg"].find("error").get("type") == "crashed" and cases["sub"].find("skipped") is not None
    assert "pow" not in cases and "exp" not in cases and [child.tag for child in cases["abs"]] == ["properties"]
