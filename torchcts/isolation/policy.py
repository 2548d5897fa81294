"""Which items of a run execute in a forked child process, and why.

Whole items run isolated with `--subprocess-per-test`, when a backend rule of the known-crash
ledger matches them (`--known-segfault-policy isolate`), and when earlier runs on the same
hardware, device and torch minor version left crash or hang evidence (`--adaptive-isolation
auto`): `reason`. Items an oracle rule matches (torch's CPU kernel crashes or hangs on some of
their cases, on this torch version) run every case in a forked child with the rule's per-case
limit, and a crash or hang of the CPU oracle is accounted `cpu_contract` with the rule's reason:
`case_isolation`. A process that is itself an isolated child never isolates again.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from torchcts.crashes.ledger import BACKEND, ORACLE, CrashRule, matching_rule

DEFAULT_ITEM_TIMEOUT_S = 900.0


@attrs.frozen
class CaseIsolation:
    """Every case of the item runs in a forked child; a crash or hang of the CPU oracle is `cpu_contract`."""

    timeout_s: float  # per case
    reason: str  # the oracle rule's reason, for the cpu_contract record
    rule: str = ""  # the rule's name (file#index), for the record's `isolated` note

    def probe_runner(self) -> Callable[[Callable[[], None]], bool | None]:
        """A runner for `torchcts.strategies.probes.cpu_probes`: drawing runs the op on CPU (to validate a
        transformed case, to choose a size change), and for this item that may crash or hang too, so each
        probe runs in a forked child under the per-case limit. None: the child died or hung (the case is
        kept; its isolated check accounts the crash)."""
        from torchcts.isolation.fork import run_forked
        from torchcts.strategies.probes import run_in_process

        def runner(work: Callable[[], None]) -> bool | None:
            result = run_forked(lambda: run_in_process(work), self.timeout_s)
            return result.answer if result.status == "finished" else None

        return runner


@attrs.frozen
class IsolationPolicy:
    everything: bool = False
    rules: tuple[CrashRule, ...] = ()
    evidence: dict[str, str] = attrs.field(factory=dict)  # item id -> what happened before
    device_type: str = "cpu"
    torch_version: tuple[int, int] = (0, 0)
    timeout_s: float = DEFAULT_ITEM_TIMEOUT_S
    can_fork: bool = True  # False: the device does not survive a fork; oracle-rule items cannot run at all

    def reason(self, item: Any) -> str | None:
        """Why this item runs isolated as a whole, or None to run it in the session's process."""
        if not self.can_fork:
            return None
        if self.everything:
            return "--subprocess-per-test"
        rule = matching_rule(self.rules, item, self.device_type, self.torch_version, kind=BACKEND)
        if rule is not None:
            return f"known crash rule {rule.name}: {rule.reason}"
        if item.id in self.evidence:
            return f"adaptive: {self.evidence[item.id]}"
        return None

    def case_isolation(self, item: Any) -> CaseIsolation | None:
        """How this item's cases run isolated because the CPU oracle crashes or hangs on some of them, or None.

        Without forking (`can_fork` False) the engine cannot run such an item safely: it accounts
        the whole item `cpu_contract` with the reason instead of running it."""
        rule = matching_rule(self.rules, item, self.device_type, self.torch_version, kind=ORACLE)
        if rule is None:
            return None
        return CaseIsolation(timeout_s=rule.timeout_s, reason=rule.reason, rule=rule.name)

    def describe(self) -> str:
        oracle = sum(rule.kind == ORACLE for rule in self.rules)
        parts = ["every item" if self.everything and self.can_fork else None,
                 f"{len(self.rules) - oracle} known backend crash rules" if len(self.rules) > oracle and self.can_fork
                 else None,
                 f"{oracle} known CPU-oracle crash rules (their cases isolated)" if oracle else None,
                 f"{len(self.evidence)} items with earlier crash or hang evidence" if self.evidence and self.can_fork
                 else None]
        chosen = [p for p in parts if p]
        return (", ".join(chosen) if chosen else "nothing") + f" (item timeout {self.timeout_s:.0f} s)"
