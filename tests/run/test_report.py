"""`torchcts report` and `show-skips`: sections and numbers checked against the records they come from."""

from __future__ import annotations

import collections
import html.parser
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from torchcts.core.outcomes import EXECUTED, Outcome
from torchcts.results.writer import read_records
from torchcts.manifest.templates import render_template
from tests.shared_runs import shared_folder
from tests import warm_programs

OPS = "^(abs|add|mul|neg)$"
BUG = "storage_offset_ignored"


def cli(cwd, *args, bugs=""):
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs), timeout=600)


def run_folder(results):
    return sorted(p.parent for p in results.glob("*/run.json"))[-1]


def _build_runs(cwd):
    """A clean faulty run, then the same run with a bug (its baseline is the clean one), then a partial run."""
    (cwd / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    common = ("run", "--device", "faulty", "--ops", OPS, "--dtype", "float32", "--level", "4", "--derandomize",
              "--max-examples", "15", "--no-report")  # each test writes the report it reads with `report`
    assert cli(cwd, *common).returncode == 0
    # The failing runs keep the first failing case of an item (--no-shrink): no test here reads how small a case
    # is, only that the records, cases and replay commands the run wrote are what the report shows.
    assert cli(cwd, *common, "--no-shrink", bugs=BUG).returncode == 1
    assert cli(cwd, *common, "--no-shrink", "--results-dir", "partial-results", "--", "-x", bugs=BUG).returncode == 1


@pytest.fixture(scope="module")
def shared_runs(tmp_path_factory):
    """The three runs, made once per test session (every xdist worker reads the same folder)."""
    return shared_folder(tmp_path_factory, "test_report-runs", _build_runs)


@pytest.fixture
def runs(shared_runs, tmp_path):
    """A copy of the three runs for one test: `report` writes into the run folder (and a test may add to it)."""
    cwd = tmp_path / "report"
    shutil.copytree(shared_runs, cwd)
    results = sorted(p.parent for p in (cwd / "results").glob("*/run.json"))
    assert len(results) == 2, results
    clean, buggy = results
    return cwd, clean, buggy, run_folder(cwd / "partial-results")


def report(cwd, folder, *args):
    result = cli(cwd, "report", "--from", str(folder), *args)
    assert result.returncode == 0, result.stderr
    out = folder / "report"
    return {"md": (out / "scorecard.md").read_text(), "html": (out / "report.html").read_text(),
            "junit": ElementTree.parse(out / "junit.xml").getroot(), "json": json.loads((out / "summary.json").read_text())}


class StrictHTML(html.parser.HTMLParser):
    """Fails on unbalanced tags: the report must be well-formed without a browser to forgive it."""

    VOID = {"meta", "br", "rect", "link", "img", "input", "hr"}

    def __init__(self):
        super().__init__()
        self.stack = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()


def check_html(text):
    parser = StrictHTML()
    parser.feed(text)
    parser.close()
    assert not parser.stack
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched
    assert "<script" not in text


@pytest.mark.slow
def test_complete_run_report_matches_its_records(runs):
    cwd, clean, _, _ = runs
    records = read_records(clean)
    counts = collections.Counter(r["outcome"] for r in records)
    executed = sum(counts[o] for o in EXECUTED)
    out = report(cwd, clean, "--baseline", "none")
    summary = out["json"]
    assert summary["coverage"]["executed"] == executed and summary["coverage"]["total_items"] == len(records)
    assert summary["coverage"]["support_percent"] == round(100 * counts[Outcome.PASSED] / executed, 2) == 100.0
    groups = {g["name"]: g["count"] for g in summary["coverage"]["groups"]}
    assert groups["passed"] == counts[Outcome.PASSED] and groups["selection"] == counts[Outcome.DESELECTED]
    assert sum(groups.values()) == len(records)
    assert "**Backend support: 100.00% of claimed items pass**" in out["md"] and f"of {executed} executed items" in out["md"]
    claimed = len(records) - sum(counts[o] for o in (Outcome.DTYPE_NOT_SUPPORTED, Outcome.DTYPE_REGEX_FILTERED,
                                                     Outcome.DTYPE_NOT_LISTED, Outcome.CAPABILITY_NOT_DECLARED,
                                                     Outcome.OP_EXCLUDED, Outcome.LEVEL_FILTERED))
    assert summary["coverage"]["claimed_items"] == claimed < len(records)
    assert f": {claimed} of {len(records)} items of the operator matrix" in out["md"].split("## Operator")[0]
    capabilities = {c["capability"]: c for c in summary["capabilities"]}
    assert capabilities["training"]["properties"] == ["backward", "training"]
    assert capabilities["training"]["verdict"] == "passing"
    assert capabilities["training"]["executed"] == sum(
        1 for r in records if r["property"] == "backward" and r["outcome"] == Outcome.PASSED)
    # every capability a manifest can claim has a suite (issue 20): none is "declared; no property tests it yet"
    assert "declared; no property tests it yet" not in {c["verdict"] for c in summary["capabilities"]}
    assert capabilities["ieee754"]["properties"] == ["backward", "foreach", "foreach_floating", "forward", "ieee754",
                                                  "inplace", "out"]  # its own suite, and special values
    levels = {l["level"]: l for l in summary["levels"]}
    assert levels[4]["executed"] == sum(1 for r in records if r["level"] == 4 and r["outcome"] == Outcome.PASSED)
    core = next(row for row in summary["dtype_matrix"]["rows"] if row["family"] == "core")
    float32 = next(cell for cell in core["cells"] if cell["dtype"] == "float32")
    assert float32["passed"] == counts[Outcome.PASSED] and float32["pass_rate"] == 1.0
    junit = out["junit"]
    assert int(junit.get("failures")) == 0 and int(junit.get("tests")) == executed + counts[Outcome.CPU_CONTRACT] + \
        counts[Outcome.RUNTIME_UNAVAILABLE]
    check_html(out["html"])
    assert 'id="heatmap"' in out["html"] and 'id="level-chart"' in out["html"] and 'id="partial"' not in out["html"]


@pytest.mark.slow
def test_failures_show_counterexample_and_replay(runs):
    cwd, _, buggy, _ = runs
    records = read_records(buggy)
    failing = [r for r in records if r["outcome"] in (Outcome.FAILED, Outcome.ERROR)]
    out = report(cwd, buggy, "--baseline", "none")
    failures = {f["item"]: f for f in out["json"]["failures"]}
    assert set(failures) == {r["item"] for r in failing} and failures
    abs_failure = failures["forward::abs::function::float32"]
    assert abs_failure["replay"].startswith("torchcts replay corpus/")
    tensor = abs_failure["case"]["tensors"][0]
    assert tensor["where"] == "input" and tensor["storage_offset"] > 0 and tensor["strides"] is not None
    assert abs_failure["case"]["difference"]
    assert f"`{abs_failure['replay']}`" in out["md"] and "### `forward::abs::function::float32`: failed" in out["md"]
    assert int(out["junit"].get("failures")) == sum(r["outcome"] == Outcome.FAILED for r in failing)
    assert out["json"]["coverage"]["support_percent"] < 100
    check_html(out["html"])


@pytest.mark.slow
def test_baseline_lists_regressions(runs):
    cwd, clean, buggy, _ = runs
    out = report(cwd, buggy)  # auto: the clean run has the same hardware key, device and torch
    baseline = out["json"]["baseline"]
    assert baseline["run_id"] == clean.name
    before = {r["item"]: r["outcome"] for r in read_records(clean)}
    expected = sorted(r["item"] for r in read_records(buggy)
                      if r["outcome"] in (Outcome.FAILED, Outcome.ERROR) and before.get(r["item"]) == Outcome.PASSED)
    assert sorted(b["item"] for b in baseline["regressions"]) == expected and expected
    assert baseline["fixes"] == []
    assert f"{len(expected)} regressions" in out["md"]
    assert report(cwd, clean)["json"]["baseline"] is None  # nothing earlier


@pytest.mark.slow
def test_partial_run_is_marked_and_gets_no_percentage(runs):
    cwd, _, _, partial = runs
    assert json.loads((partial / "run.json").read_text())["status"] == "partial"
    out = report(cwd, partial, "--baseline", "none")
    assert out["json"]["coverage"]["support_percent"] is None and not out["json"]["coverage"]["complete"]
    assert "(PARTIAL RUN)" in out["md"] and "No support percentage: the run is partial" in out["md"]
    assert 'id="partial"' in out["html"]
    check_html(out["html"])


@pytest.mark.slow
def test_report_needs_a_run_folder(tmp_path):
    result = cli(tmp_path, "report")
    assert result.returncode == 2 and "no run folder" in result.stderr
    (tmp_path / "results" / "x").mkdir(parents=True)
    (tmp_path / "results" / "x" / "run.json").write_text("{not json")
    broken = cli(tmp_path, "report")
    assert broken.returncode == 2 and "run.json: unreadable" in broken.stderr


@pytest.mark.slow
def test_show_skips_lists_reasons_without_running(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("minimal", device_name="faulty"))
    result = cli(tmp_path, "show-skips", "--device", "faulty", "--level", "1", "--ops", "^(add|abs)$")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "items would run" in out and "level 2 is above --level 1" in out and "--ops leaves it out" in out
    assert "dtype_not_supported" in out and "capability_not_declared" in out
    assert not (tmp_path / "results").exists()
    bad = cli(tmp_path, "show-skips", "--dtype", "float33")
    assert bad.returncode == 2 and "float33" in bad.stderr


@pytest.mark.slow
def test_report_path_imports_no_torch():
    code = ("import sys, torchcts.cli.main, torchcts.report.render, torchcts.report.data, torchcts.core.outcomes; "
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))")
    assert warm_programs.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it where it can)")
