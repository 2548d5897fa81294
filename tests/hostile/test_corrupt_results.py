"""Corrupt and hostile result folders: a bad earlier run never breaks a later command, `report`
on a malformed run exits 2 with one line naming the file, and record text is data in every format."""

from __future__ import annotations

import html.parser
import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from torchcts.results import bounded as bounded_files
from torchcts.results import files as result_files
from torchcts.cli.main import cli
from torchcts.crashes.history import crash_evidence
from torchcts.report.data import find_baseline, load_run
from torchcts.results.files import ResultFileError, read_records, read_summary
from torchcts.results.writer import hardware_key
from torchcts.results.writer import read_records as results_read_records
from torchcts.manifest.templates import render_template
from tests import warm_programs

ENVIRONMENT = {"device": "cpu", "compile": None, "hardware_key": hardware_key("cpu"), "torch": torch.__version__,
               "validation": True, "replay": None, "level": 1}
RECORD = {"item": "forward::add::function::float32", "property": "forward", "op": "add", "variant": "function",
          "dtype": "float32", "level": 1, "outcome": "passed", "duration_s": 0.1}


def summary(**fields):
    return {"schema_version": 1, "run_id": "r", "status": "complete", "started": "2026-01-01T00:00:00+00:00",
            "finished": "2026-01-01T00:00:01+00:00", "environment": ENVIRONMENT, "counts": {"passed": 1}, **fields}


def line(**fields) -> bytes:
    return (json.dumps({**RECORD, **fields}) + "\n").encode()


def write_run(folder: Path, run_json: bytes | dict | None = None, records: bytes | None = None,
              started: bytes | None = b"") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if run_json is not None:
        data = run_json if isinstance(run_json, bytes) else json.dumps(run_json).encode()
        (folder / "run.json").write_bytes(data)
    if records is not None:
        (folder / "records.jsonl").write_bytes(records)
    if started is not None:
        (folder / "started.jsonl").write_bytes(started)
    return folder


