"""The typed result record (torchcts.core.record): every field round-trips, a misspelt field fails where the record
is built and where a line is read, an unversioned (version-1) records.jsonl still reads, and hostile values give
one-line problems naming the field."""

from __future__ import annotations

import json

import attrs
import pytest

from torchcts.core import record as typed
from torchcts.core.outcomes import Outcome
from torchcts.core.record import RECORD_VERSION, Record
from torchcts.core.record_parts import Identity, Measures, Verdict
from torchcts.core.typed_json import RecordError
from torchcts.results.files import ResultFileError, iter_typed_records, read_records

IDENTITY = {"item": "forward::abs::function::float32", "property": "forward", "op": "abs", "variant": "function",
            "dtype": "float32", "level": 1}
# a value for every field of the record, of the type it allows
EVERY_FIELD = {
    **IDENTITY,
    "case": {"path": "corpus/x.json", "fingerprint": "ab", "status": "open", "unreadable": None},
    "outcome": "error", "reason": "backend raised", "error": "RuntimeError: no", "error_line": "RuntimeError: no",
    "error_kind": "missing_kernel", "error_wrappers": ["TorchRuntimeError"],
    "missing_kernel": {"overload": "aten::abs", "dispatch_key": "PrivateUse1"}, "finding": "device_index_none",
    "signal": "SIGSEGV", "cleanup_error": "empty_cache raised",
    "warnings": {"count": 2, "messages": ["UserWarning: a"]},
    "duration_s": 0.5, "examples": 3, "distinct_cases": 2, "max_examples": 10, "cpu_contract_cases": 1,
    "unavailable_cases": 0, "metadata_only_cases": 1, "fingerprints": ["00ff"], "max_abs_error": 0.25,
    "max_rel_error": float("inf"), "max_ulp": 2.0, "ulp_error": {"rule": "recorded", "backend": 1.0},
    "hypothesis_statistics": {"stopped_because": "done"},
    "isolated": "--subprocess-per-test", "isolated_by": "fork", "isolated_cases": "known CPU-oracle crash rule r: x",
    "counterexample": {"path": "corpus/y.json", "fingerprint": "cd", "new": True, "elements": 4,
                       "replay": "torchcts replay"},
    "counterexample_error": "disk full", "counterexample_unwritable": {"path": "corpus/y.json", "reason": "No space"},
    "device_ops": ["aten::abs", "bug:abs_off"], "dispatched": ["aten.abs.default"],
    "compile": {"backend": "eager", "shape_mode": "static"}, "compile_stats": {"graphs": 1, "graph_breaks": 0},
    "shrink_stopped": "the compile budget", "leg": "backend",
    "legs": [{"backend": "eager", "shape_mode": "static", "outcome": "passed", "error_line": None}],
    "leg_reason": "why", "path_shape": {"family": "attention"}, "waiver": {"reason": "BUG-1"},
    "record_version": RECORD_VERSION,
}


def test_the_test_line_holds_every_field_the_record_names():
    assert set(EVERY_FIELD) == set(typed.field_names())


def test_every_field_round_trips():
    record = Record.from_json(EVERY_FIELD)
    assert record.to_json() == EVERY_FIELD
    assert json.loads(json.dumps(record.to_json())) == json.loads(json.dumps(EVERY_FIELD))
    assert record.verdict.missing_kernel.overload == "aten::abs" and record.outcome is Outcome.ERROR
    assert record.compile_leg.legs[0].backend == "eager" and record.counterexample.counterexample.new is True


def _nested_variants(value: dict) -> list[dict]:
    """The object with each of its keys in turn left out, and in turn null."""
    return [*({k: v for k, v in value.items() if k != key} for key in value), *({**value, key: None} for key in value)]


