"""What a report says, computed from a run's saved files alone (`run.json`, `records.jsonl`, corpus cases).

No torch, no op database, no plugin: a report of any saved run can be made anywhere, fast. The
sections are plain dicts and lists that the templates (`templates/`) lay out and that
`summary.json` carries as they are. Outcomes are counted by `torchcts.core.outcomes` (values and groups);
the capability table is built from what run.json says each property proves, so a property the
report has never heard of (a custom suite's) is counted under its capability like any other.
"""

from __future__ import annotations

import collections
import datetime
import json
import os
from pathlib import Path
from typing import Any

from torchcts.core.outcomes import EXECUTED, GROUPS, PROBLEMS, Group, Outcome
from torchcts.report import grouping
from torchcts.report.failures import failure_entries
from torchcts.results.files import RUN_KINDS, ResultFileError, read_records, read_summary
from torchcts.results.history import Warn, comparable_runs, warn_on_stderr


def _coverage_groups() -> dict[str, tuple[Outcome, ...]]:
    """The rows of the operator coverage table: the outcome groups (`torchcts.core.outcomes.GROUPS`),
    with the executed group split into `passed` and the problems (failed, error, crashed, timed_out)."""
    rows: dict[str, tuple[Outcome, ...]] = {"passed": (Outcome.PASSED,), "failed or error": PROBLEMS}
    rows.update((group.value, members) for group, members in GROUPS.items() if group is not Group.EXECUTED)
    return rows


COVERAGE_GROUPS = _coverage_groups()
DESELECTED = GROUPS[Group.SELECTION] + GROUPS[Group.COVERAGE_POLICY]  # the levels table's "deselected" column
# Per-record tests use the plain values records hold (a report of 100,000 records: 0.37 s, 0.64 s with members)
PASSED = Outcome.PASSED.value
EXECUTED_VALUES, PROBLEM_VALUES, DESELECTED_VALUES = (frozenset(o.value for o in outcomes)
                                                      for outcomes in (EXECUTED, PROBLEMS, DESELECTED))
SUPPORT_THRESHOLD = 20  # a support percentage needs a complete run with at least this many executed items
MAX_PROBLEMS_SHOWN = 200  # probe problems and Hypothesis settings a report lists (run.json is untrusted)
MAX_TEXT = 500  # characters of one such line
ResultsError = ResultFileError  # a results file that cannot be reported on: which file (and line), what is wrong


def load_run(folder: Path | str) -> dict[str, Any]:
    """A run's validated summary and records; ResultsError names the missing or malformed file."""
    folder = Path(folder)
    if not os.path.lexists(folder / "run.json"):
        raise ResultsError(folder / "run.json", f"missing; is {folder} a run folder (results/<run-id>/)?")
    summary = read_summary(folder)
    return {"folder": str(folder), "summary": summary, "records": read_records(folder)}


def find_baseline(results_dir: Path | str, run: dict[str, Any], warn: Warn = warn_on_stderr) -> dict[str, Any] | None:
    """The latest earlier run with the same hardware key, device and torch minor version.

    An earlier run that cannot be read is skipped with one `warn`; the next latest is taken."""
    started = run["summary"].get("started") or ""
    earlier = comparable_runs(results_dir, run["summary"]["environment"], exclude=run["folder"], warn=warn)
    candidates = [(summary.get("started") or "", folder) for folder, summary in earlier
                  if is_conformance_run(summary) and (summary.get("started") or "") < started]
    for _, folder in sorted(candidates, reverse=True):
        try:
            return load_run(folder)
        except ResultFileError as exc:
            warn(f"baseline skipped: {exc}")
    return None


def is_conformance_run(summary: dict[str, Any]) -> bool:
    """A run that drew cases (run_kind "run", or absent in older folders that are not a replay):
    not a corpus replay, not a collect-only session. Only these are baselines and default reports."""
    kind = summary.get("run_kind")
    if kind is not None:
        return kind == RUN_KINDS[0]
    return summary["environment"].get("replay") is None


