"""Starting a conformance run: every option checked, the manifest loaded, the plan built, the run folder made.

`start_run` turns a `RunRequest` into a `RunStart` or a `SessionError` whose message names the option
and what is allowed (exit 2). Everything a user types is checked before the manifest loads, the backend
imports or a folder is made, so a typo costs nothing. `RunStart.engine_settings` are the settings every
item of the run shares (`settings.engine_settings`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import attrs
import hypothesis
import torch

import torchcts
from torchcts import dtypes as dtype_names
from torchcts.arguments import shown
from torchcts.core.case_limits import CaseLimits
from torchcts.cases.replay_items import ReplayItem, replay_items
from torchcts.crashes.ledger import audit_lines
from torchcts.crashes.versions import torch_minor
from torchcts.disk import WriteError
from torchcts.engine.run import HARNESS_THREADS, EngineSettings
from torchcts.engine.targets import Target
from torchcts.isolation.policy import IsolationPolicy
from torchcts.manifest import Manifest
from torchcts.plan import registry
from torchcts.plan.build import Plan
from torchcts.plan.effective import run_claims
from torchcts.core.shards import format_shard
from torchcts.results.writer import RunFolderError, RunWriter, hardware_key
from torchcts.run_setup.checks import checked_options, corpus_dir, with_properties
from torchcts.run_setup.device import device_kind, device_name_warning, run_target, start_checks
from torchcts.run_setup.errors import AuditDone, SessionError
from torchcts.run_setup.isolation import crash_rules, isolation_policy
from torchcts.run_setup.manifest_load import manifest_path, run_manifest, run_plan
from torchcts.run_setup.request import CONTROLLER, WORKER, RunRequest
from torchcts.run_setup.seeds import draw_settings, hash_seed_warning, hypothesis_seed, run_seed
from torchcts.run_setup.settings import engine_settings

TRACE_DISPATCH_ENV = "TORCHCTS_TRACE_DISPATCH"  # "1": the same as --trace-dispatch


@attrs.frozen(eq=False)
class RunStart:
    """A run ready to go: what `start_run` checked, loaded, built and opened."""

    manifest: Manifest | None
    target: Target
    plan: Plan
    writer: RunWriter
    run_seed: int | None  # None: derandomized
    max_examples: int
    level: int
    replaying: list[ReplayItem] | None  # the corpus cases to replay (--replay), instead of the plan's items
    isolation: IsolationPolicy
    corpus_dir: Path
    case_limits: CaseLimits
    engine: EngineSettings  # what every item of the run shares (`settings.engine_settings`)
    draw: Any = None  # `hypothesis_profile.DrawSettings` (None when replaying: no draws)
    trace_dispatch: bool = False  # records carry `dispatched` (--trace-dispatch or TORCHCTS_TRACE_DISPATCH=1)
    role: str = "single"  # "controller" or "worker" of a pytest-xdist run (`plugin.distributed`)


def start_run(request: RunRequest) -> RunStart:
    """Check the options, load the manifest and the properties, build the plan, open the run folder;
    the plan's accounting records are written. SessionError for bad input, AuditDone for an audit.

    A pytest-xdist worker (`request.role`) builds the same plan but joins its controller's run folder,
    with the controller's seed: it writes neither run.json nor the accounting records."""
    role = request.role
    validation = request.validation
    device = request.device
    if device is not None and not device.strip():
        raise SessionError(f"--device {device!r} is empty; name a device: cpu, cuda, cuda:1, meta, or a backend's")
    device = device or "cpu"
    if validation and device_kind(device) != "cpu":
        raise SessionError(f"--validation runs against CPU itself; it cannot be combined with --device {shown(device)}")
    selection, seed, max_examples = checked_options(request, defer_properties=True)  # before the manifest loads
    seed = hypothesis_seed(request, seed)
    replay_paths = request.replay
    path = manifest_path(request, device, bool(replay_paths))
    manifest = run_manifest(request, path, bool(replay_paths))
    selection = with_properties(selection, request.properties)
    findings = start_checks(device)
    target = run_target(device, manifest, request.compile, request.shape_mode)
    trace_dispatch = bool(request.trace_dispatch) or os.environ.get(TRACE_DISPATCH_ENV) == "1"
    if trace_dispatch and target.compile_backend:
        raise SessionError("--trace-dispatch cannot be combined with --compile: an active dispatch mode makes dynamo "
                           "skip the frame and run it eagerly, so the run would no longer test the compiled path")
    draw = draw_settings(request, manifest, max_examples)
    seed_used, derandomize = run_seed(request, seed, manifest, draw.profile_derandomizes)
    joined = request.joined if role == WORKER else None
    if joined is not None:  # the controller's seed: a random one must be the same in every worker
        seed_used, derandomize = joined[1], joined[1] is None
    warnings = [w for w in [device_name_warning(manifest, device, validation), hash_seed_warning(derandomize)] if w]
    for warning in warnings if joined is None else ():  # stderr, at once: a long run's summary comes too late
        print(f"torchcts: warning: {warning} (recorded in run.json)", file=sys.stderr, flush=True)
    for finding in findings if joined is None else ():
        print(f"torchcts: finding: {finding.line()} (recorded in run.json; the items it fails point at it)",
              file=sys.stderr, flush=True)
    max_examples = draw.max_examples if manifest else (max_examples or 1)  # a replay draws nothing
    torch.set_num_threads(HARNESS_THREADS)
    limits = CaseLimits.from_option(request.max_case_bytes)
    replaying = replay_items(replay_paths, limits) if replay_paths else None  # unreadable files: items that say why
    plan = run_plan(manifest, selection) if replaying is None else Plan((), ())
    claims = run_claims(manifest, selection) if manifest is not None else None
    if claims is not None and claims.beyond_file and joined is None:  # said at once, and in run.json's `claims`
        print(f"torchcts: this run claims more than the manifest file: {claims.summary_line()}", file=sys.stderr,
              flush=True)
    environment = {
        "device": device, "compile": target.compile_backend, "validation": bool(validation), "hardware_key": hardware_key(device),
        "compile_settings": target.compile.as_json() if target.compile is not None else None,
        "torch": torch.__version__, "torchcts": torchcts.__version__, "hypothesis": hypothesis.__version__,
        "python": sys.version.split()[0], "python_hash_seed": os.environ.get("PYTHONHASHSEED"), "seed": seed_used,
        "derandomize": derandomize, "max_examples": max_examples,
        "level": claims.depth if claims else selection.level,
        "manifest": str(manifest.source) if manifest else None,
        "manifest_hash": manifest.fingerprint() if manifest else None,  # the file's claims
        "effective_manifest_hash": claims.effective.fingerprint() if claims else None,  # what this run tests
        "claims": claims.as_json() if claims else None,  # where the run's claims differ from the file's
        "replay": [str(p) for p in replay_paths] if replay_paths else None,
        "shard": format_shard(selection.shard) if selection.shard and replaying is None else None,  # "K/N"
        "selection": {"dtypes": request.dtypes, "ops": request.ops,
                      "properties": request.properties, "level": selection.level,
                      "capabilities": list(selection.capabilities or ()) or None,
                      "last_failed": selection.last_failed.describe() if selection.last_failed else None},
        "capabilities": sorted(manifest.capabilities) if manifest else [],
        "claimed_dtypes": [dtype_names.canonical_name(d) for d in claims.effective.claimed_dtypes] if claims else None,
        "property_capabilities": registry.capability_map(),
        "capability_also_tested_by": registry.also_proves_map(),  # e.g. special values: ieee754
        "planned_items": len(plan.items) if replaying is None else len(replaying),
        "harness_threads": HARNESS_THREADS,
        "trace_dispatch": trace_dispatch,  # records carry `dispatched` (docs/coverage/evidence.md)
        "warnings": warnings,  # e.g. a manifest written for another device type (printed at the start)
        "findings": [finding.as_json() for finding in findings],  # device defects (`engine.device_findings`)
        "workers": request.workers if role == CONTROLLER else 1,  # pytest-xdist's -n
    }
    rules = crash_rules(request, path)
    if request.known_segfault_audit:
        lines, ok = audit_lines(list(rules), list(plan.items) + [a.item for a in plan.accounting],
                                target.device_type, torch_minor())
        raise AuditDone([f"known-crash ledger: {len(rules)} rules, {len(plan.items)} items would run"] + lines, ok)
    results_dir = Path(request.results_dir)
    exclude = results_dir / joined[0] if joined is not None else None  # a worker's own run is no earlier run
    isolation = isolation_policy(request, rules, target, results_dir, environment, exclude=exclude)
    environment["isolation"] = isolation.describe()
    shrink = not request.no_shrink
    settings_used = draw.as_json(derandomize=derandomize, seed=seed_used, shrink=shrink) if replaying is None else None
    try:
        writer = RunWriter(results_dir, environment, run_id=joined[0] if joined else None, hypothesis=settings_used,
                           run_kind=request.run_kind, role=role)
    except RunFolderError as exc:
        raise SessionError(f"--results-dir: {exc}") from None
    if role != WORKER:
        try:
            writer.record_many({**entry.item.as_json(), "outcome": entry.outcome, "reason": entry.reason}
                               for entry in plan.accounting)
        except WriteError:  # a full disk: the records written so far stay, run.json says partial if it can
            with contextlib.suppress(WriteError):
                writer.close("partial")
            raise
    effective = claims.effective if claims else None
    level = claims.depth if claims else (selection.level or 8)
    draw_used = draw if replaying is None else None
    folder = corpus_dir(request)
    engine = engine_settings(
        target, effective, level=level, max_examples=max_examples, draw=draw_used, run_seed=seed_used, shrink=shrink,
        corpus_dir=None if replaying is not None else folder,  # a replay stores no new cases
        isolation=isolation, run_id=writer.run_id, hardware_key=writer.environment.get("hardware_key"),
        trace_dispatch=trace_dispatch, case_limits=limits, replay_shape_mode=request.shape_mode,
        blame_cases=request.blame_cases)
    return RunStart(effective, target, plan, writer, seed_used, max_examples, level, replaying, isolation, folder, limits,
                    engine, draw=draw_used, trace_dispatch=trace_dispatch, role=role)