@pytest.mark.parametrize("name", typed.NESTED)
def test_every_nested_object_round_trips_with_the_keys_it_was_given(name):
    value = EVERY_FIELD[name]
    variants = ([[v] for v in _nested_variants(value[0])] if isinstance(value, list) else _nested_variants(value))
    checked = 0
    for variant in variants:
        line = {**EVERY_FIELD, name: variant}
        if typed.problem(line) is not None:  # a required key left out or null: refused, not written back
            continue
        assert Record.from_json(line).to_json() == line, variant
        checked += 1
    assert checked >= 2  # at least an optional key left out and null
    line = {**IDENTITY, "outcome": "error", "missing_kernel": {"overload": "x"}, "record_version": RECORD_VERSION}
    assert Record.from_json(line).to_json() == line  # the reviewer's case: no "dispatch_key": null added


def test_fields_written_as_null_are_written_back_as_null_and_absent_ones_stay_absent():
    line = {**IDENTITY, "outcome": "passed", "error": None, "counterexample": None, "record_version": RECORD_VERSION}
    record = Record.from_json(line)
    assert record.to_json() == line
    assert record.compile_leg is None and record.path_shapes is None  # the optional parts exist only when filled


def test_a_record_built_in_code_is_a_valid_line():
    record = Record(identity=Identity(**IDENTITY), verdict=Verdict(outcome=Outcome.FAILED, reason="differs"),
                    measures=Measures(examples=3, fingerprints=("aa",)))
    line = record.to_json()
    assert typed.problem(line) is None and line["fingerprints"] == ["aa"]
    assert Record.from_json(line) == record


def test_a_misspelt_field_fails_where_the_record_is_built():
    with pytest.raises(TypeError, match="reasn"):
        Verdict(outcome=Outcome.FAILED, reasn="differs")
    with pytest.raises(TypeError, match="verdcit"):
        Record(identity=Identity(**IDENTITY), verdcit=Verdict(outcome=Outcome.PASSED))


def test_a_misspelt_field_fails_where_a_line_is_read():
    with pytest.raises(RecordError, match=r"a record has an unknown field 'isolatd' \(did you mean 'isolated'\?\)"):
        Record.from_json({**EVERY_FIELD, "isolatd": "x"})
    assert "unknown field 'counterexample.fingerprnt'" in typed.problem(
        {**EVERY_FIELD, "counterexample": {"path": "p", "fingerprnt": "f"}})
    assert "unknown field 'legs[0].backnd'" in typed.problem(
        {**EVERY_FIELD, "legs": [{"backend": "b", "shape_mode": "s", "outcome": "o", "backnd": "x"}]})


