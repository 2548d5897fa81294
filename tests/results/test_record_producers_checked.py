"""The writer checks every line it writes against the typed record (`results.writer._line`): a producer's extra
field or wrong type fails at write time naming the item and the field, not later in a reader. Each producer that
writes a record without the engine's check (plan accounting, the plugin session's deselected and worker-died
records) gives a valid line; path-shapes records are written through the same check (tests/pathshapes)."""

from __future__ import annotations

import pytest

from torchcts.core import record as typed
from torchcts.core.outcomes import Outcome
from torchcts.core.typed_json import RecordError
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan.build import build_plan
from torchcts.plugin.session import deselected_record, worker_died_record
from torchcts.results.files import read_records
from torchcts.results.writer import RunWriter

LINE = {"item": "p::o::v::float32", "property": "p", "op": "o", "variant": "v", "dtype": "float32", "level": 1,
        "outcome": Outcome.PASSED}


@pytest.mark.parametrize("extra, named", [({"note": "x"}, "unknown field 'note'"),
                                          ({"signal": 11}, "field 'signal' must be a string"),
                                          ({"counterexample": {"path": "p", "shrunk": True}},
                                           "unknown field 'counterexample.shrunk'")])
def test_the_writer_refuses_a_line_the_record_does_not_allow_naming_item_and_field(tmp_path, extra, named):
    writer = RunWriter(tmp_path, {"device": "cpu"})
    with pytest.raises(RecordError, match=f"record of 'p::o::v::float32' not written: .*{named}"):
        writer.record({**LINE, **extra})
    with pytest.raises(RecordError, match=named):
        writer.record_many([LINE, {**LINE, **extra}])
    writer.record(LINE)
    writer.close("complete")
    assert [r["item"] for r in read_records(writer.folder)] == ["p::o::v::float32"]  # the bad ones never written


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("manifest") / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    return build_plan(load_manifest(path)[0])


def test_plan_accounting_records_are_valid_lines(plan, tmp_path):
    assert plan.accounting
    lines = [{**entry.item.as_json(), "outcome": entry.outcome, "reason": entry.reason}  # as run_setup.start writes
             for entry in plan.accounting]
    for line in lines:
        assert typed.problem({**line, "record_version": typed.RECORD_VERSION}) is None, line["item"]
    writer = RunWriter(tmp_path, {"device": "cpu"})
    writer.record_many(iter(lines))
    writer.close("complete")
    assert len(read_records(writer.folder)) == len(lines)


def test_the_plugin_sessions_deselected_and_worker_died_records_are_valid_lines(plan):
    item = plan.items[0]
    for line in (deselected_record(item, "deselected by pytest (-k, -m or --deselect)"),
                 worker_died_record(item, "node down: Not properly terminated")):
        assert typed.problem({**line, "record_version": typed.RECORD_VERSION}) is None
        assert line["item"] == item.id
