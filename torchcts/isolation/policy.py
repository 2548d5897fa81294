"""Which items of a run execute in a forked child process, and why.

Everything with `--subprocess-per-test`; otherwise items a known-crash rule matches
(`--known-segfault-policy isolate`) and items with crash or hang evidence in earlier runs on the
same hardware, device and torch minor version (`--adaptive-isolation auto`). A process that is
itself an isolated child never isolates again.
"""

from __future__ import annotations

from typing import Any

import attrs

from torchcts.crashes.ledger import CrashRule, matching_rule

DEFAULT_ITEM_TIMEOUT_S = 900.0


@attrs.frozen
class IsolationPolicy:
    everything: bool = False
    rules: tuple[CrashRule, ...] = ()
    evidence: dict[str, str] = attrs.field(factory=dict)  # item id -> what happened before
    device_type: str = "cpu"
    torch_version: tuple[int, int] = (0, 0)
    timeout_s: float = DEFAULT_ITEM_TIMEOUT_S

    def reason(self, item: Any) -> str | None:
        """Why this item runs isolated, or None to run it in the session's process."""
        if self.everything:
            return "--subprocess-per-test"
        rule = matching_rule(self.rules, item, self.device_type, self.torch_version)
        if rule is not None:
            return f"known crash rule {rule.name}: {rule.reason}"
        if item.id in self.evidence:
            return f"adaptive: {self.evidence[item.id]}"
        return None

    def describe(self) -> str:
        parts = ["every item" if self.everything else None,
                 f"{len(self.rules)} known-crash rules" if self.rules else None,
                 f"{len(self.evidence)} items with earlier crash or hang evidence" if self.evidence else None]
        chosen = [p for p in parts if p]
        return (", ".join(chosen) if chosen else "nothing") + f" (item timeout {self.timeout_s:.0f} s)"
