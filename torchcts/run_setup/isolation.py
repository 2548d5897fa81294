"""What a run isolates: the known-crash ledger's rules in force and the isolation policy built on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchcts.crashes.history import crash_evidence
from torchcts.crashes.ledger import LedgerError, LOCAL_NAME, ledger_rules
from torchcts.crashes.versions import torch_minor
from torchcts.engine.targets import Target
from torchcts.isolation.fork import fork_safe
from torchcts.isolation.policy import DEFAULT_ITEM_TIMEOUT_S, IsolationPolicy
from torchcts.run_setup.errors import SessionError
from torchcts.run_setup.request import RunRequest


def isolation_policy(request: RunRequest, rules: tuple[Any, ...], target: Target, results_dir: Path,
                     environment: dict[str, Any], exclude: Path | None = None) -> IsolationPolicy:
    """What runs isolated: everything, ledger matches, and items with earlier crash or hang evidence (from the
    runs in `results_dir` but `exclude`). Where the device does not survive a fork, isolated items run in
    spawned workers and crash-prone CPU-oracle cases are not run (cpu_contract); --isolation-start forces one."""
    can_fork = fork_safe(target.device_type)
    start = request.isolation_start or "auto"
    if start == "fork" and not can_fork:
        raise SessionError(f"--isolation-start fork: {target.device_type} does not survive a fork once initialised; "
                           "use auto or spawn (isolated items then run in spawned worker interpreters)")
    evidence = crash_evidence(results_dir, environment, exclude) if request.adaptive_isolation == "auto" else {}
    return IsolationPolicy(everything=bool(request.subprocess_per_test), rules=rules, evidence=evidence,
                           device_type=target.device_type, torch_version=torch_minor(),
                           timeout_s=request.item_timeout or DEFAULT_ITEM_TIMEOUT_S, can_fork=can_fork,
                           start=start, compiled=target.compile is not None)


def crash_rules(request: RunRequest, manifest_path: Path) -> tuple[Any, ...]:
    """The known-crash rules in force (--known-segfault-policy off keeps only the CPU-oracle rules)."""
    local = request.known_crashes
    if local is not None and not Path(local).exists():
        raise SessionError(f"--known-crashes {local}: no such file")
    try:
        return tuple(ledger_rules(request.known_segfault_policy,
                                  Path(local) if local else manifest_path.parent / LOCAL_NAME))
    except LedgerError as exc:
        raise SessionError(f"known-crash ledger: {exc}") from None
