"""The report's views of many items at once: the dtype matrix of claimed dtypes, the per-op table,
missing kernels grouped by overload, and the other failures grouped by op and by error line.

A backend in development fails hundreds of items, most of them for a few hundred missing kernels;
these views keep a report readable at that size (docs/reports.md). Plain dicts and lists, like the
rest of `report.data`; no torch.
"""

from __future__ import annotations

import collections
from typing import Any

from torchcts.core.outcomes import EXECUTED, PROBLEMS, Outcome
from torchcts.core.probe_skips import missing_overloads
from torchcts.report.causes import cause_key

PASSED = Outcome.PASSED.value
EXECUTED_VALUES = frozenset(o.value for o in EXECUTED)
PROBLEM_VALUES = frozenset(o.value for o in PROBLEMS)
# dtypes with only these outcomes are not claimed by the manifest (for runs whose run.json predates claimed_dtypes)
UNCLAIMED_VALUES = frozenset((Outcome.DTYPE_NOT_SUPPORTED.value, Outcome.DTYPE_NOT_LISTED.value))
DESELECTED = Outcome.DESELECTED.value
OP_EXCLUDED = Outcome.OP_EXCLUDED.value
MISSING_KERNEL = "missing_kernel"  # a record's error_kind for an error from a kernel the backend lacks
UNNAMED_OVERLOAD = "(overload not named)"  # a missing-kernel record without its `missing_kernel` field
FAMILIES = ("nn.functional", "linalg", "fft", "special", "sparse", "masked", "signal", "_refs", "nn")
SCENARIO = "scenario"  # the variant of a scenario item (plan.registry): its op is a scenario's name, not an OpInfo
MAX_FINDINGS = 20  # device findings read from run.json (one is known today)
MAX_FINDING_TEXT = 600  # characters of a finding's summary, symptom or fix shown
MAX_VARIANTS_COUNTED = 1000  # distinct printed lines counted per cause group (a bound, not a limit on items)
# The order failures are shown in: wrong values first (silent in a user's program), then crashes and hangs.
OUTCOME_ORDER = {name: rank for rank, name in enumerate(("failed", "crashed", "timed_out", "error"))}


def family(op: str) -> str:
    """The op family of an OpInfo id: its namespace (`linalg`, `nn.functional`, ...) or `core`."""
    for name in FAMILIES:
        if op.startswith(name + "."):
            return name
    return "core"


def row_family(record: dict[str, Any]) -> str:
    return "scenarios" if record.get("variant") == SCENARIO else family(record["op"])


def is_missing_kernel(record: dict[str, Any]) -> bool:
    return record["outcome"] in PROBLEM_VALUES and record.get("error_kind") == MISSING_KERNEL


