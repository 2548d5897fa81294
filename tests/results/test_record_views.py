"""The smaller copies of a record are views of the typed record (torchcts.core.record): the record a pytest-xdist
worker hands its controller carries what the console shows (the controller's lines and tallies equal the
worker's), and a fuzz answer carries the record's failure fields."""

from __future__ import annotations

from torchcts.core.outcomes import Outcome
from torchcts.core.record import CONSOLE_FIELDS, FAILURE_FIELDS
from torchcts.fuzz.worker import Task, answer_from
from torchcts.plan.build import PlanItem
from torchcts.plugin.console import Console
from torchcts.plugin.distributed import RECORD_FIELDS, compact_record

ITEM = PlanItem("forward", "add", "function", "float32", 1)
FAILED = {**ITEM.as_json(), "outcome": Outcome.FAILED, "reason": "values differ", "error": "x" * 10_000,
          "error_line": "out[1, 2] = 3.0, expected 4.0", "examples": 7, "fingerprints": ["ab"] * 100,
          "isolated": "--subprocess-per-test", "isolated_by": "fork",
          "counterexample": {"new": True, "replay": "torchcts replay c.json", "path": "c.json", "fingerprint": "f",
                             "elements": 2}, "duration_s": 0.5}
MISSING = {**ITEM.as_json(), "outcome": Outcome.ERROR, "reason": "the backend raised", "error": "NotImplementedError",
           "error_kind": "missing_kernel", "error_line": "missing kernel aten::add.out (PrivateUse1)",
           "missing_kernel": {"overload": "aten::add.out", "dispatch_key": "PrivateUse1"},
           "counterexample": {"new": True, "replay": "torchcts replay m.json", "path": "m.json"}}


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def line(self, text: str) -> None:
        self.lines.append(text)

    def status(self, text: str) -> None: ...

    def end_status(self) -> None: ...


def shown(records) -> tuple[list[str], str | None]:
    screen = Lines()
    console = Console(total=len(records), screen=screen, progress=False)
    for record in records:
        console.item(record)
    return screen.lines, console.missing_line()


def test_the_compact_record_is_the_records_console_view():
    # written out: what a pytest-xdist worker hands its controller, so a field added to or dropped from the console
    # view (`views=(CONSOLE,)` in core.record_parts) is a visible change here
    expected = ("item", "property", "op", "variant", "dtype", "level", "outcome", "reason", "error_line",
                "error_kind", "missing_kernel", "duration_s", "examples", "distinct_cases", "max_examples",
                "isolated", "counterexample")
    assert CONSOLE_FIELDS == expected and RECORD_FIELDS == expected
    for record in (FAILED, MISSING):
        assert set(compact_record(record)) <= set(CONSOLE_FIELDS)


def test_the_controller_shows_a_workers_records_as_the_worker_would():
    records = [FAILED, MISSING, {**MISSING, "item": "other"}]
    lines, missing = shown(records)
    assert (lines, missing) == shown([compact_record(record) for record in records])
    assert any(line.startswith("MISSING aten::add.out (PrivateUse1)") for line in lines) and missing


def test_a_fuzz_answer_carries_the_records_failure_fields():
    answer = answer_from(Task(ITEM, 1, 4), {**MISSING, "leg": "backend", "counterexample_error": None})
    assert {key for key in FAILURE_FIELDS if MISSING.get(key) is not None} | {"leg"} <= answer.keys()
    assert answer["missing_kernel"] == MISSING["missing_kernel"] and answer["error_kind"] == "missing_kernel"