def test_html_report_opens_in_headless_chromium(runs, tmp_path):
    cwd, _, buggy, _ = runs
    report(cwd, buggy)
    shot = tmp_path / "report.png"
    browser = warm_programs.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         f"--screenshot={shot}", "--window-size=1200,1600", (buggy / "report" / "report.html").as_uri()],
        capture_output=True, text=True, timeout=600)  # a safety net: headless Chromium is slow on a busy machine
    assert shot.exists() and shot.stat().st_size > 10_000, browser.stderr[-2000:]
    page_errors = [line for line in browser.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not page_errors, page_errors


@pytest.mark.slow
def test_the_html_report_shows_a_coverage_audit_found_beside_the_runs(runs, tmp_path):
    """A coverage audit in <results dir>/coverage/audit.json becomes a section of report.html; a damaged one is
    left out with a warning naming it, and the report is still written."""
    cwd, clean, _, _ = runs
    audit = {"schema_version": 1, "metadata": {
        "torch": "2.13.0", "torch_git": None, "torchcts": "0.1.0", "python": "3.11", "date": "today",
        "inventory": {}, "exclusion_files": [], "manifest": None, "evidence": None},
        "entries": [{"overload": "aten.add.Tensor", "status": "opinfo", "level": 1, "rule": "cpu-kernel: x",
                     "opinfos": ["add"], "opinfo_properties": ["forward"], "suites": [], "generated": None,
                     "backend_packs": [], "exclusion": None, "reached": None, "opinfo_basis": "name"},
                    {"overload": "aten.mystery.default", "status": "unknown", "level": None, "rule": "cpu-kernel: x",
                     "opinfos": [], "opinfo_properties": [], "suites": [], "generated": "<b>why</b>",
                     "backend_packs": [], "exclusion": None, "reached": None}],
        "not_relevant": {}, "warnings": []}
    folder = clean.parent / "coverage"
    folder.mkdir(exist_ok=True)
    try:
        (folder / "audit.json").write_text(json.dumps(audit))
        page = report(cwd, clean)["html"]
        assert '<section class="coverage-audit">' in page and "aten.mystery.default" in page
        assert page.count("<section") == page.count("</section>")
        (folder / "audit.json").write_text(json.dumps({**audit, "entries": "all of them"}))
        result = cli(cwd, "report", "--from", str(clean))
        assert result.returncode == 0, result.stderr
        assert "coverage audit left out of the report" in result.stderr and "audit.json" in result.stderr
        assert "coverage-audit" not in (clean / "report" / "report.html").read_text()
    finally:
        shutil.rmtree(folder)
