"""The op probe of `torchcts init --probe`: which items hit a missing kernel, found by the engine itself.

Every item a manifest's plan runs is run once through `engine.run.run_item` with exactly the draw
settings `torchcts run` would use for that manifest: derandomized seeds from the item ids, the
manifest's Hypothesis block (and a profile named by HYPOTHESIS_PROFILE), shrinking on (a shrink may
reach other kernels), the crash ledger's isolation. Nothing is stored (no corpus, no result
folder). A record whose `error_kind` is `missing_kernel` names the overload; grouped by op, they
become the draft's `skip_ops`. So a derandomized run of the draft, with the same torch, TorchCTS
and Hypothesis versions and a backend that behaves the same, draws the same cases for every item
left and hits no missing kernel; other seeds, levels or dtypes may still reach one.
"""

from __future__ import annotations

# imports inside functions: torch and the engine load when the probe runs: `init --probe` checks --ops, the
# backend and the device first (probe.draft imports this module)

import collections
import re
import time
from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts import interrupts
from torchcts.core.outcomes import Outcome
from torchcts.core.probe_skips import probe_reason
from torchcts.crashes.ledger import LOCAL_NAME, ledger_rules
from torchcts.crashes.versions import torch_minor
from torchcts.isolation.fork import fork_safe
from torchcts.isolation.policy import IsolationPolicy

# Records written before the engine named missing kernels carry only the dispatcher's text.
_DISPATCHER = re.compile(r"Could not run '(?P<overload>[A-Za-z_]\w*::[\w.]+)' with arguments from the '(?P<key>\w+)'")


@attrs.frozen
class OpProbe:
    """What the op probe found: the missing overloads per op (OpInfo id or scenario name), the outcomes."""

    items: int
    missing: dict[str, tuple[str, ...]]  # op -> the overloads its items had no kernel for, sorted
    outcomes: dict[str, int]  # outcome -> items
    duration_s: float
    settings: str  # the draw settings, as the draft's header says them
    missing_items: int = 0  # items whose error is a missing kernel

    def skip_ops(self) -> dict[str, str]:
        """The draft's `skip_ops`: each op with a missing kernel -> "no kernel for aten::X[, aten::Y]"."""
        return {op: probe_reason(overloads) for op, overloads in sorted(self.missing.items())}


def missing_overload(record: dict[str, Any]) -> str | None:
    """The overload a record's missing kernel names, or None when its error is something else."""
    if record.get("outcome") != Outcome.ERROR:
        return None
    if record.get("error_kind") == "missing_kernel" and isinstance(record.get("missing_kernel"), dict):
        overload = record["missing_kernel"].get("overload")
        return overload if isinstance(overload, str) and overload else None
    if "error_kind" not in record:
        match = _DISPATCHER.search(str(record.get("error") or ""))
        return match.group("overload") if match else None
    return None


def probe_ops(manifest: Any, device: str, *, op_patterns: tuple[str, ...] = (), ledger_folder: Path | None = None,
              progress: Callable[[int, int, int, int], None] = lambda done, total, missing, ops: None) -> OpProbe:
    """Run every item `manifest`'s plan runs on `device` (only the ops `op_patterns` select) once, as a
    derandomized `torchcts run` would; the missing kernels per op. `progress(done, total, missing
    overloads, ops with one)` is called after each item. Interrupts propagate (nothing is half-done)."""
    import torch

    from torchcts.engine.run import HARNESS_THREADS, run_item
    from torchcts.plan.build import Selection, build_plan

    settings, described = engine_settings(manifest, device, ledger_folder)
    torch.set_num_threads(HARNESS_THREADS)
    plan = build_plan(manifest, Selection(op_patterns=tuple(op_patterns)))
    started = time.monotonic()
    missing: dict[str, set[str]] = collections.defaultdict(set)
    outcomes: collections.Counter[str] = collections.Counter()
    missing_items = 0
    for done, item in enumerate(plan.items, 1):
        interrupts.check()
        record = run_item(item, settings)
        outcomes[str(record["outcome"])] += 1
        overload = missing_overload(record)
        if overload is not None:
            missing[item.op].add(overload)
            missing_items += 1
        progress(done, len(plan.items), len(set().union(*missing.values())) if missing else 0, len(missing))
    return OpProbe(items=len(plan.items), missing={op: tuple(sorted(o)) for op, o in missing.items()},
                   outcomes=dict(sorted(outcomes.items())), duration_s=time.monotonic() - started, settings=described,
                   missing_items=missing_items)


def engine_settings(manifest: Any, device: str, ledger_folder: Path | None) -> tuple[Any, str]:
    """The engine's settings a derandomized `torchcts run` of `manifest` on `device` would use (without a
    corpus), and a line that says them."""
    from torchcts.engine.hypothesis_profile import named_profile, register_manifest_profile, resolve
    from torchcts.engine.run import versions
    from torchcts.engine.targets import Target
    from torchcts.run_setup.settings import engine_settings as run_engine_settings  # imports torch and the engine

    target = Target(device, None)
    register_manifest_profile(manifest.hypothesis)
    profile, named_by = named_profile(None)  # HYPOTHESIS_PROFILE, as a run reads it
    draw = resolve(manifest.hypothesis, profile=profile, named_by=named_by)
    local = (ledger_folder / LOCAL_NAME) if ledger_folder is not None else None
    isolation = IsolationPolicy(rules=tuple(ledger_rules("isolate", local)), device_type=target.device_type,
                                torch_version=torch_minor(), can_fork=fork_safe(target.device_type))
    settings = run_engine_settings(target, manifest, max_examples=draw.max_examples, draw=draw, isolation=isolation,
                                   show_traceback=False)  # a probe keeps first lines, whatever the manifest says
    described = (f"derandomized, max_examples {draw.max_examples} ({draw.max_examples_from}), "
                 f"profile {draw.profile}, {versions().replace(';', ', ')}")
    return settings, described