# Each kind: (run.json, records.jsonl, what the one-line error must say). The file named is the
# one whose name the problem text follows.
BAD_SUMMARIES = {
    "a list": (b"[]", "run.json: the summary must be a JSON object, got a list"),
    "null": (b"null", "run.json: the summary must be a JSON object, got null"),
    "not JSON": (b"{not json", "run.json: unreadable: not JSON"),
    "empty": (b"", "run.json: unreadable: not JSON"),
    "not UTF-8": (b'{"status": "\xff\xfe"}', "run.json: unreadable: not UTF-8"),
    "NaN": (json.dumps(summary(counts={"passed": float("nan")})).encode(), "NaN is not valid JSON"),
    "nesting bomb": (b"[" * 200_000 + b"]" * 200_000, "nested deeper"),
    "deep but parseable": (json.dumps(summary(environment={**ENVIRONMENT, "selection": json.loads(
        "[" * 500 + "]" * 500)})).encode(), "nested deeper than 100 levels"),
    "huge integer": (b'{"status": "complete", "counts": {"passed": ' + b"9" * 5000 + b"}}",
                     "an integer of 5000 digits, over the limit of 100"),
    "a repeated key": (b'{"status": "complete", "counts": {"passed": 1}, "status": "partial"}',
                       "run.json: unreadable: an object repeats the key 'status'"),
    "environment a list": (summary(environment=[]), "field 'environment' must be an object, got a list"),
    "status a number": (summary(status=5), "field 'status' must be a string"),
    "counts a list": (summary(counts=[1]), "field 'counts' must be an object"),
    "count negative": (summary(counts={"passed": -1}), "field 'counts' must be"),
    "no status": ({k: v for k, v in summary().items() if k != "status"}, "has no field 'status'"),
    "device a number": (summary(environment={**ENVIRONMENT, "device": 7}),
                        "field 'environment.device' must be a string or null, got 7"),
    "capabilities a string": (summary(environment={**ENVIRONMENT, "capabilities": "inference"}),
                              "field 'environment.capabilities' must be a list of strings"),
}
BAD_RECORDS = {
    "a list": (b"[1]\n", 1, "a record must be a JSON object, got a list"),
    "a number": (line() + b"5\n", 2, "a record must be a JSON object, got a number"),
    "not JSON mid-file": (line() + b"{bad\n" + line(), 2, "unreadable: not JSON"),
    "level a string": (line(level="abc"), 1, "field 'level' must be an integer from 0 to 8, got \"abc\""),
    "level 10**400": (line().replace(b'"level": 1', b'"level": ' + b"1" + b"0" * 400), 1,
                      "an integer of 401 digits"),
    "level 10**40": (line(level=10**40), 1, "field 'level' must be an integer from 0 to 8"),
    "level true": (line(level=True), 1, "field 'level' must be an integer"),
    "level Infinity": (line().replace(b'"level": 1', b'"level": Infinity'), 1, "got Infinity"),
    "outcome a number": (line(outcome=5), 1, "field 'outcome' must be an outcome"),
    "outcome unknown": (line(outcome="exploded"), 1, "got \"exploded\""),
    "item a list": (line(item=["a"]), 1, "field 'item' must be a string, got a list"),
    "no op": ((json.dumps({k: v for k, v in RECORD.items() if k != "op"}) + "\n").encode(), 1,
              "a record has no field 'op'"),
    "no outcome": ((json.dumps({k: v for k, v in RECORD.items() if k != "outcome"}) + "\n").encode(), 1,
                   "a record has no field 'outcome'"),
    "duration NaN": (line().replace(b'"duration_s": 0.1', b'"duration_s": NaN'), 1, "NaN is not valid JSON"),
    "duration Infinity": (line().replace(b'"duration_s": 0.1', b'"duration_s": Infinity'), 1,
                          "field 'duration_s' must be a finite non-negative number"),
    "counterexample a list": (line(counterexample=[1]), 1, "field 'counterexample' must be null or an object"),
    "counterexample path a number": (line(counterexample={"path": 3}), 1, "field 'counterexample'"),
    "not UTF-8": (line() + b'{"item": "\xff"}\n', 2, "unreadable: not UTF-8"),
    "nesting bomb": (b"[" * 200_000 + b"]" * 200_000 + b"\n", 1, "nested deeper"),
    "a repeated key": (line().replace(b'"level": 1', b'"level": 1, "outcome": "failed"'), 1,
                       "unreadable: an object repeats the key 'outcome'"),
    "a repeated nested key": (line(counterexample={"path": "a"}).replace(b'"path": "a"', b'"path": "a", "path": "b"'),
                              1, "unreadable: an object repeats the key 'path'"),
    **{f"{field} nested deep": (line(**{field: {"a": json.loads("[" * 150 + "]" * 150)}}), 1,
                                "unreadable: JSON nested deeper than 100 levels")
       for field in ("ulp_error", "hypothesis_statistics", "compile", "compile_stats", "path_shape", "waiver")},
}


@pytest.mark.parametrize("kind", BAD_SUMMARIES)
def test_bad_run_json_is_named_with_its_problem(tmp_path, kind):
    data, expected = BAD_SUMMARIES[kind]
    folder = write_run(tmp_path / "run", data, line())
    with pytest.raises(ResultFileError) as caught:
        read_summary(folder)
    assert str(caught.value).startswith(str(folder / "run.json") + ": ") and expected in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("kind", BAD_RECORDS)
