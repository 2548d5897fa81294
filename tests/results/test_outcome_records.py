"""Records written with `Outcome` members are the same bytes as with plain strings, and read back
through `torchcts.results.files` validation; selftest counts properties from the registry."""

from __future__ import annotations

import json

import pytest

from torchcts.core.outcomes import EXECUTED, Outcome
from torchcts.plan.registry import OpInfoItems, PropertySpec
from torchcts.results import files
from torchcts.results.writer import RunWriter
from torchcts.testing.selftest import unexercised_properties

ENVIRONMENT = {"device": "cpu", "hardware_key": "cpu:test", "torch": "2.13.0", "capabilities": ["inference"]}


def record(index: int, outcome: Outcome | str) -> dict:
    return {"item": f"forward::op{index}::function::float32", "property": "forward", "op": f"op{index}",
            "variant": "function", "dtype": "float32", "level": 1, "outcome": outcome,
            "reason": None if outcome == Outcome.PASSED else f"why {index}"}


def write(folder, outcomes) -> RunWriter:
    writer = RunWriter(folder, ENVIRONMENT, run_id="run")
    for index, outcome in enumerate(outcomes):
        writer.record(record(index, outcome))
    writer.close("complete")
    return writer


def comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("started", "finished")}


def test_outcome_members_write_the_same_bytes_and_read_back(tmp_path):
    members = write(tmp_path / "members", list(Outcome)).folder
    plain = write(tmp_path / "plain", [o.value for o in Outcome]).folder
    assert (members / "records.jsonl").read_bytes() == (plain / "records.jsonl").read_bytes()
    assert b'"outcome": "passed"' in (members / "records.jsonl").read_bytes()
    read = files.read_records(members)
    assert [r["outcome"] for r in read] == [o.value for o in Outcome]
    assert all(type(r["outcome"]) is str for r in read)  # plain JSON strings, equal to the members
    summary = files.read_summary(members)
    assert comparable(summary) == comparable(files.read_summary(plain))
    assert summary["counts"] == {o.value: 1 for o in Outcome} and summary["executed"] == len(EXECUTED)


def test_partial_run_recounts_outcome_members(tmp_path):
    writer = RunWriter(tmp_path, ENVIRONMENT, run_id="run")
    writer.record(record(0, Outcome.FAILED))
    writer.record(record(1, Outcome.DESELECTED))
    writer.close("partial", interrupted={"signal": "SIGINT"})
    summary = files.read_summary(writer.folder)
    assert summary["counts"] == {"deselected": 1, "failed": 1} and summary["executed"] == 1


@pytest.mark.parametrize("outcome", ["skipped", "PASSED", "Passed", "", 3, None])
def test_a_record_with_an_unknown_outcome_is_refused_naming_the_line(tmp_path, outcome):
    lines = [record(0, "passed"), record(1, outcome)]
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(files.ResultFileError, match=r"records.jsonl:2: field 'outcome' must be an outcome"):
        files.read_records(tmp_path)


def spec(name: str, level: int) -> PropertySpec:
    return PropertySpec(name, "inference", level, OpInfoItems(), lambda cts: None)


def test_selftest_lists_registered_properties_no_clean_item_executed():
    specs = [spec("forward", 1), spec("view_clone", 2), spec("deep", 5)]
    records = [{**record(0, Outcome.PASSED)}, {**record(1, Outcome.DESELECTED), "property": "view_clone"}]
    assert unexercised_properties(records, level=2, specs=specs) == ("view_clone",)  # deep: above the level
    records.append({**record(2, "error"), "property": "view_clone"})
    assert unexercised_properties(records, level=8, specs=specs) == ("deep",)
