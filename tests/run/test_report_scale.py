"""Reports that scale: a synthetic run with 500 failures (300 missing-kernel errors over 150
overloads, 200 other failures, some with long errors) and a baseline, reported in every format.

The run is written as result files directly (no torch, no backend): the report reads files only,
and a synthetic folder pins the numbers the assertions check. `python tests/run/test_report_scale.py
DIR` writes the same folders for measuring by hand.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from click.testing import CliRunner

RUN_ID, BASELINE_ID = "20261203T120000Z-aaaaaa", "20261202T120000Z-bbbbbb"
CLAIMED = ("float32",)
UNCLAIMED = ("float64", "float16", "bfloat16", "complex64", "complex128", "int64", "int32", "int16", "int8",
             "uint8", "bool")
PROPERTIES = {"forward": ("inference", 1), "out": ("out_variants", 2), "inplace": ("inplace", 2),
              "backward": ("training", 3)}
# items per missing overload: 15 large groups, then 76 of 2 items and 59 of 1: 300 items over 150 overloads
MISSING_SIZES = [18, 12, 9, 7, 6, 5, 5, 4, 4, 4, 3, 3, 3, 3, 3] + [2] * 76 + [1] * 59
OTHER_FAILURES = {"failed": 120, "error": 60, "crashed": 15, "timed_out": 5}
PASSED = 300
REGRESSIONS, FIXES = 40, 5
ENVIRONMENT = {
    "device": "tiny", "compile": None, "validation": False, "hardware_key": "tiny:x86_64:synthetic",
    "torch": "2.13.0+cpu", "torchcts": "0.1.0", "hypothesis": "6.140.0", "python": "3.12.3", "seed": None,
    "derandomize": True, "max_examples": 20, "level": 3, "manifest": "/work/manifest.py",
    "manifest_hash": "ab" * 32, "replay": None,
    "selection": {"dtypes": [], "ops": None, "properties": [], "level": None},
    "capabilities": ["inference", "inplace", "out_variants", "training", "device_api"],
    "property_capabilities": {name: capability for name, (capability, _) in PROPERTIES.items()},
    "capability_also_tested_by": {}, "planned_items": 800, "claimed_dtypes": list(CLAIMED),
}


def op_names() -> list[str]:
    core = [f"op_{i:03d}" for i in range(170)]
    return core + [f"nn.functional.fn_{i:02d}" for i in range(60)] + [f"linalg.la_{i:02d}" for i in range(20)] + \
        [f"special.sp_{i:02d}" for i in range(10)]


def dispatcher_listing(overload: str) -> str:
    """The text of a missing kernel's NotImplementedError, with the dispatcher's registration listing."""
    head = (f"Could not run '{overload}' with arguments from the 'PrivateUse1' backend. This could be because the "
            "operator doesn't exist for this backend, or was omitted during the selective/custom build process (if "
            f"using custom build). '{overload}' is only available for these backends: [CPU, Meta, BackendSelect, "
            "Python, FuncTorchDynamicLayerBackMode, Functionalize, Named, Conjugate, Negative, ZeroTensor].")
    keys = ["CPU", "Meta", "BackendSelect", "Python", "Functionalize", "Named", "Conjugate", "Negative",
            "ADInplaceOrView", "AutogradOther", "AutogradCPU", "AutogradCUDA", "Tracer", "AutocastCPU",
            "AutocastCUDA", "FuncTorchBatched", "BatchedNestedTensor", "VmapMode", "PythonTLSSnapshot"]
    listing = "".join(f"{key}: registered at /pytorch/build/aten/src/ATen/Register{key}.cpp:{3000 + i} [kernel]\n"
                      for i, key in enumerate(keys))
    return f"NotImplementedError: {head}\n\n{listing}"


def case_file(corpus: Path, name: str, description: str, difference: str) -> dict:
    path = corpus / f"{name}.json"
    path.write_text(json.dumps({
        "description": description, "failure": {"difference": difference},
        "inputs": {"input": {"tensor": "strided", "dtype": "float32", "sizes": [3, 5], "strides": [10, 2],
                             "storage_offset": 1}, "args": [{"tensor": "strided", "dtype": "float32",
                                                             "sizes": [5], "strides": [1], "storage_offset": 0}],
                   "kwargs": {}}}))
    return {"path": f"corpus/{path.name}", "replay": f"torchcts replay corpus/{path.name} --device tiny",
            "elements": 20, "fingerprint": name[:16]}


def item(prop: str, op: str, dtype: str) -> dict:
    return {"item": f"{prop}::{op}::function::{dtype}", "property": prop, "op": op, "variant": "function",
            "dtype": dtype, "level": PROPERTIES[prop][1]}


def write_run(folder: Path, records: list[dict], started: str, **extra) -> Path:
    folder.mkdir(parents=True)
    with open(folder / "records.jsonl", "w") as out:
        for record in records:
            out.write(json.dumps(record, sort_keys=True) + "\n")
    counts: dict[str, int] = {}
    for record in records:
        counts[record["outcome"]] = counts.get(record["outcome"], 0) + 1
    executed = sum(n for o, n in counts.items() if o in ("passed", "failed", "error", "crashed", "timed_out"))
    finished = (datetime.datetime.fromisoformat(started) + datetime.timedelta(minutes=7)).isoformat()
    summary = {"schema_version": 1, "run_id": folder.name, "status": "complete", "complete": True,
               "started": started, "finished": finished, "environment": ENVIRONMENT, "counts": counts,
               "executed": executed, "interrupted": None, "run_kind": "run", **extra}
    (folder / "run.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return folder


def write_synthetic_runs(root: Path) -> tuple[Path, Path]:
    """(run, baseline) folders under `root`/results, the run's corpus under `root`/corpus."""
    rng = random.Random(15)
    ops = op_names()
    corpus = root / "corpus"
    corpus.mkdir(parents=True)
    slots = [(prop, op) for prop in PROPERTIES for op in ops]  # 1040 float32 items
    rng.shuffle(slots)
    records, missing = [], {}
    overloads = ["aten::zero_", "aten::add.out", "aten::mul.Tensor"] + \
        [f"aten::kernel_{i:03d}{'.out' if i % 3 == 0 else ''}" for i in range(len(MISSING_SIZES) - 3)]
    position = 0
    for overload, size in zip(overloads, MISSING_SIZES):
        reference = case_file(corpus, f"missing-{overload.replace('::', '-')}", f"{overload} on tiny",
                              f"NotImplementedError: no kernel for {overload}")
        for n in range(size):
            prop, op = slots[position]
            position += 1
            text = dispatcher_listing(overload)
            records.append({**item(prop, op, "float32"), "outcome": "error", "error": text,
                            "error_line": text.splitlines()[0][:300], "error_kind": "missing_kernel",
                            "missing_kernel": {"overload": overload, "dispatch_key": "PrivateUse1"},
                            "counterexample": {**reference, "new": n == 0}, "examples": 1, "distinct_cases": 1,
                            "max_examples": 20, "duration_s": 0.01})
        missing[overload] = size
    others = [outcome for outcome, n in OTHER_FAILURES.items() for _ in range(n)]
    for index, outcome in enumerate(others):
        prop, op = slots[position]
        position += 1
        record = {**item(prop, op, "float32"), "outcome": outcome, "examples": 7, "duration_s": 0.2}
        if outcome not in ("crashed", "timed_out"):  # a dead child's record has no distinct cases: unknown
            record.update(distinct_cases=5, max_examples=20)
        if outcome == "failed":
            record["error"] = ("AssertionError: Tensor-likes are not close!\n\nMismatched elements: 3 / 15 (20.0%)\n"
                               f"Greatest absolute difference: 0.{index + 1} at index (1, 2) (up to 1e-05 allowed)")
            record.update(max_abs_error=0.001 * index, max_rel_error=0.002, max_ulp=3)
        elif outcome == "error":
            long = "x" * 3000 if index % 4 == 0 else ""  # some errors are one very long line
            record.update(error=f"RuntimeError: tiny: resize_ keeps the old strides {long}\nat frame 1\nat frame 2",
                          error_kind="backend")
        else:
            record.update(error=f"{outcome}: the item's child {'died of SIGSEGV' if outcome == 'crashed' else 'hung'}")
        record["error_line"] = record["error"].splitlines()[0][:300]
        if index % 3 == 0:
            record["warnings"] = {"count": 4, "messages": ["UserWarning: an op warned", "DeprecationWarning: old"]}
        record["counterexample"] = case_file(corpus, f"case-{index:03d}", f"{op} with a strided input",
                                             "output[1, 2] = 0.5, expected 0.25")
        records.append(record)
    for index, (prop, op) in enumerate(slots[position:position + PASSED]):  # a third drew a case twice
        records.append({**item(prop, op, "float32"), "outcome": "passed", "examples": 20,
                        "distinct_cases": 20 - (index % 3 == 0), "max_examples": 20, "duration_s": 0.05})
    position += PASSED
    for prop, op in slots[position:]:
        records.append({**item(prop, op, "float32"), "outcome": "level_filtered", "reason": "above level 3"})
    for op in ops:
        for dtype in UNCLAIMED:
            records.append({**item("forward", op, dtype), "outcome": "dtype_not_supported",
                            "reason": f"the manifest does not claim {dtype}"})
    extra = {
        "missing_kernels": {"distinct": len(missing), "overloads": [
            {"overload": o, "dispatch_key": "PrivateUse1", "items": n} for o, n in missing.items()]},
        "probes": {"total": 7, "failed": 1, "problems": ["float32: copy to device fails: RuntimeError: tiny: no copy_"]},
        "hypothesis": {"profile": "torchcts-release", "max_examples": 20, "deadline_ms": None, "derandomize": True,
                       "seed": None},
    }
    results = root / "results"
    run = write_run(results / RUN_ID, records, "2026-12-03T12:00:00+00:00", **extra)
    # the baseline: the same items; the first REGRESSIONS other failures passed then, and FIXES passed items failed
    regressed = {r["item"] for r in records if r["outcome"] in OTHER_FAILURES and r.get("error_kind") != "missing_kernel"}
    regressed = set(sorted(regressed)[:REGRESSIONS])
    fixed = set(sorted(r["item"] for r in records if r["outcome"] == "passed")[:FIXES])
    before = []
    for record in records:
        outcome = "passed" if record["item"] in regressed else "failed" if record["item"] in fixed else record["outcome"]
        before.append({k: record[k] for k in ("item", "property", "op", "variant", "dtype", "level")} |
                      {"outcome": outcome})
    baseline = write_run(results / BASELINE_ID, before, "2026-12-02T12:00:00+00:00")
    return run, baseline


