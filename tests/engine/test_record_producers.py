"""The engine fills the typed record (torchcts.core.record): every record `run_item` returns is a version-2 line the
strict reader accepts and `Record.from_json` builds, and a field the record does not name, written by any producer,
fails the item's run instead of reaching records.jsonl."""

from __future__ import annotations

import pytest

from torchcts.core import record as typed
from torchcts.core.outcomes import Outcome
from torchcts.core.record import RECORD_VERSION, Record
from torchcts.engine import item_warnings
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan.build import PlanItem

pytestmark = pytest.mark.slow  # runs items through the engine (torch, a program started by platform)

ABS = PlanItem("forward", "abs", "function", "float32", 1)
NO_SUCH_OP = PlanItem("forward", "no_such_op_in_torch", "function", "float32", 1)


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    path = tmp_path_factory.mktemp("producers") / "cpu.py"
    path.write_text(render_template("complete", device_name="cpu"))
    manifest, _ = load_manifest(path)
    return EngineSettings(target=Target("cpu", None), manifest=manifest, level=1, max_examples=3, versions=versions())


@pytest.mark.parametrize("item, outcome", [(ABS, Outcome.PASSED), (NO_SUCH_OP, Outcome.ERROR)])
def test_every_record_the_engine_returns_is_a_valid_typed_record(settings, item, outcome):
    line = run_item(item, settings)
    assert line["record_version"] == RECORD_VERSION and typed.problem(line) is None
    record = Record.from_json(line)
    assert record.outcome is outcome and record.identity.item == item.id
    assert record.to_json() == line  # nothing of the line is lost in the typed record
    if outcome is Outcome.PASSED:
        assert record.measures.examples >= 1 and record.measures.fingerprints


def test_a_misspelt_field_a_producer_writes_gives_the_item_a_harness_error_naming_it(settings, monkeypatch):
    def misspelt(self):
        return {"warnigns": self.as_json()}

    monkeypatch.setattr(item_warnings.WarningLog, "record_fields", misspelt)
    line = run_item(ABS, settings)
    assert typed.problem(line) is None  # a valid record, not a hole in the run
    assert line["item"] == ABS.id and line["outcome"] is Outcome.ERROR and line["error_kind"] == "harness"
    assert "unknown field 'warnigns' (did you mean 'warnings'?)" in line["reason"]
    assert "TorchCTS defect" in line["reason"] and "\n" not in line["error_line"]