def _write(folder, lines):
    folder.mkdir()
    (folder / "records.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def test_an_unversioned_records_file_still_reads_as_version_2(tmp_path):
    old = {**IDENTITY, "outcome": "passed", "examples": 3, "a_field_since_removed": [1, 2]}  # version 1: no version
    folder = _write(tmp_path / "old", [old, {**IDENTITY, "outcome": "failed", "reason": "differs"}])
    records = read_records(folder)
    assert records[0] == {**IDENTITY, "outcome": "passed", "examples": 3, "record_version": RECORD_VERSION}
    typed_records = list(iter_typed_records(folder))
    assert [r.outcome for r in typed_records] == [Outcome.PASSED, Outcome.FAILED]
    assert typed_records[1].verdict.reason == "differs"


def test_a_version_1_line_is_still_checked_field_by_field(tmp_path):
    folder = _write(tmp_path / "old", [{**IDENTITY, "outcome": "passed", "examples": -1}])
    with pytest.raises(ResultFileError, match=r"records.jsonl:1: field 'examples' must be a non-negative integer"):
        read_records(folder)


def test_a_version_1_line_drops_the_nested_keys_version_1_readers_ignored(tmp_path):
    old = {**IDENTITY, "outcome": "failed",
           "counterexample": {"path": "x.json", "replay": "r", "fingerprint": "f", "elements": 3, "shrunk": True},
           "warnings": {"count": 1, "messages": ["m"], "categories": ["UserWarning"]},
           "legs": [{"backend": "b", "shape_mode": "s", "outcome": "o", "extra": 1}]}
    [record] = read_records(_write(tmp_path / "old", [old]))
    assert record["counterexample"] == {"path": "x.json", "replay": "r", "fingerprint": "f", "elements": 3}
    assert record["warnings"] == {"count": 1, "messages": ["m"]}
    assert record["legs"] == [{"backend": "b", "shape_mode": "s", "outcome": "o"}]
    assert typed.problem({**old, "record_version": RECORD_VERSION}).startswith(  # version 2 stays strict
        "a record has an unknown field ")


def test_a_version_1_line_drops_values_version_1_never_checked_with_one_warning(tmp_path, capsys):
    lines = [{**IDENTITY, "outcome": "passed", "isolated": True, "compile": "inductor"},
             {**IDENTITY, "outcome": "crashed", "signal": 11, "isolated_by": "forkserver"},
             {**IDENTITY, "outcome": "passed", "isolated": "--forked"}]
    records = read_records(_write(tmp_path / "old", lines))
    assert [set(r) - set(IDENTITY) for r in records] == [
        {"outcome", "record_version"}, {"outcome", "record_version"}, {"outcome", "record_version", "isolated"}]
    warning = capsys.readouterr().err.strip()
    assert "\n" not in warning and "dropped 4 value(s)" in warning
    assert "fields: compile, isolated, isolated_by, signal" in warning
    with pytest.raises(ResultFileError, match="field 'signal' must be a string"):  # version 2 stays strict
        read_records(_write(tmp_path / "new", [{**lines[1], "record_version": RECORD_VERSION}]))


def test_a_newer_record_version_is_refused_as_newer():
    assert "a newer TorchCTS wrote this record" in typed.problem(
        {**IDENTITY, "outcome": "passed", "record_version": 3})


@pytest.mark.parametrize("version", [0, -1, "2", True, None, 2.0])
def test_an_invalid_record_version_is_refused_as_invalid(version):
    problem = typed.problem({**IDENTITY, "outcome": "passed", "record_version": version})
    assert problem.startswith("field 'record_version' must be the integer 1 or 2") and "newer" not in problem


HUGE = "x" * 1_000_000
DEEP: object = "leaf"
for _ in range(500):
    DEEP = [DEEP]


@pytest.mark.parametrize("field, value, expected", [
    ("level", "abc", "field 'level' must be an integer from 0 to 8, got \"abc\""),
    ("outcome", "nope", "field 'outcome' must be an outcome docs/results.md names"),
    ("duration_s", -1, "field 'duration_s' must be a finite non-negative number or null, got -1"),
    ("examples", 10**40, "field 'examples' must be a non-negative integer, got an integer of 41 digits"),
    ("warnings", {"count": 1, "messages": [1]}, "field 'warnings' must be null or an object"),
    ("isolated_by", "thread", "field 'isolated_by' must be one of fork, spawn or null"),
    ("error", 3, "field 'error' must be a string or null, got 3"),
    ("level", HUGE, "field 'level' must be an integer from 0 to 8, got \"xxxx"),
    ("ulp_error", DEEP, "field 'ulp_error' must be null or an object, got a list"),
    ("counterexample", {"path": DEEP}, "field 'counterexample' must be null or an object with string path"),
    ("legs", [{"backend": "b"}] * 9, "field 'legs' must be null or a list of at most 8 objects"),
    (HUGE, 1, "a record has an unknown field 'xxxx"),
])
def test_hostile_values_give_one_line_problems_naming_the_field(field, value, expected):
    problem = typed.problem({**IDENTITY, "outcome": "passed", field: value, "record_version": RECORD_VERSION})
    assert problem is not None and problem.startswith(expected)
    assert "\n" not in problem and len(problem) < 300


def test_a_missing_required_field_is_named():
    line = {key: value for key, value in IDENTITY.items() if key != "dtype"}
    assert typed.problem({**line, "outcome": "passed"}) == "a record has no field 'dtype' (needs a string)"
    assert typed.problem([IDENTITY]) == "a record must be a JSON object, got a list"


def test_the_parts_name_each_field_once():
    names = [name for part in typed.PARTS.values() for name in attrs.fields_dict(part)]
    assert len(names) == len(set(names))