def build_report(run: dict[str, Any], baseline: dict[str, Any] | None = None,
                 warn: Warn = warn_on_stderr, corpus_dir: Path | str | None = None) -> dict[str, Any]:
    """Every section of a report, as data (from a run `load_run` validated).

    A record's case path is read only inside the run's folders, the default corpus folders and
    `corpus_dir` (`untrusted_paths.case_folders`); at most `failures.MAX_PATH_WARNINGS` refusals are warned, then
    one line counts the rest (each failure's entry says why its case was not read).

    `failures` lists every failing item (summary.json carries the full list); `missing_kernels`
    and `failure_groups` are the grouped views the scorecard, HTML and JUnit lead with."""
    summary, records = run["summary"], run["records"]
    env = summary["environment"]
    counts = collections.Counter(r["outcome"] for r in records)
    executed = sum(counts[o] for o in EXECUTED)
    complete = summary.get("status") == "complete"
    support = None
    if complete and executed >= SUPPORT_THRESHOLD:
        support = round(100.0 * counts[Outcome.PASSED] / executed, 2)
    # claimed at this run's depth: not left out by the manifest (dtypes, capabilities, skip_ops) nor by the depth
    claimed = len(records) - sum(counts[o] for o in GROUPS[Group.MANIFEST_POLICY] + GROUPS[Group.COVERAGE_POLICY])
    compared = _baseline(records, baseline) if baseline is not None else None
    regressed = {b["item"] for b in compared["regressions"]} if compared else set()
    failures = failure_entries(records, Path(run["folder"]), warn, regressed, corpus_dir)
    others = grouping.other_failures(failures)
    return {
        "run": _run_section(run),
        "coverage": {
            "groups": [{"name": name, "outcomes": [o.value for o in outcomes],
                        "count": sum(counts[o] for o in outcomes)} for name, outcomes in COVERAGE_GROUPS.items()],
            "total_items": len(records), "executed": executed, "complete": complete,
            "passed": counts[Outcome.PASSED], "problems": sum(counts[o] for o in PROBLEMS),
            "support_percent": support, "support_threshold": SUPPORT_THRESHOLD,
            # the share of the operator matrix (every item the plan considered) the manifest claims: a pass rate
            # of a few claimed items must never read as the backend's support of the whole surface
            "claimed_items": claimed,  # a replay has no operator matrix: no share
            "claimed_percent": round(100.0 * claimed / len(records), 2)
            if records and summary.get("run_kind") in (None, RUN_KINDS[0]) else None,
            "claimed_not_selected": sum(counts[o] for o in GROUPS[Group.SELECTION]),
            "counts": dict(sorted(counts.items())),
            "ops_executed": len({r["op"] for r in records if r["outcome"] in EXECUTED_VALUES}),
            "ops_all_passed": len(_ops_all_passed(records)),
        },
        "capabilities": _capabilities(env, records),
        "dtype_matrix": grouping.dtype_matrix(records, grouping.claimed_dtypes(env, records)),
        "ops": grouping.op_table(records),
        "levels": _levels(records),
        "probes": _probes(summary),
        "warnings": grouping.warning_totals(records),
        "case_evidence": grouping.case_evidence(records),
        "missing_kernels": {**grouping.missing_kernel_groups(failures),
                            "skipped": grouping.skipped_missing_kernels(records)},  # found by a probe: skip_ops
        "failure_groups": grouping.failure_groups(others),
        "findings": grouping.finding_groups(env.get("findings"), failures),  # device defects, their items under them
        "failures": failures,
        "baseline": compared,
    }