# -- the tests --------------------------------------------------------------------------------------

# Size bounds for this run's report files (measured before issue 15 on the same run: scorecard 352 KB,
# HTML 404 KB, JUnit 998 KB; after: about 35 KB, 220 KB and 395 KB).
MAX_SCORECARD_BYTES, MAX_HTML_BYTES, MAX_JUNIT_BYTES = 60_000, 300_000, 540_000  # JUnit: 150 bytes a case of properties
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The synthetic run and its baseline, reported in every format (the baseline found automatically)."""
    from torchcts.report.render import write_report

    root = tmp_path_factory.mktemp("scale")
    run, baseline = write_synthetic_runs(root)
    written = write_report(run, baseline="auto", warn=pytest.fail)
    records = [json.loads(text) for text in (run / "records.jsonl").read_text().splitlines()]
    return {"run": run, "baseline": baseline, "records": records, "paths": written,
            "md": written["md"].read_text(), "html": written["html"].read_text(),
            "junit": ElementTree.parse(written["junit"]).getroot(), "json": json.loads(written["json"].read_text())}


def missing_by_overload(records):
    groups: dict[str, list[str]] = {}
    for r in records:
        if r.get("error_kind") == "missing_kernel":
            groups.setdefault(r["missing_kernel"]["overload"], []).append(r["item"])
    return groups


def test_missing_kernels_are_grouped_by_overload_most_items_first(synthetic):
    expected = missing_by_overload(synthetic["records"])
    data = synthetic["json"]["missing_kernels"]
    assert (data["distinct"], data["count"]) == (150, 300) == (len(expected), sum(map(len, expected.values())))
    counts = [g["count"] for g in data["groups"]]
    assert counts == sorted(counts, reverse=True) and counts[:3] == [18, 12, 9]
    assert {g["overload"]: g["item_ids"] for g in data["groups"]} == expected
    assert data["groups"][0]["overload"] == "aten::zero_" and data["groups"][0]["dispatch_key"] == "PrivateUse1"
    page = synthetic["html"]
    assert "<code>aten::zero_</code>: 18 items (PrivateUse1)</summary>" in page
    shown = re.findall(r'<details class="kernel"><summary><code>([^<]+)</code>', page)
    assert shown == [g["overload"] for g in data["groups"]]  # every overload, in the same order
    collapsed = page[page.index("120 more overloads (181 items)"):]  # past the first 30, one collapsed group
    assert shown[29] not in collapsed and shown[30] in collapsed
    assert "| `aten::zero_` | 18 | PrivateUse1 |" in synthetic["md"]
    table = re.findall(r"^\| `(aten::[^`]+)` \| (\d+) \|", synthetic["md"], re.M)
    assert [name for name, _ in table] == [g["overload"] for g in data["groups"]]
    assert "registered at" not in synthetic["md"] and "registered at" not in page


def test_junit_has_a_suite_per_missing_kernel(synthetic):
    junit = synthetic["junit"]
    suites = junit.findall("testsuite")
    missing = [s for s in suites if ".missing_kernel." in s.get("name")]
    assert suites[:150] == missing and missing[0].get("name") == "torchcts.tiny.missing_kernel.aten::zero_"
    assert [int(s.get("errors")) for s in missing][:3] == [18, 12, 9]
    case = missing[0].find("testcase")
    error = case.find("error")
    assert case.get("classname") == "torchcts.missing_kernel.aten::zero_" and error.get("type") == "missing_kernel"
    assert error.get("message") == "missing kernel aten::zero_ (PrivateUse1)"
    assert "registered at" not in error.text and "replay: torchcts replay" in error.text
    others = dict(synthetic["json"]["coverage"]["counts"])
    assert int(junit.get("errors")) == others["error"] + others["crashed"] + others["timed_out"] == 380
    assert int(junit.get("failures")) == others["failed"] == 120
    assert suites[-1].get("name") == "torchcts.tiny" and int(suites[-1].get("errors")) == 80
    assert int(junit.get("tests")) == 800
    assert len(synthetic["paths"]["junit"].read_bytes()) < MAX_JUNIT_BYTES


def test_regressions_come_first_then_missing_kernels_then_failures(synthetic):
    page, md = synthetic["html"], synthetic["md"]
    order = [page.index(f'id="{name}"') for name in ("regressions", "heatmap", "missing-kernels", "probes",
                                                      "failures-heading")]
    assert order == sorted(order)
    order = [md.index(heading) for heading in ("## Regressions", "## Dtype coverage", "## Missing kernels", "## Probes",
                                               "## Failures (")]
    assert order == sorted(order)
    assert "40 regressions (passed then, fail now), 5 fixes" in md and "20 more regressions</summary>" in page


def test_other_failures_are_ordered_grouped_and_paged(synthetic):
    page, md, data = synthetic["html"], synthetic["md"], synthetic["json"]
    assert len(data["failures"]) == 500  # the full list, missing kernels included
    blocks = re.findall(r'<div class="fail"><b><code>([^<]+)</code></b>: (\w+)( <span class="tag">regression)?', page)
    assert len(blocks) == 200 and all(tag for _, _, tag in blocks[:40]) and not any(tag for _, _, tag in blocks[40:])
    assert [outcome for _, outcome, _ in blocks[40:]] == sorted((o for _, o, _ in blocks[40:]),
                                                                 key=["failed", "crashed", "timed_out", "error"].index)
    first_page = page.index('<details class="page"><summary>failures 51 to 100 of 200</summary>')
    assert page[:first_page].count('<div class="fail">') - page[:page.index('id="failures"')].count(
        '<div class="fail">') == 50
    assert page.count('<details class="page"><summary>failures ') == math.ceil(150 / 50)
    assert sum(line.startswith("### ") for line in md.splitlines()) == 25
    assert "And 175 more failures: summary.json (`failures`)." in md
    by_op = data["failure_groups"]["by_op"]
    assert sum(g["count"] for g in by_op) == 200 and [g["count"] for g in by_op] == sorted(
        (g["count"] for g in by_op), reverse=True)
    by_message = data["failure_groups"]["by_message"]
    assert by_message[0]["count"] == max(g["count"] for g in by_message)


def test_dtype_matrix_shows_claimed_dtypes_and_colours_any_failure_red(synthetic):
    matrix = synthetic["json"]["dtype_matrix"]
    assert matrix["dtypes"] == ["float32"] and matrix["claimed"] == ["float32"]
    assert {d["dtype"]: d["count"] for d in matrix["unclaimed"]} == {dtype: 260 for dtype in UNCLAIMED}
    page = synthetic["html"]
    assert "Not claimed by the manifest (11 dtypes, their items not run): bfloat16 (260)," in page
    heat = page[page.index('id="heatmap"'):page.index("</table>", page.index('id="heatmap"'))]
    assert heat[:heat.index("</tr>")].count("<th>") == 2  # family, float32: no column per unclaimed dtype
    core = next(row for row in matrix["rows"] if row["family"] == "core")["cells"][0]
    ran = core["passed"] + core["problems"]
    assert f'<td class="bad" title="core float32">{core["passed"]} of {ran} passed (' in page
    assert f'<b>{core["problems"]} failing</b>' in page
    from torchcts.report.grouping import claimed_dtypes  # run.json without claimed_dtypes: from the outcomes
    assert claimed_dtypes({}, synthetic["records"]) == ["float32"]


def test_per_op_table_is_grouped_by_family_failing_ops_first(synthetic):
    ops = synthetic["json"]["ops"]
    assert [f["family"] for f in ops["families"]] == ["core", "linalg", "nn.functional", "special"]
    executed = {r["op"] for r in synthetic["records"] if r["outcome"] not in ("dtype_not_supported", "level_filtered")}
    assert {row["op"] for f in ops["families"] for row in f["rows"]} == executed
    for fam in ops["families"]:
        problems = [row["problems"] for row in fam["rows"]]
        assert problems == sorted(problems, reverse=True)
    assert synthetic["html"].count("<table class=\"ops\">") == 4 and "<summary><b>core</b>: 170 ops," in synthetic["html"]


def test_probes_and_hypothesis_settings_are_shown(synthetic):
    page, md = synthetic["html"], synthetic["md"]
    assert '<h2 id="probes">Probes: 1 of 7 failed</h2>' in page and "float32: copy to device fails" in page
    assert "- float32: copy to device fails: RuntimeError: tiny: no copy\\_" in md or \
        "- float32: copy to device fails: RuntimeError: tiny: no copy_" in md
    assert "profile <code>torchcts-release</code>" in page and "max_examples `20`" in md
    assert "300 of them on 150 missing kernels" in page and "300 of them on 150 missing kernels" in md


def test_report_sizes_are_bounded(synthetic):
    sizes = {name: path.stat().st_size for name, path in synthetic["paths"].items()}
    assert sizes["md"] < MAX_SCORECARD_BYTES and sizes["html"] < MAX_HTML_BYTES, sizes


def test_new_record_fields_of_the_wrong_type_are_named(tmp_path):
    from torchcts.report.data import ResultsError, load_run

    run = write_run(tmp_path / "results" / RUN_ID, [{**item("forward", "abs", "float32"), "outcome": "passed"}],
                    "2026-12-03T12:00:00+00:00")
    good = (run / "records.jsonl").read_text()
    for field, value in (("missing_kernel", "aten::zero_"), ("warnings", {"count": "3"}), ("error_line", 3),
                         ("missing_kernel", {"overload": None})):
        (run / "records.jsonl").write_text(good + json.dumps({**item("out", "abs", "float32"), "outcome": "error",
                                                              field: value}) + "\n")
        with pytest.raises(ResultsError, match=f"records.jsonl:2: field '{field}' must be"):
            load_run(run)
    (run / "records.jsonl").write_text(good)
    summary = json.loads((run / "run.json").read_text())
    for field, value in (("probes", {"total": 1, "failed": 0, "problems": [3]}), ("run_kind", "fuzz"),
                         ("hypothesis", [1])):
        (run / "run.json").write_text(json.dumps({**summary, field: value}))
        with pytest.raises(ResultsError, match=f"run.json: field '{field}' must be"):
            load_run(run)


def test_report_without_a_folder_picks_the_latest_run_that_executed_items(tmp_path):
    from torchcts.cli.main import cli

    results = tmp_path / "results"
    one = [{**item("forward", "abs", "float32"), "outcome": "passed"}]
    none = [{**item("forward", "abs", "float32"), "outcome": "deselected", "reason": "--ops leaves it out"}]
    run = write_run(results / "20261203T100000Z-000001", one, "2026-12-03T10:00:00+00:00")
    write_run(results / "20261203T110000Z-000002", one, "2026-12-03T11:00:00+00:00", run_kind="replay")
    write_run(results / "20261203T120000Z-000003", none, "2026-12-03T12:00:00+00:00", run_kind="collect_only")
    write_run(results / "20261203T130000Z-000004", none, "2026-12-03T13:00:00+00:00")  # selected nothing
    old_replay = write_run(results / "20261203T140000Z-000005", one, "2026-12-03T14:00:00+00:00")
    summary = json.loads((old_replay / "run.json").read_text())
    del summary["run_kind"]  # a folder from before run_kind: a replay says so in its environment
    (old_replay / "run.json").write_text(json.dumps({**summary, "environment": {**ENVIRONMENT, "replay": ["c.json"]}}))
    result = CliRunner().invoke(cli, ["report", "--results-dir", str(results), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert (run / "report" / "summary.json").exists() and f"reporting on {run}" in result.stderr
    assert not any((results / name / "report").exists() for name in os.listdir(results) if name != run.name)
    shutil.rmtree(run)
    result = CliRunner().invoke(cli, ["report", "--results-dir", str(results)])
    assert result.exit_code == 2
    assert "passed over: 1 collect_only, 1 executed no item, 2 replay" in result.stderr


def test_a_killed_run_with_executed_records_is_still_picked(tmp_path):
    from torchcts.report.latest import latest_run_folder

    run = write_run(tmp_path / RUN_ID, [{**item("forward", "abs", "float32"), "outcome": "failed"}],
                    "2026-12-03T12:00:00+00:00")
    summary = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**summary, "status": "running", "counts": {}, "executed": 0}))
    assert latest_run_folder(tmp_path) == (run, {})


MEASURE = """<script>
const ids = ["regressions", "heatmap", "missing-kernels", "probes", "failures-heading"];
const out = {scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth,
             bodyScrollWidth: document.body.scrollWidth, innerWidth: window.innerWidth,
             tops: Object.fromEntries(ids.map(i => [i, document.getElementById(i).getBoundingClientRect().top]))};
