"""`torchcts report`: the scorecard (Markdown), a self-contained HTML report, JUnit XML and a
summary JSON, regenerated from a saved run (`data`) with the templates in `templates/`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Callable

import jinja2

from torchcts.core.outcomes import EXECUTED, GROUPS, Group, Outcome
from torchcts.disk import write_atomic
from torchcts.report.data import build_report, find_baseline, load_run
from torchcts.report.grouping import MISSING_KERNEL, UNNAMED_OVERLOAD, case_pair, other_failures
from torchcts.results.history import Warn, warn_on_stderr

FORMATS = ("md", "html", "junit", "json")
_FILES = {"md": "scorecard.md", "html": "report.html", "junit": "junit.xml", "json": "summary.json"}
# attempted, not executable (the CPU contract, runtime availability): skipped in JUnit
_JUNIT_NOT_RUN = GROUPS[Group.CPU_CONTRACT] + GROUPS[Group.RUNTIME_AVAILABILITY]
# a JUnit test case's result, per outcome (the outcomes not here are not JUnit test cases)
_JUNIT_KIND = {**{o: "error" for o in EXECUTED}, Outcome.PASSED: "passed", Outcome.FAILED: "failure",
               **{o: "skipped" for o in _JUNIT_NOT_RUN}}
# How much of 500 failures a page shows: HTML failure blocks in full, then collapsed pages of them; the
# scorecard's detailed failures and the rows of its grouped tables (summary.json has every failure).
HTML_FIRST_FAILURES, HTML_FAILURE_PAGE, HTML_FIRST_REGRESSIONS, HTML_FIRST_KERNELS = 50, 50, 20, 30
HTML_SHORT_ITEMS = 200  # passed items with fewer distinct cases than their budget listed (summary.json: the first 1000)
SCORECARD_FAILURES, SCORECARD_ROWS, SCORECARD_KERNELS = 25, 25, 300

# Text from records and cases is untrusted: characters XML cannot carry (controls, lone surrogates,
# U+FFFE/U+FFFF) become U+FFFD in every format; HTML and XML are autoescaped; Markdown is escaped by
# `_markdown` so a value cannot open HTML, a link or a code span, or break a table row.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_MARKDOWN_ACTIVE = re.compile(r"([\\`\[\]<>|])")


def _printable(value: Any) -> Any:
    """`value` with unprintable characters replaced; its type (safe Markup, a code span) kept."""
    return type(value)(_UNPRINTABLE.sub("\ufffd", value)) if isinstance(value, str) else value


class _MarkdownCode(str):
    """A finished Markdown code span: `_markdown` leaves it as it is."""


def _markdown(value: Any) -> Any:
    """A value as inline Markdown text: one line, nothing active."""
    if isinstance(value, (_MarkdownCode, int, float)) or value is None:
        return value
    return _MARKDOWN_ACTIVE.sub(r"\\\1", " ".join(_UNPRINTABLE.sub("\ufffd", str(value)).splitlines()))


def _code(value: Any, table: bool = False) -> _MarkdownCode:
    """A value as a Markdown code span, fenced with more backticks than it holds (`table`: in a table row)."""
    text = " ".join(_UNPRINTABLE.sub("\ufffd", str(value)).splitlines())
    if table and "|" in text:  # GFM splits table cells on | even inside code spans: escaped text instead
        return _MarkdownCode(_markdown(text))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return _MarkdownCode(f"{fence}{pad}{text}{pad}{fence}")


def _environment(**options: Any) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("torchcts.report", "templates"),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=False,
                              **options)


_TEMPLATES = _environment(autoescape=lambda name: bool(name) and name.endswith((".html.jinja", ".xml.jinja")),
                          finalize=_printable)
_MARKDOWN = _environment(autoescape=False, finalize=_markdown)
_MARKDOWN.filters["code"] = _code


def write_report(folder: Path | str, *, output: Path | None = None, baseline: str = "auto",
                 results_dir: Path | None = None, formats: tuple[str, ...] = FORMATS,
                 warn: Warn = warn_on_stderr, coverage_audit: Path | None = None,
                 corpus_dir: Path | None = None,
                 coverage_html: Callable[[Path, Warn], str] | None = None) -> dict[str, Path]:
    """Write the report files of the run in `folder`; their paths by format (`corpus_dir`: a corpus outside the
    run's folders whose case files the records may name).

    `baseline`: "auto" (the latest earlier readable run with the same hardware key, device and
    torch minor version in the run's results folder; unreadable ones are skipped with a `warn`),
    "none", or a run folder. report.html gets a coverage section from `coverage_audit` (default: the
    results folder's coverage/audit.json, where `torchcts coverage audit` writes it), when it is there, rendered
    by `coverage_html(path, warn)` (the caller's `torchcts.coverage.summary.report_section`: reports import no
    coverage code); without one, no coverage section.
    ResultsError names a malformed file of the run or the explicit baseline; WriteError (`torchcts.disk`) an
    output file that cannot be written."""
    run = load_run(folder)
    if baseline == "none":
        base = None
    elif baseline == "auto":
        base = find_baseline(results_dir or Path(folder).parent, run, warn)
    else:
        base = load_run(baseline)
    report = build_report(run, base, warn, corpus_dir)
    output = Path(output) if output is not None else Path(folder) / "report"
    audit_path = coverage_audit or (results_dir or Path(folder).parent) / "coverage" / "audit.json"
    coverage = coverage_html(Path(audit_path), warn) if coverage_html is not None and "html" in formats else ""
    triage = triage_link(Path(folder), output)
    written = {}
    for name in formats:
        path = output / _FILES[name]
        text = _render(name, report, run, coverage, triage)
        write_atomic(path, text)  # WriteError names the file (a full disk: the files written before stay)
        written[name] = path
    return written


def triage_link(folder: Path, output: Path) -> str:
    """The link from the report folder to the run's `torchcts triage` (<run>/triage/triage.md), or "" when the
    run has not been triaged (docs/triage.md)."""
    from urllib.parse import quote

    triage = folder / "triage" / "triage.md"
    if not triage.is_file():
        return ""
    return quote(os.path.relpath(triage, output).replace(os.sep, "/"))


def _render(name: str, report: dict[str, Any], run: dict[str, Any], coverage: str = "", triage: str = "") -> str:
    if name == "json":
        return json.dumps(report, indent=1, sort_keys=True, default=str) + "\n"  # ensure_ascii: any str is safe
    helpers = {"duration": _duration, "heat": _heat, "percent": _percent, "others": other_failures(report["failures"])}
    if name == "md":
        return _MARKDOWN.get_template("scorecard.md.jinja").render(
            report=report, first=SCORECARD_FAILURES, rows=SCORECARD_ROWS, kernels=SCORECARD_KERNELS, triage=triage,
            **helpers)
    if name == "html":
        return _TEMPLATES.get_template("report.html.jinja").render(
            report=report, level_chart=_level_chart(report), first=HTML_FIRST_FAILURES, page=HTML_FAILURE_PAGE,
            first_regressions=HTML_FIRST_REGRESSIONS, first_kernels=HTML_FIRST_KERNELS, first_short=HTML_SHORT_ITEMS,
            coverage=coverage,
            triage=triage, **helpers)
    return _junit(report, run["records"])


def _junit(report: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """One test suite per missing kernel (its overload's items), most items first, then one of the other items."""
    regular: list[dict[str, Any]] = []
    missing: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record["outcome"] not in _JUNIT_KIND:  # executed or attempted: JUnit test cases
            continue
        case = _junit_case(record)
        if case["overload"] is None:
            regular.append(case)
        else:
            missing.setdefault(case["overload"], []).append(case)
    device = report["run"]["device"]
    suites = [_suite(f"torchcts.{device}.missing_kernel.{overload}", cases)
              for overload, cases in sorted(missing.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    suites.append({**_suite(f"torchcts.{device}", regular), "run": True})
    return _TEMPLATES.get_template("junit.xml.jinja").render(
        report=report, suites=suites, **{k: sum(s[k] for s in suites) for k in ("tests", "failures", "errors",
                                                                                   "skipped")})


def _suite(name: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "cases": cases, "run": False, "tests": len(cases),
            "failures": sum(c["kind"] == "failure" for c in cases),
            "errors": sum(c["kind"] == "error" for c in cases), "skipped": sum(c["kind"] == "skipped" for c in cases)}


def _junit_case(record: dict[str, Any]) -> dict[str, Any]:
    """A JUnit test case; a missing kernel's says which (its detail is the error's first line: the
    dispatcher's listing of where the op is registered stays in the record)."""
    error = record.get("error") or ""
    line = record.get("error_line") or next((text for text in error.splitlines() if text.strip()), "")
    replay = (record.get("counterexample") or {}).get("replay")
    case = {"item": record["item"], "classname": f"torchcts.{record['property']}", "outcome": record["outcome"],
            "type": record["outcome"], "kind": _JUNIT_KIND[record["outcome"]], "overload": None,
            "reason": record.get("reason", ""), "duration_s": record.get("duration_s"),
            "message": line[:300] if line else record.get("reason", ""),
            "detail": error + (f"\nreplay: {replay}" if replay else ""), "properties": _case_properties(record)}
    if case["kind"] == "error" and record.get("error_kind") == MISSING_KERNEL:
        kernel = record.get("missing_kernel") or {}
        overload = kernel.get("overload") or UNNAMED_OVERLOAD
        key = kernel.get("dispatch_key")
        case.update(overload=overload, classname=f"torchcts.missing_kernel.{overload}", type=MISSING_KERNEL,
                    message=f"missing kernel {overload}" + (f" ({key})" if key else ""),
                    detail=f"{line}\nitem: {record['item']}" + (f"\nreplay: {replay}" if replay else ""))
    return case


def _case_properties(record: dict[str, Any]) -> list[tuple[str, Any]]:
    """A test case's JUnit properties: its distinct cases and example budget (distinct cases `unknown` alone in a
    record older than `distinct_cases`; no budget for a fixed list of cases). The cases run stay in the record."""
    pair = case_pair(record)
    if pair["distinct_cases"] is None:
        return [("distinct_cases", "unknown")]
    budget = [("max_examples", pair["max_examples"])] if pair["max_examples"] is not None else []
    return [("distinct_cases", pair["distinct_cases"]), *budget]


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "duration unknown"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs} s" if minutes else f"{seconds:.1f} s"


def _heat(passed: int, problems: int) -> str:
    """A cell's class: `bad` (red) when any item in it failed, `good` (green) when every executed item
    passed, `none` (grey) when nothing executed. The pass rate is written in the cell as text."""
    return "bad" if problems else "good" if passed else "none"


def _percent(rate: float | None) -> str:
    """A pass rate as text: `97%`, never rounded up to 100% (or down to 0%) when it is not."""
    if rate is None:
        return "-"
    shown = round(100 * rate)
    if shown == 100 and rate < 1:
        return ">99%"
    if shown == 0 and rate > 0:
        return "<1%"
    return f"{shown}%"


def _level_chart(report: dict[str, Any]) -> str:
    """An inline SVG: one stacked bar per level (passed, failed or error, deselected, other not run)."""
    levels = report["levels"]
    parts = (("passed", "#6cbf6c"), ("problems", "#d9534f"), ("deselected", "#9db4d6"), ("other_not_run", "#cccccc"))
    width, bar, gap, left = 560, 22, 10, 60
    height = len(levels) * (bar + gap) + 30
    most = max((level["collected"] for level in levels), default=1) or 1
    rows = []
    for index, level in enumerate(levels):
        y, x = 10 + index * (bar + gap), left
        rows.append(f'<text x="0" y="{y + 16}">level {level["level"]}</text>')
        for key, colour in parts:
            w = (width - left - 10) * level[key] / most
            if w > 0:
                rows.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar}" fill="{colour}">'
                            f'<title>{key}: {level[key]}</title></rect>')
            x += w
    legend = "".join(f'<rect x="{left + i * 120}" y="{height - 14}" width="10" height="10" fill="{c}"/>'
                     f'<text x="{left + i * 120 + 14}" y="{height - 5}">{k.replace("_", " ")}</text>'
                     for i, (k, c) in enumerate(parts))
    return (f'<svg id="level-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-size="12" role="img" aria-label="outcomes per level">{"".join(rows)}{legend}</svg>')