def test_bad_record_is_named_with_file_and_line(tmp_path, kind):
    data, number, expected = BAD_RECORDS[kind]
    folder = write_run(tmp_path / "run", summary(), data)
    for reader in (read_records, results_read_records):  # results.read_records is the same reader
        with pytest.raises(ResultFileError) as caught:
            reader(folder)
        assert str(caught.value).startswith(f"{folder / 'records.jsonl'}:{number}: "), str(caught.value)
        assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_a_torn_last_line_is_skipped_and_infinite_error_measures_are_kept(tmp_path):
    whole = line(outcome="passed", max_abs_error=float("inf"))  # a float64 difference can overflow
    folder = write_run(tmp_path / "run", summary(), whole + line(item="x")[:40])
    records = read_records(folder)
    assert len(records) == 1 and records[0]["max_abs_error"] == float("inf")


def test_files_that_are_not_regular_files(tmp_path):
    loop = write_run(tmp_path / "loop", None, line())
    os.symlink("run.json", loop / "run.json")
    directory = write_run(tmp_path / "dir", None, line())
    (directory / "run.json").mkdir()
    fifo = write_run(tmp_path / "fifo", None, line())
    os.mkfifo(fifo / "run.json")  # a FIFO with no writer: opening or reading it must not block
    device = write_run(tmp_path / "device", None, line())
    os.symlink(os.devnull, device / "run.json")
    missing = write_run(tmp_path / "missing", summary(), None)
    expected = {loop: "unreadable: Too many levels of symbolic links", directory: "unreadable: a directory",
                fifo: "unreadable: not a regular file", device: "unreadable: not a regular file"}
    for folder, problem in expected.items():
        with pytest.raises(ResultFileError, match=re.escape(f"{folder / 'run.json'}: {problem}")):
            read_summary(folder)
    with pytest.raises(ResultFileError, match=re.escape(f"{missing / 'records.jsonl'}: missing")):
        read_records(missing)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_permission_denied(tmp_path):
    folder = write_run(tmp_path / "run", summary(), line())
    (folder / "run.json").chmod(0)
    with pytest.raises(ResultFileError, match="run.json: unreadable: Permission denied"):
        read_summary(folder)


def test_size_line_and_count_limits_are_named(tmp_path, monkeypatch):
    big = write_run(tmp_path / "big", b" " * (result_files.MAX_SUMMARY_BYTES + 1) + b"{}", line())
    with pytest.raises(ResultFileError, match="over the limit of 16 MiB"):
        read_summary(big)
    long_line = write_run(tmp_path / "long", summary(), line() + line(error="x" * result_files.MAX_LINE_BYTES))
    with pytest.raises(ResultFileError, match=r"records.jsonl:2: unreadable: line longer than the limit of 8 MiB"):
        read_records(long_line)
    monkeypatch.setattr(bounded_files, "MAX_RECORDS", 3)  # the real limit is 1,000,000 lines
    many = write_run(tmp_path / "many", summary(), line() * 4)
    assert len(read_records(write_run(tmp_path / "three", summary(), line() * 3))) == 3
    with pytest.raises(ResultFileError, match="records.jsonl: unreadable: more than 3 lines, the limit"):
        read_records(many)


def corrupt_results(results: Path) -> dict[str, str]:
    """A results folder of earlier runs comparable with a CPU validation run, each corrupt in one
    file; the file each must be warned about, by folder name."""
    running = summary(status="running")
    crashed = summary(counts={"crashed": 1})  # a finished run's records are read only when it counts a crash or hang
    write_run(results / "a-summary-list", b"[]", line())
    write_run(results / "b-summary-env-list", summary(environment=[]), line())
    write_run(results / "c-summary-not-utf8", b'{"status": "\xff"}', line())
    write_run(results / "d-summary-status-int", summary(status=5), line())
    write_run(results / "e-records-list-line", crashed, line() + b"[1]\n")
    write_run(results / "f-records-level-abc", summary(counts={"timed_out": 1}), line(level="abc"))
    write_run(results / "g-records-missing", crashed, None)
    write_run(results / "h-records-nesting-bomb", crashed, b"[" * 100_000 + b"]" * 100_000 + b"\n")
    write_run(results / "i-started-not-object", running, line(), b'"forward::abs::function::float32"\n')
    write_run(results / "j-summary-dir", None, line())
    (results / "j-summary-dir" / "run.json").mkdir()
    return {"a-summary-list": "run.json", "b-summary-env-list": "run.json", "c-summary-not-utf8": "run.json",
            "d-summary-status-int": "run.json", "e-records-list-line": "records.jsonl:2",
            "f-records-level-abc": "records.jsonl:1", "g-records-missing": "records.jsonl",
            "h-records-nesting-bomb": "records.jsonl:1", "i-started-not-object": "started.jsonl:1",
            "j-summary-dir": "run.json"}


