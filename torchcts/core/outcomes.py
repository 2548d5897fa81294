"""The one outcome vocabulary: every result record's `outcome` is an `Outcome`, in one of six groups.

Executed items pass, fail (the backend differs from the oracle), error (the backend raised where
the oracle did not), crash or time out. Every item that does not run says why, in the group its
reason belongs to: the manifest's policy (it does not claim the dtype or capability, or excludes
the op), coverage policy (above the semantic level the manifest claims), the run's selection, the
CPU contract (the oracle itself rejects or crashes on every case), or runtime availability (no
case can run on this target). Result files store the value (`"passed"`); docs/results.md lists
them. No torch: the report path imports this.
"""

from __future__ import annotations

import enum


class Group(str, enum.Enum):
    EXECUTED = "executed"
    MANIFEST_POLICY = "manifest policy"
    COVERAGE_POLICY = "coverage policy"
    SELECTION = "selection"
    CPU_CONTRACT = "CPU contract"
    RUNTIME_AVAILABILITY = "runtime availability"


class Outcome(str, enum.Enum):
    """One item's outcome; the value is what result files hold."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    CRASHED = "crashed"
    TIMED_OUT = "timed_out"
    DTYPE_NOT_SUPPORTED = "dtype_not_supported"
    DTYPE_REGEX_FILTERED = "dtype_regex_filtered"
    DTYPE_NOT_LISTED = "dtype_not_listed"
    CAPABILITY_NOT_DECLARED = "capability_not_declared"
    OP_EXCLUDED = "op_excluded"
    LEVEL_FILTERED = "level_filtered"
    DESELECTED = "deselected"
    CPU_CONTRACT = "cpu_contract"
    RUNTIME_UNAVAILABLE = "runtime_unavailable"

    def __str__(self) -> str:  # f-strings and JSON show the value, as result files hold it
        return self.value

    @property
    def group(self) -> Group:
        return GROUP_OF[self]

    @property
    def executed(self) -> bool:
        return self.group is Group.EXECUTED

    @property
    def problem(self) -> bool:
        """Whether the item ran and the backend did not conform (a finding)."""
        return self in PROBLEMS


GROUPS: dict[Group, tuple[Outcome, ...]] = {
    Group.EXECUTED: (Outcome.PASSED, Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMED_OUT),
    Group.MANIFEST_POLICY: (Outcome.DTYPE_NOT_SUPPORTED, Outcome.DTYPE_REGEX_FILTERED, Outcome.DTYPE_NOT_LISTED,
                            Outcome.CAPABILITY_NOT_DECLARED, Outcome.OP_EXCLUDED),
    Group.COVERAGE_POLICY: (Outcome.LEVEL_FILTERED,),
    Group.SELECTION: (Outcome.DESELECTED,),
    Group.CPU_CONTRACT: (Outcome.CPU_CONTRACT,),
    Group.RUNTIME_AVAILABILITY: (Outcome.RUNTIME_UNAVAILABLE,),
}
GROUP_OF: dict[Outcome, Group] = {outcome: group for group, members in GROUPS.items() for outcome in members}
PROBLEMS: tuple[Outcome, ...] = (Outcome.FAILED, Outcome.ERROR, Outcome.CRASHED, Outcome.TIMED_OUT)
EXECUTED: tuple[Outcome, ...] = GROUPS[Group.EXECUTED]
NOT_RUN: tuple[Outcome, ...] = tuple(o for o in Outcome if o not in EXECUTED)
VALUES: frozenset[str] = frozenset(o.value for o in Outcome)


def parse(value: object) -> Outcome | None:
    """The outcome a result file's string names, or None for anything else (files are untrusted)."""
    return Outcome(value) if isinstance(value, str) and value in VALUES else None