def claimed_dtypes(environment: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
    """The dtypes the manifest claims: run.json's `claimed_dtypes`, or (older runs) every dtype with an
    item the manifest's dtype claims did not rule out."""
    claimed = environment.get("claimed_dtypes")
    if claimed is not None:
        return sorted(set(claimed))
    return sorted({r["dtype"] for r in records if r["outcome"] not in UNCLAIMED_VALUES})


def dtype_matrix(records: list[dict[str, Any]], claimed: list[str]) -> dict[str, Any]:
    """Op family x dtype over the claimed dtypes: executed items, passed, problems, and not run.

    Columns: the claimed dtypes the run selected, and any other dtype with an executed item. The
    rest are summarised: `unclaimed` (with the items not run for them) and `not_selected` (claimed,
    but every item deselected, e.g. by --dtype). Rows: the families with an executed item in those
    columns; the others are named in `families_not_executed` (all of them when nothing executed)."""
    cells: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    per_dtype: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in records:
        outcome = r["outcome"]
        kind = "passed" if outcome == PASSED else "problems" if outcome in PROBLEM_VALUES else "not_run"
        cells[(row_family(r), r["dtype"])][kind] += 1
        per_dtype[r["dtype"]]["deselected" if outcome == DESELECTED else kind] += 1
    claimed_set = set(claimed)

    def shown(dtype: str) -> bool:
        counts = per_dtype[dtype]
        executed = counts["passed"] + counts["problems"]
        return executed > 0 or (dtype in claimed_set and counts["not_run"] > 0)

    dtypes = sorted(d for d in per_dtype if shown(d))
    present = {f for f, d in cells if d in dtypes}
    executed = {f for (f, d), c in cells.items() if d in dtypes and c["passed"] + c["problems"]}
    families = sorted(executed or present, key=lambda f: (f != "core", f))
    rows = []
    for name in families:
        row = []
        for dtype in dtypes:
            cell = cells.get((name, dtype), collections.Counter())
            run = cell["passed"] + cell["problems"]
            row.append({"dtype": dtype, "passed": cell["passed"], "problems": cell["problems"],
                        "not_run": cell["not_run"], "pass_rate": round(cell["passed"] / run, 4) if run else None})
        rows.append({"family": name, "cells": row})
    hidden = sorted(d for d in per_dtype if d not in dtypes)
    return {"dtypes": dtypes, "rows": rows, "claimed": sorted(claimed_set),
            "families_not_executed": sorted(present - set(families), key=lambda f: (f != "core", f)),
            "unclaimed": [{"dtype": d, "count": sum(per_dtype[d].values())} for d in hidden if d not in claimed_set],
            "not_selected": [{"dtype": d, "count": sum(per_dtype[d].values())} for d in hidden if d in claimed_set]}


def op_table(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per op with an executed item: items executed, passed, failing (missing kernels among them),
    not run; grouped by family, failing ops first. Ops with nothing executed are only counted."""
    ops: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    families: dict[str, str] = {}
    for r in records:
        counter = ops[r["op"]]
        families.setdefault(r["op"], row_family(r))
        outcome = r["outcome"]
        if outcome in EXECUTED_VALUES:
            counter["executed"] += 1
            counter["passed" if outcome == PASSED else "problems"] += 1
            counter["missing_kernels"] += is_missing_kernel(r)
        else:
            counter["not_run"] += 1
    groups: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for op, c in ops.items():
        if c["executed"]:
            groups[families[op]].append({"op": op, "executed": c["executed"], "passed": c["passed"],
                                         "problems": c["problems"], "missing_kernels": c["missing_kernels"],
                                         "not_run": c["not_run"], "pass_rate": round(c["passed"] / c["executed"], 4)})
    result = []
    for name in sorted(groups, key=lambda f: (f != "core", f)):
        rows = sorted(groups[name], key=lambda row: (-row["problems"], row["pass_rate"], row["op"]))
        result.append({"family": name, "ops": len(rows), "failing_ops": sum(1 for row in rows if row["problems"]),
                       "rows": rows})
    return {"families": result, "ops_not_executed": sum(1 for c in ops.values() if not c["executed"])}


def missing_kernel_groups(failures: list[dict[str, Any]]) -> dict[str, Any]:
    """The failures from a missing kernel, one group per aten overload, most items first."""
    groups: dict[str, dict[str, Any]] = {}
    for f in failures:
        if f["error_kind"] != MISSING_KERNEL:
            continue
        kernel = f.get("missing_kernel") or {}
        overload = kernel.get("overload") or UNNAMED_OVERLOAD
        group = groups.setdefault(overload, {"overload": overload, "dispatch_keys": set(), "count": 0,
                                             "item_ids": [], "ops": set(), "replay": None})
        if kernel.get("dispatch_key"):
            group["dispatch_keys"].add(kernel["dispatch_key"])
        group["count"] += 1
        group["item_ids"].append(f["item"])
        group["ops"].add(f["op"])
        group["replay"] = group["replay"] or f["replay"]
    ordered = sorted(groups.values(), key=lambda g: (-g["count"], g["overload"]))
    for group in ordered:
        keys = sorted(group.pop("dispatch_keys"))
        group["dispatch_key"] = ", ".join(keys) if keys else None
        group["ops"] = sorted(group["ops"])
    return {"distinct": len(ordered), "count": sum(g["count"] for g in ordered), "groups": ordered}


def finding_groups(described: Any, failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The device findings of a run (run.json `environment.findings`, from its start probe: `engine.device_findings`),
    each with the failing items whose records point at it (`finding`), most items first. A finding run.json does
    not describe (a record from another run's shard) is shown by its id. Bounded: run.json is untrusted."""
    groups: dict[str, dict[str, Any]] = {}
    for entry in (described if isinstance(described, list) else [])[:MAX_FINDINGS]:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            texts = {key: str(entry.get(key) or "")[:MAX_FINDING_TEXT] for key in ("summary", "symptom", "fix")}
            groups.setdefault(entry["id"][:100], {"id": entry["id"][:100], **texts, "count": 0, "ops": set(),
                                                  "item_ids": []})
    for f in failures:
        finding = f.get("finding")
        if not finding:
            continue
        group = groups.get(finding)
        if group is None and len(groups) < MAX_FINDINGS * 2:
            group = groups.setdefault(finding, {"id": finding, "summary": f"{finding} (not described in run.json)",
                                                "symptom": "", "fix": "", "count": 0, "ops": set(), "item_ids": []})
        if group is None:
            continue
        group["count"] += 1
        group["ops"].add(f["op"])
        group["item_ids"].append(f["item"])
    ordered = sorted(groups.values(), key=lambda g: (-g["count"], g["id"]))
    for group in ordered:
        group["ops"] = sorted(group["ops"])
    return ordered


def skipped_missing_kernels(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The missing kernels a probe found and moved out of the run: items `op_excluded` by a skip_ops reason
    `init --probe` wrote ("no kernel for aten::X, ..."), one group per overload with the ops it blocks, most
    items first. They are not supported, whatever the pass rate of what ran says."""
    groups: dict[str, dict[str, Any]] = {}
    items = 0
    for record in records:
        if record["outcome"] != OP_EXCLUDED:
            continue
        overloads = missing_overloads(record.get("reason"))
        items += bool(overloads)
        for overload in overloads:
            group = groups.setdefault(overload, {"overload": overload, "count": 0, "ops": set()})
            group["count"] += 1
            group["ops"].add(record["op"])
    ordered = sorted(groups.values(), key=lambda g: (-g["count"], g["overload"]))
    for group in ordered:
        group["ops"] = sorted(group["ops"])
    return {"distinct": len(ordered), "items": items, "ops": len({op for g in ordered for op in g["ops"]}),
            "groups": ordered}


def other_failures(failures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failures that are neither missing kernels nor symptoms of a device finding (`finding_groups`), in the
    order a reader wants them: regressions first, then wrong values, crashes, hangs, errors; by op within each."""
    others = [f for f in failures if f["error_kind"] != MISSING_KERNEL and not f.get("finding")]
    return sorted(others, key=lambda f: (not f.get("regression"), OUTCOME_ORDER.get(f["outcome"], 9), f["op"],
                                         f["item"]))


def leg_fields(record: dict[str, Any]) -> dict[str, Any]:
    """A compiled failure's blame as the report shows it (`engine.blame`): the leg, the legs tried in one line
    (`eager static: passed, ...`), and why no leg is named; None and "" for a record without one."""
    leg, legs, reason = record.get("leg"), record.get("legs"), record.get("leg_reason")
    tried = [f"{str(one.get('backend'))[:80]} {str(one.get('shape_mode'))[:12]}: {str(one.get('outcome'))[:20]}"
             for one in (legs if isinstance(legs, list) else [])[:8] if isinstance(one, dict)]
    return {"leg": leg[:40] if isinstance(leg, str) and leg else None, "legs": ", ".join(tried),
            "leg_reason": reason[:300] if isinstance(reason, str) else ""}


def failure_groups(others: list[dict[str, Any]]) -> dict[str, Any]:
    """The other failures counted per op and per cause (their first meaningful line with its volatile parts replaced,
    `causes.cause_key`: one group for lines that differ only in C++ line numbers, addresses, ids or temp paths;
    `message` is the group's first line as printed, `variants` how many distinct lines it holds), largest first;
    and per blamed leg (`by_leg`, empty when no failure carries one: an eager run)."""
    by_op: dict[str, dict[str, Any]] = {}
    by_line: dict[str, dict[str, Any]] = {}
    by_leg: collections.Counter[str] = collections.Counter(f["leg"] for f in others if f.get("leg"))
    for f in others:
        op = by_op.setdefault(f["op"], {"op": f["op"], "count": 0, "outcomes": collections.Counter(),
                                        "message": f["message"]})
        op["count"] += 1
        op["outcomes"][f["outcome"]] += 1
        cause = cause_key(f["message"])
        line = by_line.setdefault(cause, {"message": f["message"], "cause": cause, "count": 0, "ops": set(),
                                          "variants": set(), "first_item": f["item"]})
        line["count"] += 1
        line["ops"].add(f["op"])
        if len(line["variants"]) <= MAX_VARIANTS_COUNTED:
            line["variants"].add(f["message"])
    ops = sorted(by_op.values(), key=lambda g: (-g["count"], g["op"]))
    for group in ops:
        group["outcomes"] = dict(sorted(group["outcomes"].items()))
    lines = sorted(by_line.values(), key=lambda g: (-g["count"], g["cause"]))
    for group in lines:
        group["ops"] = len(group["ops"])
        group["variants"] = len(group["variants"])
    legs = [{"leg": leg, "count": count} for leg, count in sorted(by_leg.items(), key=lambda e: (-e[1], e[0]))]
    return {"by_op": ops, "by_message": lines, "by_leg": legs}


def warning_totals(records: list[dict[str, Any]]) -> dict[str, int]:
    """Python warnings raised while items ran (the records keep each item's distinct messages)."""
    with_warnings = [r["warnings"] for r in records if r.get("warnings")]
    return {"with_warnings": len(with_warnings), "count": sum(w["count"] for w in with_warnings)}


def case_evidence(records: list[dict[str, Any]], limit: int = 1000) -> dict[str, Any]:
    """What the executed items' cases are worth: distinct cases (`distinct_cases`) against the example budget
    (`max_examples`). An item drawing the same case again, or an op with fewer cases than the budget, ran fewer
    distinct cases than its budget suggests; a passed one of those is `short` evidence. Records older than the
    fields are `unknown` (not 0); items whose cases are a fixed list (error inputs, replays) have no budget.
    `short_items`: the first `limit` short passed items, fewest distinct cases first."""
    executed = [r for r in records if r["outcome"] in EXECUTED_VALUES]
    known = [r for r in executed if isinstance(r.get("distinct_cases"), int)]
    budgeted = [r for r in known if isinstance(r.get("max_examples"), int)]
    short = [r for r in budgeted if r["distinct_cases"] < r["max_examples"]]
    passed = [r for r in budgeted if r["outcome"] == PASSED]
    short_passed = sorted((r for r in short if r["outcome"] == PASSED),
                          key=lambda r: (r["distinct_cases"] / max(r["max_examples"], 1), r["item"]))
    return {"executed": len(executed), "unknown": len(executed) - len(known), "fixed_lists": len(known) - len(budgeted),
            "budgeted": len(budgeted), "short": len(short), "passed_budgeted": len(passed),
            "short_passed": len(short_passed),
            "passed_distinct": sum(r["distinct_cases"] for r in passed),
            "passed_budget": sum(r["max_examples"] for r in passed),
            "short_items": [case_pair(r) for r in short_passed[:limit]]}


def case_pair(record: dict[str, Any]) -> dict[str, Any]:
    """An item's distinct cases and example budget as the report shows them: `text` is "3 distinct of 10
    examples budgeted" (with the cases run when they differ from the budget), "distinct cases unknown" for a
    record older than the field, "4 distinct cases (a fixed list, no example budget)" for an item with none."""
    distinct, budget, run = record.get("distinct_cases"), record.get("max_examples"), record.get("examples")
    if not isinstance(distinct, int):
        text = "distinct cases unknown"
    elif not isinstance(budget, int):
        text = f"{distinct} distinct case{'s' if distinct != 1 else ''} (a fixed list, no example budget)"
    else:
        ran = f"; {run} run, shrinking included" if isinstance(run, int) and run > budget else \
            f"; {run} run" if isinstance(run, int) and run < budget else ""
        text = f"{distinct} distinct of {budget} examples budgeted{ran}"
    return {"item": record["item"], "outcome": record["outcome"], "distinct_cases": distinct, "max_examples": budget,
            "examples": run, "short": isinstance(distinct, int) and isinstance(budget, int) and distinct < budget,
            "text": text}
