"""Starting a conformance run: every option checked, the manifest loaded, the plan built, the run folder made.

`start_run` turns a pytest session's TorchCTS options into a `RunStart` or a `SessionError` whose
message names the option and what is allowed (exit 2). Everything a user types is checked before
the manifest loads, the backend imports or a folder is made, so a typo costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import random
import sys
from pathlib import Path
from typing import Any

import attrs
import hypothesis
import pytest
import torch

import torchcts
from torchcts import dtypes as dtype_names
from torchcts.arguments import MAX_EXAMPLES, MAX_SEED, input_file_problem, output_folder_problem, shown
from torchcts.ascii_numbers import ascii_int
from torchcts.cases.corpus_default import default_corpus_dir
from torchcts.core.case_limits import CaseLimits
from torchcts.cases.replay_items import ReplayItem, replay_items
from torchcts.hash_seed import HASH_SEED
from torchcts.crashes.history import crash_evidence
from torchcts.crashes.ledger import LOCAL_NAME, LedgerError, audit_lines, ledger_rules
from torchcts.crashes.versions import torch_minor
from torchcts.disk import WriteError
from torchcts.engine.hypothesis_profile import (
    DrawSettings, ProfileError, named_profile, register_manifest_profile, resolve)
from torchcts.engine import device_findings
from torchcts.engine.run import HARNESS_THREADS
from torchcts.engine.targets import Target
from torchcts.isolation.fork import fork_safe
from torchcts.isolation.policy import DEFAULT_ITEM_TIMEOUT_S, IsolationPolicy
from torchcts.manifest import Manifest, ManifestError, environment_problems, load_manifest
from torchcts.manifest.model import HypothesisSettings
from torchcts.manifest.targets import LOCAL_MANIFEST, shipped_target, used_line
from torchcts.plan import registry
from torchcts.plan.build import Plan, Selection, SelectionError, build_plan
from torchcts.plan.effective import run_claims
from torchcts.plan.selection import check_capabilities, check_properties, check_shard
from torchcts.core.shards import format_shard
from torchcts.results.writer import RunFolderError, RunWriter, hardware_key


TRACE_DISPATCH_ENV = "TORCHCTS_TRACE_DISPATCH"  # "1": the same as --trace-dispatch


class SessionError(Exception):
    """A run that cannot start: the message says what to fix."""


class AuditDone(Exception):
    """`--known-segfault-audit` ran instead of the run: its lines, and whether every rule matched."""

    def __init__(self, lines: list[str], ok: bool):
        super().__init__("known-crash audit")
        self.lines, self.ok = lines, ok


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
    draw: Any = None  # `hypothesis_profile.DrawSettings` (None when replaying: no draws)
    trace_dispatch: bool = False  # records carry `dispatched` (--trace-dispatch or TORCHCTS_TRACE_DISPATCH=1)
    role: str = "single"  # "controller" or "worker" of a pytest-xdist run (`plugin.distributed`)


def start_run(config: pytest.Config) -> RunStart:
    """Check the options, load the manifest and the properties, build the plan, open the run folder;
    the plan's accounting records are written. SessionError for bad input, AuditDone for an audit.

    A pytest-xdist worker (`plugin.distributed`) builds the same plan but joins its controller's run
    folder, with the controller's seed: it writes neither run.json nor the accounting records."""
    from torchcts.plugin import distributed

    option = config.getoption
    role = distributed.role(config)
    validation = option("torchcts_validation")
    device = option("torchcts_device")
    if device is not None and not device.strip():
        raise SessionError(f"--device {device!r} is empty; name a device: cpu, cuda, cuda:1, meta, or a backend's")
    device = device or "cpu"
    if validation and device_kind(device) != "cpu":
        raise SessionError(f"--validation runs against CPU itself; it cannot be combined with --device {shown(device)}")
    selection, seed, max_examples = checked_options(option, defer_properties=True)  # before the manifest loads
    seed = hypothesis_seed(config, seed)
    replay_paths = option("torchcts_replay")
    manifest_path = _manifest_path(option, device, bool(replay_paths))
    manifest = _manifest(option, manifest_path, bool(replay_paths))
    selection = _with_properties(selection, option("torchcts_properties"))
    findings = start_checks(device)
    target = run_target(device, manifest, option("torchcts_compile"), option("torchcts_shape_mode"))
    trace_dispatch = bool(option("torchcts_trace_dispatch")) or os.environ.get(TRACE_DISPATCH_ENV) == "1"
    if trace_dispatch and target.compile_backend:
        raise SessionError("--trace-dispatch cannot be combined with --compile: an active dispatch mode makes dynamo "
                           "skip the frame and run it eagerly, so the run would no longer test the compiled path")
    draw = draw_settings(config, manifest, max_examples)
    run_seed, derandomize = _run_seed(option, seed, manifest, draw.profile_derandomizes)
    joined = distributed.joined_run(config) if role == distributed.WORKER else None
    if joined is not None:  # the controller's seed: a random one must be the same in every worker
        run_seed, derandomize = joined[1], joined[1] is None
    warnings = [w for w in [device_name_warning(manifest, device, validation), hash_seed_warning(derandomize)] if w]
    for warning in warnings if joined is None else ():  # stderr, at once: a long run's summary comes too late
        print(f"torchcts: warning: {warning} (recorded in run.json)", file=sys.stderr, flush=True)
    for finding in findings if joined is None else ():
        print(f"torchcts: finding: {finding.line()} (recorded in run.json; the items it fails point at it)",
              file=sys.stderr, flush=True)
    max_examples = draw.max_examples if manifest else (max_examples or 1)  # a replay draws nothing
    torch.set_num_threads(HARNESS_THREADS)
    limits = CaseLimits.from_option(option("torchcts_max_case_bytes"))
    replaying = replay_items(replay_paths, limits) if replay_paths else None  # unreadable files: items that say why
    plan = _plan(manifest, selection) if replaying is None else Plan((), ())
    claims = run_claims(manifest, selection) if manifest is not None else None
    if claims is not None and claims.beyond_file and joined is None:  # said at once, and in run.json's `claims`
        print(f"torchcts: this run claims more than the manifest file: {claims.summary_line()}", file=sys.stderr,
              flush=True)
    environment = {
        "device": device, "compile": target.compile_backend, "validation": bool(validation), "hardware_key": hardware_key(device),
        "compile_settings": target.compile.as_json() if target.compile is not None else None,
        "torch": torch.__version__, "torchcts": torchcts.__version__, "hypothesis": hypothesis.__version__,
        "python": sys.version.split()[0], "python_hash_seed": os.environ.get("PYTHONHASHSEED"), "seed": run_seed,
        "derandomize": derandomize, "max_examples": max_examples,
        "level": claims.depth if claims else selection.level,
        "manifest": str(manifest.source) if manifest else None,
        "manifest_hash": manifest.fingerprint() if manifest else None,  # the file's claims
        "effective_manifest_hash": claims.effective.fingerprint() if claims else None,  # what this run tests
        "claims": claims.as_json() if claims else None,  # where the run's claims differ from the file's
        "replay": [str(p) for p in replay_paths] if replay_paths else None,
        "shard": format_shard(selection.shard) if selection.shard and replaying is None else None,  # "K/N"
        "selection": {"dtypes": option("torchcts_dtypes"), "ops": option("torchcts_ops"),
                      "properties": option("torchcts_properties"), "level": selection.level,
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
        "workers": _worker_count(config) if role == distributed.CONTROLLER else 1,  # pytest-xdist's -n
    }
    rules = crash_rules(option, manifest_path, target)
    if option("torchcts_known_segfault_audit"):
        lines, ok = audit_lines(list(rules), list(plan.items) + [a.item for a in plan.accounting],
                                target.device_type, torch_minor())
        raise AuditDone([f"known-crash ledger: {len(rules)} rules, {len(plan.items)} items would run"] + lines, ok)
    results_dir = Path(option("torchcts_results_dir"))
    exclude = results_dir / joined[0] if joined is not None else None  # a worker's own run is no earlier run
    isolation = isolation_policy(option, rules, target, results_dir, environment, exclude=exclude)
    environment["isolation"] = isolation.describe()
    shrink = not option("torchcts_no_shrink")
    settings_used = draw.as_json(derandomize=derandomize, seed=run_seed, shrink=shrink) if replaying is None else None
    try:
        writer = RunWriter(results_dir, environment, run_id=joined[0] if joined else None, hypothesis=settings_used,
                           run_kind=run_kind(config), role=role)
    except RunFolderError as exc:
        raise SessionError(f"--results-dir: {exc}") from None
    if role != distributed.WORKER:
        try:
            writer.record_many({**entry.item.as_json(), "outcome": entry.outcome, "reason": entry.reason}
                               for entry in plan.accounting)
        except WriteError:  # a full disk: the records written so far stay, run.json says partial if it can
            with contextlib.suppress(WriteError):
                writer.close("partial")
            raise
    return RunStart(claims.effective if claims else None, target, plan, writer, run_seed, max_examples,
                    claims.depth if claims else (selection.level or 8), replaying, isolation,
                    corpus_dir(option), limits, draw=draw if replaying is None else None, trace_dispatch=trace_dispatch,
                    role=role)


def _worker_count(config: pytest.Config) -> int:
    """How many pytest-xdist workers a controller starts (`-n`, after `auto` is resolved)."""
    return len(config.getoption("tx", None) or ()) or 1


def run_kind(config: pytest.Config) -> str:
    """run.json's `run_kind`: "replay" (--replay), "collect_only" (pytest --collect-only) or "run"."""
    if config.getoption("torchcts_replay"):
        return "replay"
    return "collect_only" if config.getoption("collectonly", False) else "run"


def corpus_dir(option: Any) -> Path:
    """--corpus-dir as given, or the default (`./corpus`, never the curated corpus TorchCTS ships)."""
    given = option("torchcts_corpus_dir")
    return Path(given) if given is not None else default_corpus_dir(Path(option("torchcts_results_dir")))


def _manifest_path(option: Any, device: str, replaying: bool) -> Path:
    """--manifest, else ./manifest.py, else (not replaying) the manifest TorchCTS ships for the device and
    --compile backend (`torchcts.manifest.targets`, said on stderr), else ./manifest.py (reported missing)."""
    given = option("torchcts_manifest")
    if given is not None or replaying or LOCAL_MANIFEST.exists():
        return Path(given or LOCAL_MANIFEST)
    target = shipped_target(device, option("torchcts_compile"))
    if target is None:
        return LOCAL_MANIFEST
    print(used_line(target), file=sys.stderr)
    return target.path


def _manifest(option: Any, manifest_path: Path, replaying: bool) -> Manifest | None:
    """The run's manifest (None when replaying without one), its backend imported and its properties loaded."""
    if replaying and option("torchcts_manifest") is None and not manifest_path.exists():
        _load_properties(())
        return None  # replaying needs no claims; a manifest only adds tolerance overrides
    problem = input_file_problem(manifest_path)
    if problem is not None:
        raise SessionError(f"--manifest: {problem}")
    try:
        manifest, _ = load_manifest(manifest_path)
    except ManifestError as exc:
        raise SessionError(f"TorchCTS manifest is invalid:\n{exc.render()}") from None
    register_manifest_profile(manifest.hypothesis)  # before the backend module, which may build profiles on it
    import_manifest_backend(manifest)
    _load_properties(manifest.custom_test_dirs)
    return manifest


def _load_properties(extra_dirs: Any) -> None:
    """Import the installed property suites and the manifest's `custom_test_dirs` into the registry."""
    try:
        registry.load(tuple(d for d in extra_dirs if Path(d).is_dir()))
    except registry.RegistryError as exc:
        raise SessionError(f"custom_test_dirs: {exc}") from None


def _with_properties(selection: Selection, names: list[str] | None) -> Selection:
    """The selection with its checked `--property` names (registered ones, custom suites included). With
    `--capability` too, the run takes the properties in both: none in common is a SessionError."""
    try:
        selection = attrs.evolve(selection, properties=check_properties(names, registry.capability_map()))
    except SelectionError as exc:
        raise SessionError(str(exc)) from None
    if selection.properties and selection.capabilities:
        if not any(registry.get(name).tests(selection.capabilities) for name in selection.properties):
            testing = ", ".join(registry.testing(selection.capabilities)) or "no registered property"
            raise SessionError(f"--property {' '.join(selection.properties)} and --capability "
                               f"{' '.join(selection.capabilities)} have no property in common (the capability is "
                               f"tested by {testing})")
    return selection


def _last_failed(folder: str | None) -> Any:
    """--last-failed-from RUN_FOLDER: the outcomes of that earlier run (`torchcts.results.last_failed`), read
    through the bounded reader; a folder that cannot be used, or where nothing failed, is a SessionError."""
    from torchcts.results.files import ResultFileError
    from torchcts.results.last_failed import read_last_failed

    if folder is None:
        return None
    if not str(folder).strip() or not Path(folder).is_dir():
        raise SessionError(f"--last-failed-from {shown(str(folder))}: "
                           f"{'no such folder' if str(folder).strip() else 'empty'}; name a run folder "
                           "(results/<run-id>/)")
    try:
        last = read_last_failed(folder)
    except ResultFileError as exc:
        raise SessionError(f"--last-failed-from: {exc}") from None
    if not last.failed:
        raise SessionError(f"--last-failed-from {folder}: no item failed, errored, crashed or timed out in "
                           f"{last.run_id}; nothing to rerun")
    return last


def _run_seed(option: Any, seed: int | None, manifest: Manifest | None,
              profile_derandomizes: bool = False) -> tuple[int | None, bool]:
    """(the run's seed or None, derandomized): --seed (or --hypothesis-seed), else a named profile's
    derandomize=True, else the manifest's hypothesis.seed, else random; None with --derandomize or the
    manifest's hypothesis.derandomize (which ignores its seed)."""
    derandomize = option("torchcts_derandomize")
    if derandomize and seed is not None:
        raise SessionError("--seed (or --hypothesis-seed) and --derandomize exclude each other: derandomized "
                           "seeds come from item ids")
    if derandomize is None and seed is None and profile_derandomizes:
        return None, True
    if seed is None and derandomize is None and manifest is not None and not manifest.hypothesis.derandomize:
        seed = manifest.hypothesis.seed  # the manifest's seed (or None) stands in for --seed
    if derandomize is None and manifest is not None:  # an explicit --seed overrides the manifest's
        derandomize = manifest.hypothesis.derandomize and seed is None
    if derandomize:
        return None, True
    return (seed if seed is not None else random.SystemRandom().randrange(2**32)), False


def hypothesis_seed(config: pytest.Config, seed: int | None) -> int | None:
    """The run's seed with Hypothesis's `--hypothesis-seed N` (its pytest plugin's option), which acts like
    `--seed N`: TorchCTS seeds every item from it. Given with another --seed, both must agree."""
    given = config.getoption("hypothesis_seed", None)  # absent when Hypothesis's pytest plugin is disabled
    if given is None:
        return seed
    try:
        value = ascii_int(str(given))  # not int(): it takes full-width and other Unicode digits
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise SessionError(f"--hypothesis-seed must be an integer from 0 to {MAX_SEED} (TorchCTS seeds every item "
                           f"from it, like --seed), got {shown(given)}")
    if seed is not None and seed != value:
        raise SessionError(f"--seed {seed} and --hypothesis-seed {value} disagree; give one of them")
    return value


def draw_settings(config: pytest.Config, manifest: Manifest | None, max_examples: int | None) -> DrawSettings:
    """The Hypothesis settings the run's items draw with (`torchcts.engine.hypothesis_profile`): the manifest's
    block, a profile named by --hypothesis-profile or HYPOTHESIS_PROFILE over it, the flags over both."""
    block = manifest.hypothesis if manifest is not None else HypothesisSettings()
    if manifest is None:
        register_manifest_profile(block)
    try:
        profile, named_by = named_profile(config.getoption("hypothesis_profile", None))
    except ProfileError as exc:
        raise SessionError(str(exc)) from None
    return resolve(block, profile=profile, named_by=named_by, max_examples=max_examples,
                   verbosity=config.getoption("hypothesis_verbosity", None),
                   show_statistics=bool(config.getoption("hypothesis_show_statistics", False)))


def _plan(manifest: Manifest | None, selection: Selection) -> Plan:
    if manifest is None:
        return Plan((), ())
    try:
        return build_plan(manifest, selection)
    except registry.RegistryError as exc:
        raise SessionError(f"custom_test_dirs: {exc}") from None


def isolation_policy(option: Any, rules: tuple[Any, ...], target: Target, results_dir: Path,
                      environment: dict[str, Any], exclude: Path | None = None) -> IsolationPolicy:
    """What runs isolated: everything, ledger matches, and items with earlier crash or hang evidence (from the
    runs in `results_dir` but `exclude`). Where the device does not survive a fork, isolated items run in
    spawned workers and crash-prone CPU-oracle cases are not run (cpu_contract); --isolation-start forces one."""
    can_fork = fork_safe(target.device_type)
    start = option("torchcts_isolation_start") or "auto"
    if start == "fork" and not can_fork:
        raise SessionError(f"--isolation-start fork: {target.device_type} does not survive a fork once initialised; "
                           "use auto or spawn (isolated items then run in spawned worker interpreters)")
    evidence = crash_evidence(results_dir, environment, exclude) if option("torchcts_adaptive_isolation") == "auto" \
        else {}
    return IsolationPolicy(everything=bool(option("torchcts_subprocess_per_test")), rules=rules, evidence=evidence,
                           device_type=target.device_type, torch_version=torch_minor(),
                           timeout_s=option("torchcts_item_timeout") or DEFAULT_ITEM_TIMEOUT_S, can_fork=can_fork,
                           start=start, compiled=target.compile is not None)


def crash_rules(option: Any, manifest_path: Path, target: Target) -> tuple[Any, ...]:
    """The known-crash rules in force (--known-segfault-policy off keeps only the CPU-oracle rules)."""
    local = option("torchcts_known_crashes")
    if local is not None and not Path(local).exists():
        raise SessionError(f"--known-crashes {local}: no such file")
    try:
        return tuple(ledger_rules(option("torchcts_known_segfault_policy"),
                                  Path(local) if local else manifest_path.parent / LOCAL_NAME))
    except LedgerError as exc:
        raise SessionError(f"known-crash ledger: {exc}") from None


def run_target(device: str, manifest: Manifest | None, backend: str | None, shape_mode: str | None) -> Target:
    """The device, behind the compile target --compile, --shape-mode and the manifest's `compile` section make
    (`compile_target.run_compile_spec`); a backend torch._dynamo does not know (after backend_import) is a
    SessionError that lists the ones it knows."""
    from torchcts.engine.compile_target import UnknownCompileBackend, check_backend, check_settings, run_compile_spec

    spec = run_compile_spec(manifest.compile if manifest is not None else None, backend, shape_mode)
    if spec is None:
        if shape_mode is not None:
            raise SessionError(f"--shape-mode {shape_mode} needs a compile target: --compile B, or the manifest's "
                               "compile.backend")
        return Target(device)
    try:
        check_backend(spec.backend)
        check_settings(spec)
    except UnknownCompileBackend as exc:
        raise SessionError(str(exc)) from None
    return Target(device, spec)


def import_manifest_backend(manifest: Manifest) -> None:
    """Import the manifest's backend module; one that raises, exits or kills its process is a SessionError."""
    from torchcts.manifest.load import BackendImportError, import_backend

    if manifest.backend_import is None:
        return
    try:
        import_backend(manifest.backend_import, manifest.device_name)
    except BackendImportError as exc:
        problems = "; ".join(p.render() for p in environment_problems(manifest))
        raise SessionError(f"{manifest.source}: backend_import {manifest.backend_import!r} failed: {exc}"
                           + (f" ({problems})" if problems else "")) from None


def checked_options(option: Any, *, defer_properties: bool = False) -> tuple[Selection, int | None, int | None]:
    """(selection, --seed, --max-examples) after checking every option a user types; SessionError names the bad one.

    Runs before the manifest loads and before anything is written, so a typo costs nothing: output
    folders must be creatable and writable, input files regular files, numbers in range, `--property`
    names registered by the installed suites (`defer_properties`: checked once the manifest's
    `custom_test_dirs` are loaded too)."""
    try:
        selection = Selection(level=option("torchcts_level"), dtypes=dtypes_option(option("torchcts_dtypes")),
                              op_patterns=tuple(option("torchcts_ops") or ()),
                              shard=check_shard(option("torchcts_shard")),
                              capabilities=check_capabilities(option("torchcts_capabilities")),
                              last_failed=_last_failed(option("torchcts_last_failed_from")))
        if not defer_properties:
            selection = attrs.evolve(selection, properties=check_properties(option("torchcts_properties"),
                                                                            [p.name for p in registry.load()]))
    except SelectionError as exc:
        raise SessionError(str(exc)) from None
    seed, max_examples = option("torchcts_seed"), option("torchcts_max_examples")
    if seed is not None and not 0 <= seed <= MAX_SEED:
        raise SessionError(f"--seed must be an integer from 0 to {MAX_SEED} (2**64 - 1), got {shown(seed)}")
    if max_examples is not None and not 1 <= max_examples <= MAX_EXAMPLES:
        raise SessionError(f"--max-examples must be an integer from 1 to {MAX_EXAMPLES}, got {shown(max_examples)}")
    timeout = option("torchcts_item_timeout")
    if timeout is not None and not timeout >= 1:  # also NaN
        raise SessionError(f"--item-timeout must be at least 1 second, got {timeout}")
    folders = [("--results-dir", option("torchcts_results_dir"))]
    if not option("torchcts_replay"):  # a replay writes no counterexamples
        given = option("torchcts_corpus_dir")  # the raw string where given: Path("") would read as "."
        folders.append(("--corpus-dir", given if given is not None else str(corpus_dir(option))))
    for name, folder in folders:
        problem = output_folder_problem(folder)
        if problem is not None:
            raise SessionError(f"{name} {shown(str(folder))}: {problem}")
    ledger = option("torchcts_known_crashes")
    problem = input_file_problem(ledger) if ledger is not None else None
    if problem is not None:
        raise SessionError(f"--known-crashes: {problem}")
    return selection, seed, max_examples


def device_kind(name: str) -> str:
    """The device type a device string names; PrivateUse1 under its registered name (`faulty`, not `privateuseone`)."""
    try:
        return torch.device(name).type
    except (RuntimeError, ValueError, TypeError):  # a backend not imported here: its name as written
        kind = name.split(":", 1)[0]
        return torch._C._get_privateuse1_backend_name() if kind in ("privateuseone", "privateuse1") else kind


def device_name_warning(manifest: Manifest | None, device: str, validation: bool) -> str | None:
    """A warning when the manifest names another device type than --device (a validation run ignores it)."""
    if manifest is None or validation or manifest.device_name == "auto":
        return None
    if device_kind(manifest.device_name) == device_kind(device):
        return None
    return (f"{manifest.source}: device_name is {manifest.device_name!r} but this run tests --device {device}: "
            f"its claims may be another backend's")


def hash_seed_warning(derandomize: bool) -> str | None:
    """A derandomized run under a random hash seed may draw other cases (`torchcts.hash_seed`)."""
    if not derandomize or not sys.flags.hash_randomization:  # the interpreter's state (`python -E` ignores the variable)
        return None
    return (f"PYTHONHASHSEED is not {HASH_SEED}: OpInfo samples that iterate sets (meshgrid) may differ from other "
            f"derandomized runs; set PYTHONHASHSEED={HASH_SEED} (the torchcts command does)")


def start_checks(device: str) -> tuple[Any, ...]:
    """`check_device`, then the device's findings (`device_findings.probe`: a defect of the whole device, such as no
    index, said once). Both run backend code (its allocator, its copies): under `backend_exits.guard()`, so a backend
    that calls sys.exit or os._exit, or signals its own process, is one SessionError naming where, not a silent end."""
    from torchcts import backend_exits

    try:
        with backend_exits.guard():
            check_device(device)
            return device_findings.probe(device)
    except BaseException as exc:
        if isinstance(exc, Exception):
            raise  # a SessionError already
        if not backend_exits.is_backend_exit(exc):
            raise backend_exits.users_stop(exc)  # the user's Ctrl-C
        raise SessionError(f"--device {shown(device)}: the backend ended TorchCTS's device check: "
                           f"{backend_exits.describe(exc)}") from None


def check_device(device: str) -> None:
    """`device` parses, and this Python environment can allocate on exactly that device (index included).
    `faulty` registers the test device first: naming it is asking for it (`torchcts.testing.faulty_autoload`)."""
    from torchcts.testing.faulty_autoload import enable_for_device

    try:
        enable_for_device(device)
    except (RuntimeError, ValueError) as exc:  # PrivateUse1 is another backend's; an unknown TORCHCTS_FAULTY_BUGS name
        raise SessionError(f"--device {shown(device)}: {first_line(exc, limit=600)}") from None
    try:
        wanted = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise SessionError(f"--device {shown(device)} is not a device string torch knows: {first_line(exc)}") from None
    try:
        got = torch.empty(1, device=device).device
    except Exception as exc:  # noqa: BLE001 - whatever the backend raises, the device is not usable
        raise SessionError(f"--device {shown(device)} is not available in this Python environment ({sys.executable}): "
                           f"{type(exc).__name__}: {first_line(exc)}") from None
    if wanted.index is not None and (got.index or 0) != wanted.index:
        raise SessionError(f"--device {shown(device)}: {wanted.type} has no device {wanted.index} here (a tensor "
                           f"asked for on it landed on {got}); use an index below the device count")


def first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, cut short: CUDA and dispatcher errors run to paragraphs."""
    lines = str(exc).strip().splitlines()
    line = lines[0] if lines else type(exc).__name__
    return line if len(line) <= limit else line[:limit - 3] + "..."


def dtypes_option(names: list[str] | None) -> tuple[torch.dtype, ...] | None:
    if not names:
        return None
    chosen = []
    for name in names:
        for part in name.split(","):
            dtype = dtype_names.lookup(part.strip())
            if dtype is None or dtype not in dtype_names.CLAIMABLE_DTYPES:
                raise SessionError(f"--dtype {shown(part)} is not a dtype TorchCTS tests; "
                                   f"choose from {', '.join(dtype_names.claimable_names())}")
            chosen.append(dtype)
    return tuple(chosen)
