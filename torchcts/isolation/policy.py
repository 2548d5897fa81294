"""Which items of a run execute in a forked child process, and why.

Whole items run isolated with `--subprocess-per-test`, when a backend rule of the known-crash
ledger matches them (`--known-segfault-policy isolate`), and when earlier runs on the same
hardware, device and torch minor version left crash or hang evidence (`--adaptive-isolation
auto`): `reason`. Items an oracle rule matches (torch's CPU kernel crashes or hangs on some of
their cases, on this torch version) run their cases -- every case, or those with the traits the
rule names (`crashes.traits`) -- in a forked child with the rule's per-case limit, and a crash
or hang of the CPU oracle is accounted `cpu_contract` with the rule's reason: `case_isolation`.
A process that is itself an isolated child never isolates again.

How an isolated item starts (`start_method`): a forked child where the device survives a fork, a
worker of the spawned pool (`isolation.spawn`) where it does not (CUDA, XPU, MPS, HPU, MTIA once
initialised); `--isolation-start fork|spawn` forces one.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from torchcts.crashes.ledger import BACKEND, ORACLE, CrashRule, matching_rule
from torchcts.isolation.fork import fork_safe, run_forked

DEFAULT_ITEM_TIMEOUT_S = 900.0
AUTO, FORK, SPAWN = "auto", "fork", "spawn"
START_METHODS = (AUTO, FORK, SPAWN)


@attrs.frozen
class CaseIsolation:
    """The item's crash-prone cases (`isolates`) run in a forked child; a crash or hang of the CPU oracle
    there is `cpu_contract` with `reason`. Where forking is impossible (`fork` False: the device does not
    survive it) those cases are not run at all: each is `cpu_contract` with the reason."""

    timeout_s: float  # per case
    reason: str  # the oracle rule's reason, for the cpu_contract record
    rule: str = ""  # the rule's name (file#index), for the record's `isolated` note
    cases: tuple[str, ...] | None = None  # the case traits the crash needs (crashes.traits); None: every case
    fork: bool = True

    def isolates(self, sample: Any) -> bool:
        """Whether a case (its SampleInput; a Case is read through `.sample`) is crash-prone: it runs in a
        forked child (or, without forking, not at all)."""
        if self.cases is None:
            return True
        from torchcts.crashes.traits import has_any  # torch: only a rule that names case traits reads a case

        return has_any(getattr(sample, "sample", sample), self.cases)

    def probe_runner(self) -> Callable[[Callable[[], None], Any], bool | None]:
        """A runner for `torchcts.strategies.probes.cpu_probes`: drawing runs the op on CPU (to validate a
        transformed case, to choose a size change), which for this item may crash or hang too, so a probe
        of a crash-prone sample runs in a forked child under the per-case limit (without forking, not at
        all). None: the child died or hung, or the probe was not run (the case is kept; its check
        accounts it)."""

        def runner(work: Callable[[], None], sample: Any) -> bool | None:
            if not self.isolates(sample):
                return _returns(work)
            if not self.fork:
                return None
            result = run_forked(lambda: _returns(work), self.timeout_s)
            return result.answer if result.status == "finished" else None

        return runner


def _returns(work: Callable[[], None]) -> bool:
    """True when `work()` returns, False when it raises (a probe the CPU rejects)."""
    try:
        work()
    except Exception:  # noqa: BLE001 - any rejection by the CPU kernel is an answer, not an error
        return False
    return True


COMPILED_ITEM = "a compiled item: a stuck compile ends as timed_out, never a hung run"

@attrs.frozen
class IsolationPolicy:
    everything: bool = False
    rules: tuple[CrashRule, ...] = ()
    evidence: dict[str, str] = attrs.field(factory=dict)  # item id -> what happened before
    device_type: str = "cpu"
    torch_version: tuple[int, int] = (0, 0)
    timeout_s: float = DEFAULT_ITEM_TIMEOUT_S
    can_fork: bool = True  # False: the device does not survive a fork; crash-prone oracle cases are not run
    start: str = attrs.field(default=AUTO, validator=attrs.validators.in_(START_METHODS))  # --isolation-start
    # a compiled run (--compile): every item in a forked child (a spawned worker where the device does not survive a
    # fork), so a stuck compile is the item's `timed_out` (the item timeout), never a hung run
    compiled: bool = False

    def reason(self, item: Any) -> str | None:
        """Why this item runs isolated as a whole, or None to run it in the session's process."""
        if self.everything:
            return "--subprocess-per-test"
        if self.compiled:  # forked, or in a spawned worker where the device does not survive a fork
            return COMPILED_ITEM
        rule = matching_rule(self.rules, item, self.device_type, self.torch_version, kind=BACKEND)
        if rule is not None:
            return f"known crash rule {rule.name}: {rule.reason}"
        if item.id in self.evidence:
            return f"adaptive: {self.evidence[item.id]}"
        return None

    def case_isolation(self, item: Any) -> CaseIsolation | None:
        """How this item's cases run isolated because the CPU oracle crashes or hangs on some of them, or None.

        Every oracle rule matching the item counts: the cases any of them needs, the longest limit,
        their reasons. Without forking (`can_fork` False), or where a rule's crash corrupts memory (a run that
        survives answers garbage: `corrupts`), the crash-prone cases are not run (`fork`)."""
        rules = [rule for rule in self.rules if rule.is_oracle and rule.matches(
            item.property, item.op, item.dtype, self.device_type, self.torch_version)]
        if not rules:
            return None
        cases = None if any(rule.cases is None for rule in rules) else \
            tuple(dict.fromkeys(trait for rule in rules for trait in rule.cases))
        return CaseIsolation(timeout_s=max(rule.timeout_s for rule in rules),
                             reason="; ".join(dict.fromkeys(rule.reason for rule in rules)),
                             rule=", ".join(rule.name for rule in rules), cases=cases,
                             fork=self.can_fork and not any(rule.corrupts for rule in rules))

    def describe(self) -> str:
        oracle = sum(rule.kind == ORACLE for rule in self.rules)
        parts = ["every item" if self.everything else None,
                 f"{len(self.rules) - oracle} known backend crash rules" if len(self.rules) > oracle else None,
                 f"{oracle} known CPU-oracle crash rules (their cases isolated)" if oracle else None,
                 f"{len(self.evidence)} items with earlier crash or hang evidence" if self.evidence else None]
        chosen = [p for p in parts if p]
        how = "forked children" if start_method(self, self.device_type) == FORK else \
            "a spawned worker"
        return (", ".join(chosen) if chosen else "nothing") + f" (items in {how}, item timeout {self.timeout_s:.0f} s)"


def start_method(policy: Any, device_type: str) -> str:
    """How the items `policy` isolates start on `device_type`: FORK or SPAWN. Its `start` (--isolation-start)
    when it names one; else a fork where the policy allows it (`can_fork`) and the device survives it
    (`fork_safe`), a spawned worker elsewhere. A policy without `start` (a test's) is AUTO."""
    start = getattr(policy, "start", AUTO)
    if start != AUTO:
        return start
    return FORK if getattr(policy, "can_fork", True) and fork_safe(device_type) else SPAWN
