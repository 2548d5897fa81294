"""The one outcome vocabulary: docs/results.md names every outcome with its group, and the report's
coverage table counts every outcome exactly once, in the order docs/reports.md gives."""

from __future__ import annotations

import re
from pathlib import Path

from torchcts.core import outcomes
from torchcts.core.outcomes import GROUPS, Group, Outcome
from torchcts.report.data import COVERAGE_GROUPS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def outcome_table() -> list[tuple[str, str]]:
    """(outcome, group) of each row of docs/results.md's "Outcomes" table, in order."""
    section = (DOCS / "results.md").read_text().split("\n## Outcomes\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([a-z_0-9]+)` \| ([^|]+?) \|", section, flags=re.MULTILINE)


def test_results_doc_lists_every_outcome_with_its_group():
    assert outcome_table() == [(o.value, o.group.value) for o in Outcome]


def test_groups_partition_the_outcomes():
    members = [o for group in GROUPS.values() for o in group]
    assert sorted(members) == sorted(Outcome) and len(members) == len(set(members))
    assert set(GROUPS) == set(Group)
    assert set(outcomes.EXECUTED) | set(outcomes.NOT_RUN) == set(Outcome)
    assert set(outcomes.PROBLEMS) == set(outcomes.EXECUTED) - {Outcome.PASSED}


def test_report_coverage_rows_are_the_groups_with_executed_split():
    assert list(COVERAGE_GROUPS) == ["passed", "failed or error", "manifest policy", "coverage policy", "selection",
                                     "CPU contract", "runtime availability"]
    counted = [o for members in COVERAGE_GROUPS.values() for o in members]
    assert sorted(counted) == sorted(Outcome) and len(counted) == len(set(counted))
    for group in Group:
        if group is not Group.EXECUTED:
            assert COVERAGE_GROUPS[group.value] == GROUPS[group]


def test_parse_accepts_values_only():
    assert outcomes.parse("cpu_contract") is Outcome.CPU_CONTRACT
    for bad in ("CPU_CONTRACT", "Passed", "", None, 1, ["passed"], "skipped"):
        assert outcomes.parse(bad) is None