const pre = document.createElement("pre"); pre.id = "measured"; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>
"""


def chromium(tmp_path, *args):
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1366,768", *args], capture_output=True, text=True, timeout=600)  # a safety net only


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it where it can)")
def test_html_report_fits_a_laptop_screen_in_headless_chromium(synthetic, tmp_path):
    """The done-when check of issue 15: 500 failures at 1366x768, no horizontal overflow of the page,
    regressions before the failures. A copy of the page gets a script that writes what it measured."""
    measured = tmp_path / "measured.html"
    measured.write_text(synthetic["html"].replace("</body>", MEASURE + "</body>"))
    browser = chromium(tmp_path, "--dump-dom", measured.as_uri())
    found = re.search(r'<pre id="measured">([^<]*)</pre>', browser.stdout)
    assert found, browser.stderr[-2000:]
    numbers = json.loads(found.group(1))
    assert numbers["innerWidth"] == 1366
    assert numbers["scrollWidth"] <= numbers["clientWidth"], numbers  # nothing wider than the window
    tops = numbers["tops"]
    assert tops["regressions"] < tops["heatmap"] < tops["missing-kernels"] < tops["probes"] < tops["failures-heading"]
    shot = tmp_path / "report-1366.png"
    chromium(tmp_path, f"--screenshot={shot}", synthetic["paths"]["html"].as_uri())
    assert shot.exists() and shot.stat().st_size > 10_000


if __name__ == "__main__":
    print(*write_synthetic_runs(Path(sys.argv[1])))