def _run_section(run: dict[str, Any]) -> dict[str, Any]:
    summary = run["summary"]
    env = summary["environment"]
    duration = None
    try:
        duration = (datetime.datetime.fromisoformat(summary["finished"]) -
                    datetime.datetime.fromisoformat(summary["started"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        pass
    backend = (env.get("device") or "?") + (f" under torch.compile({env['compile']})" if env.get("compile") else "")
    return {"folder": run["folder"], "run_id": summary.get("run_id"), "status": summary.get("status"),
            "backend": backend, "device": env.get("device"), "hardware_key": env.get("hardware_key"),
            "torch": env.get("torch"), "torchcts": env.get("torchcts"), "hypothesis": env.get("hypothesis"),
            "python": env.get("python"), "started": summary.get("started"), "duration_s": duration,
            "seed": env.get("seed"), "derandomize": env.get("derandomize"), "manifest": env.get("manifest"),
            "manifest_hash": env.get("manifest_hash"), "level": env.get("level"),
            "validation": env.get("validation"), "selection": env.get("selection"),
            "run_kind": summary.get("run_kind"), "hypothesis_settings": _settings(summary.get("hypothesis")),
            "claims": _claims(env.get("claims")), **_shards(summary)}


def _claims(claims: dict[str, Any] | None) -> dict[str, Any] | None:
    """run.json's `claims` when the run tested other claims than the manifest file's (`--dtype`, `--level`): both
    fingerprints and what the command line changed, as text; None when the run tested the file's claims."""
    if not claims or not claims["differs_from_manifest"]:
        return None
    level = claims["level"]
    changes = [f"--dtype claims {str(name)[:64]} for every op (the manifest: {str(said)[:MAX_TEXT]})"
               for name, said in list(claims["dtypes_added_by_command_line"].items())[:MAX_PROBLEMS_SHOWN]]
    if level["source"] == "--level" and level["depth"] != level["manifest"]:
        changes.append(f"--level {level['depth']} sets the run's depth (the manifest's semantic_level: "
                       f"{level['manifest']})")
    return {"changes": changes, "manifest_hash": (claims["manifest_hash"] or "")[:64],
            "effective_manifest_hash": (claims["effective_manifest_hash"] or "")[:64],
            "added_dtypes": sorted(str(n)[:64] for n in claims["dtypes_added_by_command_line"])}


def _shards(summary: dict[str, Any]) -> dict[str, Any]:
    """`shards`: how the run was split (`torchcts run --shard`, `torchcts report --merge`) as one line, or None;
    `missing_shards`: the shards a merged run lacks."""
    merged = summary.get("merged")
    if merged is not None:
        joined = ", ".join(str(s["shard"]) for s in merged["shards"][:MAX_PROBLEMS_SHOWN])
        missing = [int(k) for k in merged["missing"][:MAX_PROBLEMS_SHOWN]]
        text = f"merged from shards {joined} of {merged['shard_count']}"
        if missing:
            text += f"; missing shards: {', '.join(map(str, missing))} (their items are recorded deselected)"
        return {"shards": text, "missing_shards": missing}
    shard = summary["environment"].get("shard")
    if shard:
        return {"shards": f"shard {shard[:MAX_TEXT]} (the other shards' items are recorded deselected)",
                "missing_shards": []}
    return {"shards": None, "missing_shards": []}


def _settings(settings: dict[str, Any] | None) -> list[dict[str, str]] | None:
    """run.json's Hypothesis settings as name/value text (values of any JSON type, shown bounded)."""
    if settings is None:
        return None
    return [{"name": str(name)[:100], "value": (value if isinstance(value, str) else json.dumps(value))[:MAX_TEXT]}
            for name, value in list(settings.items())[:MAX_PROBLEMS_SHOWN]]


def _probes(summary: dict[str, Any]) -> dict[str, Any] | None:
    """run.json's probe summary: how many probes ran and failed, and the problems they found."""
    probes = summary.get("probes")
    if probes is None:
        return None
    problems = probes["problems"]
    return {"total": probes["total"], "failed": probes["failed"],
            "problems": [" ".join(p.split())[:MAX_TEXT] for p in problems[:MAX_PROBLEMS_SHOWN]],
            "more_problems": max(0, len(problems) - MAX_PROBLEMS_SHOWN)}


def _ops_all_passed(records: list[dict[str, Any]]) -> set[str]:
    by_op: dict[str, set[str]] = collections.defaultdict(set)
    for r in records:
        if r["outcome"] in EXECUTED_VALUES:
            by_op[r["op"]].add(r["outcome"])
    return {op for op, outcomes in by_op.items() if outcomes == {PASSED}}


def _capabilities(env: dict[str, Any], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every capability the manifest declares, with the items of the properties that test it."""
    tested_by = env.get("property_capabilities") or {}
    also = env.get("capability_also_tested_by") or {}
    result = []
    for capability in env.get("capabilities") or []:
        properties = sorted({p for p, c in tested_by.items() if c == capability} | set(also.get(capability, ())))
        mine = [r for r in records if r["property"] in properties]
        counts = collections.Counter(r["outcome"] for r in mine)
        executed = sum(counts[o] for o in EXECUTED)
        if not properties:
            verdict = "declared; no property tests it yet"
        elif not executed:
            verdict = "declared; nothing executed"
        elif any(counts[o] for o in PROBLEMS):
            verdict = "failing"
        else:
            verdict = "passing"
        result.append({"capability": capability, "properties": properties, "executed": executed,
                       "passed": counts[Outcome.PASSED], "problems": sum(counts[o] for o in PROBLEMS),
                       "verdict": verdict})
    return result


def _levels(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per semantic level: items collected, executed, passed, with problems, deselected, not run otherwise."""
    levels: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in records:
        counter = levels[r["level"]]
        counter["collected"] += 1
        outcome = r["outcome"]
        if outcome in EXECUTED_VALUES:
            counter["executed"] += 1
            counter["passed" if outcome == PASSED else "problems"] += 1
        elif outcome in DESELECTED_VALUES:
            counter["deselected"] += 1
        else:
            counter["other_not_run"] += 1
    return [{"level": level, **{k: c[k] for k in ("collected", "executed", "passed", "problems", "deselected",
                                                   "other_not_run")}}
            for level, c in sorted(levels.items())]


def _baseline(records: list[dict[str, Any]], baseline: dict[str, Any]) -> dict[str, Any]:
    """Items that passed in the baseline and fail now, and the reverse."""
    before = {r["item"]: r["outcome"] for r in baseline["records"]}
    regressions, fixes = [], []
    for r in records:
        then = before.get(r["item"])
        if then == PASSED and r["outcome"] in PROBLEM_VALUES:
            regressions.append({"item": r["item"], "then": then, "now": r["outcome"]})
        elif then in PROBLEM_VALUES and r["outcome"] == PASSED:
            fixes.append({"item": r["item"], "then": then, "now": r["outcome"]})
    return {"folder": baseline["folder"], "run_id": baseline["summary"].get("run_id"),
            "started": baseline["summary"].get("started"), "regressions": regressions, "fixes": fixes}
