"""Distinct cases next to the example budget (issue 39): records, the reader, scorecard, HTML, JUnit and summary.json.

A derandomized level-1 run with `--max-examples 10` draws the same case more than once for many items; the
records say how many cases were distinct and the reports say which passed items rest on fewer cases than their
budget. Records from before the fields are read and reported as unknown, never as 0.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ElementTree

import pytest

from tests.run.test_report import check_html, cli, run_folder
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import EXECUTED
from torchcts.report.render import write_report
from torchcts.results.files import read_records

EXECUTED_VALUES = {o.value for o in EXECUTED}
BUDGET = 10
COMMON = ("--level", "1", "--max-examples", str(BUDGET), "--derandomize", "--no-report")


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    """A CPU validation run of three ops at level 1, 10 examples an item, derandomized."""
    cwd = tmp_path_factory.mktemp("evidence")
    result = cli(cwd, "run", "--validation", "--ops", "^(abs|neg|sin)$", *COMMON, "--results-dir", "results")
    assert result.returncode == 0, result.stderr
    return cwd, run_folder(cwd / "results")


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """A faulty run where abs fails (a storage offset ignored) and add passes."""
    cwd = tmp_path_factory.mktemp("evidence-faulty")
    (cwd / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    result = cli(cwd, "run", "--device", "faulty", "--ops", "^(abs|add)$", "--dtype", "float32", *COMMON,
                 "--results-dir", "results", bugs="storage_offset_ignored")
    assert result.returncode == 1, result.stderr
    return cwd, run_folder(cwd / "results")


def executed(folder):
    return [r for r in read_records(folder) if r["outcome"] in EXECUTED_VALUES]


def report(cwd, folder):
    result = cli(cwd, "report", "--from", str(folder), "--baseline", "none")
    assert result.returncode == 0, result.stderr
    out = folder / "report"
    return {"md": (out / "scorecard.md").read_text(), "html": (out / "report.html").read_text(),
            "junit": ElementTree.parse(out / "junit.xml").getroot(),
            "json": json.loads((out / "summary.json").read_text())}


def case_properties(junit):
    return {case.get("name"): {p.get("name"): p.get("value") for p in case.iterfind("properties/property")}
            for case in junit.iter("testcase")}


@pytest.mark.slow
def test_records_count_distinct_cases_next_to_the_example_budget(validation):
    _, folder = validation
    records = executed(folder)
    assert len(records) >= 20
    for record in records:
        assert 1 <= record["distinct_cases"] <= len(set(record["fingerprints"])), record["item"]
        if not record["cpu_contract_cases"] and not record["unavailable_cases"]:  # else those cases do not count
            assert record["distinct_cases"] == len(set(record["fingerprints"])), record["item"]
        assert record["max_examples"] == BUDGET and record["examples"] == BUDGET, record["item"]
    short = [r for r in records if r["distinct_cases"] < BUDGET]
    assert short, "some level-1 item draws a case twice"  # 46 of 62 on abs, add, mul, neg, sin (torch 2.x)


@pytest.mark.slow
def test_reports_name_the_passed_items_with_fewer_distinct_cases(validation):
    cwd, folder = validation
    records = executed(folder)
    short = sorted((r for r in records if r["distinct_cases"] < BUDGET),
                   key=lambda r: (r["distinct_cases"], r["item"]))
    out = report(cwd, folder)
    evidence = out["json"]["case_evidence"]
    assert (evidence["short_passed"], evidence["passed_budgeted"], evidence["unknown"]) == \
        (len(short), len(records), 0)
    assert evidence["passed_distinct"] == sum(r["distinct_cases"] for r in records)
    assert [x["item"] for x in evidence["short_items"]] == [r["item"] for r in short]
    fewest = short[0]
    pair = f"{fewest['distinct_cases']} distinct of {BUDGET} examples budgeted"
    headline = f"{len(short)} of {len(records)} passed items ran fewer distinct cases than their example budget"
    assert f"**{headline}**" in out["md"] and f"| `{fewest['item']}` | {pair} |" in out["md"]
    check_html(out["html"])
    section = out["html"][out["html"].index('id="distinct-cases"'):out["html"].index("<h2>Capabilities</h2>")]
    assert headline in section and f"<code>{fewest['item']}</code></td><td>{pair}</td>" in section
    properties = case_properties(out["junit"])
    for record in records:
        assert properties[record["item"]] == {"distinct_cases": str(record["distinct_cases"]),
                                              "max_examples": str(BUDGET)}
    suite = {p.get("name"): p.get("value") for p in out["junit"].iterfind("testsuite/properties/property")}
    assert suite["passed_items_fewer_distinct_cases_than_budget"] == str(len(short))


@pytest.mark.slow
def test_a_failure_shows_its_distinct_cases_and_budget(faulty):
    cwd, folder = faulty
    records = {r["item"]: r for r in executed(folder)}
    failed = records["forward::abs::function::float32"]
    assert failed["outcome"] == "failed" and failed["examples"] > BUDGET  # shrinking ran more cases
    assert failed["distinct_cases"] == len(set(failed["fingerprints"])) and failed["max_examples"] == BUDGET
    pair = f"{failed['distinct_cases']} distinct of {BUDGET} examples budgeted; {failed['examples']} run, " \
           "shrinking included"
    out = report(cwd, folder)
    assert [f["cases"] for f in out["json"]["failures"]] == [pair]
    assert f"- cases: {pair}\n" in out["md"] and f"<br>Cases: {pair}" in out["html"]
    junit = {case.get("name"): case for case in out["junit"].iter("testcase")}
    assert junit[failed["item"]].find("failure") is not None
    assert case_properties(out["junit"])[failed["item"]]["distinct_cases"] == str(failed["distinct_cases"])


@pytest.mark.slow
def test_records_without_the_fields_are_read_and_reported_as_unknown(validation, tmp_path):
    _, folder = validation
    old = tmp_path / "old-run"
    shutil.copytree(folder, old, ignore=shutil.ignore_patterns("report"))
    lines = [json.loads(line) for line in (old / "records.jsonl").read_text().splitlines()]
    for record in lines:
        record.pop("distinct_cases", None)
        record.pop("max_examples", None)
    (old / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    records = [r for r in read_records(old) if r["outcome"] in EXECUTED_VALUES]
    assert records and all("distinct_cases" not in r for r in records)
    written = write_report(old, baseline="none", warn=lambda line: None)
    summary = json.loads(written["json"].read_text())["case_evidence"]
    assert (summary["unknown"], summary["passed_budgeted"], summary["short_passed"]) == (len(records), 0, 0)
    md = written["md"].read_text()
    assert f"{len(records)} of {len(records)} executed items: distinct cases unknown" in md
    assert "passed items ran fewer distinct cases" not in md  # no "0 of 0" claim
    junit = ElementTree.parse(written["junit"]).getroot()
    assert {frozenset(p.items()) for p in case_properties(junit).values()} == \
        {frozenset({"distinct_cases": "unknown"}.items())}
    suite = {p.get("name"): p.get("value") for p in junit.iterfind("testsuite/properties/property")}
    assert suite["passed_items_fewer_distinct_cases_than_budget"] == "unknown"


@pytest.mark.slow
def test_a_malformed_distinct_cases_is_refused_naming_the_field(validation, tmp_path):
    cwd, folder = validation
    bad = tmp_path / "bad-run"
    shutil.copytree(folder, bad, ignore=shutil.ignore_patterns("report"))
    lines = (bad / "records.jsonl").read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"distinct_cases"' in line)
    record = json.loads(lines[index])
    record["distinct_cases"] = "three"
    lines[index] = json.dumps(record)
    (bad / "records.jsonl").write_text("\n".join(lines) + "\n")
    result = cli(cwd, "report", "--from", str(bad), "--baseline", "none")
    assert result.returncode == 2
    assert f"records.jsonl:{index + 1}: field 'distinct_cases' must be a non-negative integer or null" in result.stderr


def test_cases_the_cpu_oracle_rejects_are_no_evidence():
    import torch

    from torchcts.engine.context import CaseContext, CpuRejects
    from torchcts.engine.targets import Target
    from torchcts.plan.build import PlanItem
    from torchcts.plan.catalog import find_op
    from torchcts.strategies import opinfo_samples

    context = CaseContext(item=PlanItem("forward", "add", "function", "float32", 1), op=find_op("add"),
                          dtype=torch.float32, target=Target("cpu"), manifest=None, level=2, max_examples=12, seed=1,
                          shrink=False)
    rejected = set()

    def check(case):  # the CPU oracle "rejects" every case whose fingerprint ends in an even digit
        if case.fingerprint[15] in "02468ace":
            rejected.add(case.fingerprint[:16])
            raise CpuRejects("rejected")

    context.run(opinfo_samples(find_op("add"), torch.float32), check)
    fields = context.record_fields()
    drawn = set(fields["fingerprints"])
    assert rejected and rejected < drawn and fields["cpu_contract_cases"] >= len(rejected)
    assert fields["distinct_cases"] == len(drawn - rejected) < len(drawn)