def test_crash_evidence_skips_each_corrupt_run_with_one_warning(tmp_path):
    results = tmp_path / "results"
    expected = corrupt_results(results)
    write_run(results / "k-valid-crash", summary(counts={"crashed": 1}),
              line(outcome="crashed", item="forward::abs::function::float32"))
    write_run(results / "l-valid-died", summary(status="running", run_id="died"), line(),
              b'{"item": "forward::neg::function::float32"}\n')
    warnings: list[str] = []
    evidence = crash_evidence(results, ENVIRONMENT, warn=warnings.append)
    assert evidence == {"forward::abs::function::float32": "crashed in run r",
                        "forward::neg::function::float32": "run died died while it ran"}
    assert len(warnings) == len(expected)
    for warning, (name, file) in zip(sorted(warnings), sorted(expected.items())):
        assert f"{results / name / file}" in warning and "\n" not in warning


def test_a_finished_run_that_counts_no_crash_or_hang_is_not_read_for_evidence(tmp_path):
    """Its run.json's counts come from its records: a folder of many 27,000-record runs is not read at each start."""
    results = tmp_path / "results"
    write_run(results / "a-complete", summary(counts={"passed": 1}), b"{unread\n")
    write_run(results / "b-partial", summary(status="partial", counts={"passed": 1}), None)
    write_run(results / "c-counts-a-hang", summary(status="partial", counts={"timed_out": 1}),
              line(outcome="timed_out", item="forward::sin::function::float32"))
    write_run(results / "d-died", summary(status="running", counts={}), line(),
              b'{"item": "forward::neg::function::float32"}\n')
    warnings: list[str] = []
    assert crash_evidence(results, ENVIRONMENT, warn=warnings.append) == {
        "forward::sin::function::float32": "timed_out in run r",
        "forward::neg::function::float32": "run r died while it ran"}
    assert warnings == []


