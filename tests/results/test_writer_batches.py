"""A plan's accounting records (tens of thousands) are written in batches: the same lines and counts as one
record at a time, and run.json's missing kernels are still found among them."""

from __future__ import annotations

import json

from torchcts.core.outcomes import Outcome
from torchcts.results.writer import RECORDS_PER_WRITE, RunWriter


def _item(op: str) -> dict:
    """A whole record's identity (the writer checks every line against the typed record)."""
    return {"item": f"forward::{op}::float32", "property": "forward", "op": op, "variant": None, "dtype": "float32",
            "level": 1}


def _records(n: int) -> list[dict]:
    outcomes = (Outcome.DTYPE_NOT_SUPPORTED, Outcome.LEVEL_FILTERED, Outcome.CAPABILITY_NOT_DECLARED)
    return [{**_item(f"op{i}"), "outcome": outcomes[i % 3], "reason": f"reason {i}"} for i in range(n)]


def test_batched_records_are_the_lines_and_counts_of_single_ones(tmp_path):
    records = _records(2 * RECORDS_PER_WRITE + 7)  # two whole batches and a part
    one_by_one = RunWriter(tmp_path / "single", {"device": "cpu"})
    for record in records:
        one_by_one.record(record)
    batched = RunWriter(tmp_path / "batched", {"device": "cpu"})
    batched.record_many(iter(records))
    batched.record({**_item("abs"), "outcome": Outcome.PASSED})  # later records follow whole
    for writer in (one_by_one, batched):
        writer.close("complete")
    single_lines = (one_by_one.folder / "records.jsonl").read_text().splitlines()
    batched_lines = (batched.folder / "records.jsonl").read_text().splitlines()
    assert batched_lines[:-1] == single_lines and len(single_lines) == len(records)
    counts = json.loads((batched.folder / "run.json").read_text())["counts"]
    assert counts == {"capability_not_declared": 669, "dtype_not_supported": 669, "level_filtered": 669,
                      "passed": 1}


def test_missing_kernels_are_found_among_many_accounting_records(tmp_path):
    writer = RunWriter(tmp_path, {"device": "cpu"})
    writer.record_many(_records(1500))
    missing = {"overload": "aten::hypot.out", "dispatch_key": "PrivateUse1"}
    for op in ("hypot", "atan2"):
        writer.record({**_item(op), "outcome": Outcome.ERROR, "error_kind": "missing_kernel",
                       "missing_kernel": missing})
    writer.record({**_item("add"), "outcome": Outcome.ERROR, "error_kind": "harness",
                   "reason": "mentions missing_kernel in its text only"})
    writer.close("complete")
    summary = json.loads((writer.folder / "run.json").read_text())
    assert summary["missing_kernels"] == {"distinct": 1, "overloads": [{**missing, "items": 2}]}
    assert summary["counts"]["error"] == 3