@pytest.mark.slow
def test_run_in_a_folder_of_corrupt_runs_succeeds_with_one_warning_per_file(tmp_path):
    expected = corrupt_results(tmp_path / "R")
    (tmp_path / "manifest.py").write_text(render_template("smoke", device_name="cpu"))
    result = warm_programs.run(
        [sys.executable, "-m", "torchcts", "run", "--validation", "--ops", "^add$", "--dtype", "float32",
         "--level", "1", "--max-examples", "2", "--results-dir", "R"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "INTERNALERROR" not in output
    warnings = [w for w in result.stderr.splitlines() if w.startswith("torchcts: warning: earlier run skipped: ")]
    assert len(warnings) == len(expected), result.stderr
    for name, file in expected.items():
        assert sum(f"{Path('R') / name / file}: " in w for w in warnings) == 1, (name, result.stderr)
    new = [p for p in (tmp_path / "R").iterdir() if p.name not in expected]
    assert len(new) == 1 and read_summary(new[0])["status"] == "complete"
    outcomes = {r["item"]: r["outcome"] for r in read_records(new[0])}
    assert outcomes["forward::add::function::float32"] == "passed"


def report(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["report", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("kind", ["summary " + k for k in BAD_SUMMARIES] + ["records " + k for k in BAD_RECORDS])
def test_report_on_a_malformed_run_exits_2_with_one_line(tmp_path, kind):
    group, name = kind.split(" ", 1)
    if group == "summary":
        data, expected = BAD_SUMMARIES[name]
        folder, where = write_run(tmp_path / "run", data, line()), "run.json: "
    else:
        data, number, expected = BAD_RECORDS[name]
        folder, where = write_run(tmp_path / "run", summary(), data), f"records.jsonl:{number}: "
    code, out, err = report("--from", str(folder), "--baseline", "none")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"{folder}/{where}") and expected in err, err
    assert not (folder / "report").exists()


def test_report_of_a_valid_run_among_corrupt_ones(tmp_path):
    results = tmp_path / "results"
    corrupt_results(results)
    old = write_run(results / "0-baseline", summary(run_id="old", started="2025-01-01T00:00:00+00:00"),
                    line(outcome="failed"))
    write_run(results / "1-corrupt-baseline", summary(run_id="newer", started="2025-06-01T00:00:00+00:00"),
              line() + b"[]\n")
    folder = write_run(results / "z-valid", summary(), line())
    code, out, err = report("--from", str(folder))
    assert code == 0, err
    data = json.loads((folder / "report" / "summary.json").read_text())
    assert data["baseline"]["run_id"] == "old" and data["baseline"]["fixes"] == [
        {"item": RECORD["item"], "then": "failed", "now": "passed"}]
    assert f"baseline skipped: {results / '1-corrupt-baseline' / 'records.jsonl'}:2: " in err
    assert f"earlier run skipped: {results / 'a-summary-list' / 'run.json'}: " in err
    assert "Traceback" not in err and all(w.startswith("torchcts: warning: ") for w in err.splitlines())
    code, _, err = report("--from", str(folder), "--baseline", str(results / "1-corrupt-baseline"))
    assert code == 2 and err.startswith(f"{results / '1-corrupt-baseline' / 'records.jsonl'}:2: ")
    assert report("--from", str(folder), "--baseline", str(old))[0] == 0
    code, _, err = report("--from", str(folder), "--baseline", str(tmp_path / "nowhere"))
    assert code == 2 and "not a run folder" in err
    assert find_baseline(results, load_run(folder), warn=lambda _: None)["summary"]["run_id"] == "old"


def test_report_output_that_cannot_be_written_exits_2(tmp_path):
    folder = write_run(tmp_path / "run", summary(), line())
    (tmp_path / "out" / "scorecard.md" / "x").mkdir(parents=True)  # a folder where the file goes
    code, _, err = report("--from", str(folder), "--baseline", "none", "--output", str(tmp_path / "out"))
    assert code == 2 and err == f"{tmp_path / 'out' / 'scorecard.md'}: cannot be written: Is a directory\n"


HOSTILE = "a|b`c``\n<script>alert(1)</script>\x1b[31m\x00\ud800 [x](javascript:alert(1)) \\| &amp; # h"


class StrictHTML(html.parser.HTMLParser):
    VOID = {"meta", "br", "rect"}

    def __init__(self):
        super().__init__()
        self.stack, self.tags = [], set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            assert self.stack and self.stack.pop() == tag


def unescaped_pipes(row: str) -> int:
    """Cell separators in a GFM table row: pipes not preceded by a backslash escape."""
    count, index = 0, 0
    while index < len(row):
        if row[index] == "\\":
            index += 2
            continue
        count += row[index] == "|"
        index += 1
    return count


def outside_code_spans(text: str) -> str:
    return re.sub(r"(`+)(.+?)\1", "", text)


def test_report_text_from_records_is_escaped_in_every_format(tmp_path):
    folder = tmp_path / "run"
    environment = {**ENVIRONMENT, "device": HOSTILE, "compile": HOSTILE, "hardware_key": HOSTILE, "torch": HOSTILE,
                   "manifest": HOSTILE, "manifest_hash": HOSTILE, "capabilities": [HOSTILE],
                   "property_capabilities": {HOSTILE: HOSTILE}}
    case = {"description": HOSTILE, "failure": {"difference": HOSTILE},
            "inputs": {"input": {"tensor": HOSTILE, "dtype": HOSTILE, "sizes": [2], "strides": [1],
                                 "storage_offset": 0}, "args": [{"tensor": "strided", "sizes": [2]}] * 40}}
    write_run(folder, summary(run_id=HOSTILE, status=HOSTILE, started=HOSTILE, environment=environment))
    (folder / "case.json").write_text(json.dumps(case))
    reference = {"path": str(folder / "case.json"), "replay": HOSTILE, "elements": 3}
    (folder / "records.jsonl").write_bytes(b"".join(
        line(item=HOSTILE + outcome, property=HOSTILE, op=HOSTILE, dtype=HOSTILE, outcome=outcome, error=HOSTILE,
             reason=HOSTILE, counterexample=reference) for outcome in ("failed", "error", "crashed", "passed")))
    code, _, err = report("--from", str(folder), "--baseline", "none")
    assert code == 0, err
    out = folder / "report"
    page = (out / "report.html").read_text()
    parser = StrictHTML()
    parser.feed(page)
    parser.close()
    assert not parser.stack and "script" not in parser.tags and "<script" not in page and "&lt;script&gt;" in page
    junit = ElementTree.parse(out / "junit.xml").getroot()  # control characters would make it unparseable
    assert int(junit.get("failures")) == 1 and int(junit.get("errors")) == 2
    data = json.loads((out / "summary.json").read_text())
    assert data["failures"][0]["case"]["more_tensors"] == 41 - 32
    markdown = (out / "scorecard.md").read_text()
    assert "\x00" not in markdown and "\x1b" not in markdown
    lines = markdown.splitlines()
    for index, row in enumerate(lines):  # every row of a table has the cells of its header
        if row.startswith("|") and index and not lines[index - 1].startswith("|"):
            header = unescaped_pipes(row)
        if row.startswith("|"):
            assert unescaped_pipes(row) == header, row
    text = outside_code_spans(markdown)
    assert not re.search(r"(?<!\\)[<\[]", text), "raw HTML or a link outside a code span"
    assert "### " + "`" * 3 in markdown  # the item's backticks are fenced by a longer run
    assert sum(row.startswith("### ") for row in lines) == 3  # one heading per failure: newlines flattened


def test_an_unreadable_case_is_named_in_the_report(tmp_path):
    folder = write_run(tmp_path / "run", summary())
    for name, content in {"list.json": b"[]", "bomb.json": b"[" * 100_000 + b"]" * 100_000,
                          "sizes.json": json.dumps({"inputs": {"input": {"tensor": "strided", "sizes": "x"}}}).encode()
                          }.items():
        (folder / name).write_bytes(content)
    records = b"".join(line(item=name, outcome="failed", counterexample={"path": str(folder / name), "elements": 1})
                       for name in ("list.json", "bomb.json", "sizes.json"))
    records += line(item="missing", outcome="failed", counterexample={"path": "x" * 5000 + ".json"})
    (folder / "records.jsonl").write_bytes(records)
    code, _, err = report("--from", str(folder), "--baseline", "none", "--format", "json", "--format", "md")
    assert code == 0, err
    cases = {f["item"]: f["case"] for f in json.loads((folder / "report" / "summary.json").read_text())["failures"]}
    assert cases["list.json"]["problem"] == "a case must be a JSON object"
    assert "nested deeper" in cases["bomb.json"]["problem"]
    assert cases["sizes.json"]["problem"] == "input.sizes must be a list of at most 64 integers"
    assert cases["missing"]["missing"]
    assert err.count("counterexample not described") == 3
    assert "cannot be read: a case must be a JSON object" in (folder / "report" / "scorecard.md").read_text()
