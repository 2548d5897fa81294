"""One conformance run inside a pytest session: options, manifest, plan, seeds, results.

The plugin's hooks delegate here. A session turns the command line and the manifest into a
plan, writes the accounting records for everything not run, hands each property test its
`CaseContext`, turns each test's pytest report into a result record, prints progress, and closes
the run as complete or partial.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import torch

import torchcts
from torchcts import dtypes as dtype_names
from torchcts.cases.files import CaseFileError
from torchcts.cases.store import store_failure
from torchcts.crashes.history import crash_evidence
from torchcts.isolation.fork import fork_safe, run_forked
from torchcts.isolation.policy import DEFAULT_ITEM_TIMEOUT_S, IsolationPolicy
from torchcts.crashes.ledger import LOCAL_NAME, LedgerError, audit_lines, ledger_rules, torch_minor
from torchcts.cases.limits import CaseLimits
from torchcts.cases.replay import ReplayItem, replay_items, replayable
from torchcts.cli.hash_seed import HASH_SEED
from torchcts.engine.context import BackendError, CaseContext, item_seed
from torchcts.manifest import Manifest, ManifestError, environment_problems, load_manifest
from torchcts.plan.catalog import find_op
from torchcts.engine.targets import Target
from torchcts.plan.build import PROPERTY_BY_NAME, Plan, PlanItem, Selection, SelectionError, build_plan
from torchcts.arguments import MAX_EXAMPLES, MAX_SEED, input_file_problem, output_folder_problem, shown
from torchcts.results.writer import RunFolderError, RunWriter, hardware_key

PROGRESS_EVERY_S = 15.0
TRACE_ENV = "TORCHCTS_TRACE_DEVICE_OPS"
HARNESS_THREADS = 1  # one intra-op thread: stable timings, and 10x faster sweeps on 2 cores here


class SessionError(Exception):
    """A run that cannot start: the message says what to fix."""


class AuditDone(Exception):
    """`--known-segfault-audit` ran instead of the run: its lines, and whether every rule matched."""

    def __init__(self, lines: list[str], ok: bool):
        super().__init__("known-crash audit")
        self.lines, self.ok = lines, ok


class RunSession:
    def __init__(self, config: pytest.Config, manifest: Manifest | None, target: Target, plan: Plan,
                 selection: Selection, writer: RunWriter, run_seed: int | None, max_examples: int, level: int,
                 replaying: list[ReplayItem] | None = None, isolation: IsolationPolicy = IsolationPolicy()):
        self.config = config
        self.manifest = manifest
        self.target = target
        self.device = target.device
        self.plan = plan
        self.selection = selection
        self.writer = writer
        self.run_seed = run_seed
        self.max_examples = max_examples
        self.level = level
        self.replaying = replaying  # replay items when --corpus is given, instead of the plan's
        self.total = len(replaying) if replaying is not None else len(plan.items)
        self.corpus_dir = Path(config.getoption("torchcts_corpus_dir"))
        self.new_cases = 0
        self.isolation = isolation
        self.in_child = False  # set in a forked child running one isolated item
        self.isolating: str | None = None  # why the item being run in a child is isolated
        self.last_outcome = ""
        self.environment_key = writer.environment.get("hardware_key")
        self.versions = f"torch={torch.__version__};hypothesis={hypothesis.__version__};torchcts={torchcts.__version__}"
        self.done = 0
        self.problems = 0
        self.started = time.monotonic()
        self.last_progress = self.started
        self.finished = False
        # `torchcts selftest` asks the faulty device which aten overloads each item ran
        self.trace_device_ops = os.environ.get(TRACE_ENV) == "1" and target.device_type == "faulty"

    # -- start ---------------------------------------------------------------------------------

    @classmethod
    def start(cls, config: pytest.Config) -> "RunSession":
        option = config.getoption
        validation = option("torchcts_validation")
        device = option("torchcts_device")
        if device is not None and not device.strip():
            raise SessionError(f"--device {device!r} is empty; name a device: cpu, cuda, cuda:1, meta, or a backend's")
        device = device or "cpu"
        if validation and _device_kind(device) != "cpu":
            raise SessionError(f"--validation runs against CPU itself; it cannot be combined with --device {shown(device)}")
        # everything typed is checked before the manifest loads, the backend imports or a folder is made
        selection, seed, max_examples = _checked_options(option)
        replay_paths = option("torchcts_corpus")
        manifest_path = Path(option("torchcts_manifest") or "manifest.py")
        if replay_paths and option("torchcts_manifest") is None and not manifest_path.exists():
            manifest = None  # replaying needs no claims; a manifest only adds tolerance overrides
        else:
            problem = input_file_problem(manifest_path)
            if problem is not None:
                raise SessionError(f"--manifest: {problem}")
            try:
                manifest, _ = load_manifest(manifest_path)
            except ManifestError as exc:
                raise SessionError(f"TorchCTS manifest is invalid:\n{exc.render()}") from None
            _import_backend(manifest)
        _check_device(device)
        target = Target(device, option("torchcts_compile"))
        level = selection.level
        derandomize = option("torchcts_derandomize")
        if derandomize and seed is not None:
            raise SessionError("--seed and --derandomize exclude each other: derandomized seeds come from item ids")
        if derandomize is None and manifest is not None:  # an explicit --seed overrides the manifest's
            derandomize = manifest.hypothesis.derandomize and seed is None
        run_seed = None if derandomize else (seed if seed is not None else random.SystemRandom().randrange(2**32))
        if derandomize is None:
            derandomize = False
        warnings = [w for w in [_device_name_warning(manifest, device, validation),
                                _hash_seed_warning(bool(derandomize))] if w]
        for warning in warnings:  # stderr, at once: a long run's summary comes too late to stop it
            print(f"torchcts: warning: {warning} (recorded in run.json)", file=sys.stderr, flush=True)
        max_examples = max_examples or (manifest.hypothesis.max_examples if manifest else 1)
        torch.set_num_threads(HARNESS_THREADS)
        limits = CaseLimits.from_option(option("torchcts_max_case_bytes"))
        replaying = replay_items(replay_paths, limits) if replay_paths else None  # unreadable files: items that say why
        plan = build_plan(manifest, selection) if replaying is None else Plan((), ())
        environment = {
            "device": device, "compile": target.compile_backend, "validation": bool(validation), "hardware_key": hardware_key(device),
            "torch": torch.__version__, "torchcts": torchcts.__version__, "hypothesis": hypothesis.__version__,
            "python": sys.version.split()[0], "python_hash_seed": os.environ.get("PYTHONHASHSEED"), "seed": run_seed, "derandomize": bool(derandomize),
            "max_examples": max_examples, "level": level or (manifest.semantic_level if manifest else None),
            "manifest": str(manifest.source) if manifest else None,
            "manifest_hash": manifest.fingerprint() if manifest else None,
            "replay": [str(p) for p in replay_paths] if replay_paths else None,
            "selection": {"dtypes": option("torchcts_dtypes"), "ops": option("torchcts_ops"),
                          "properties": option("torchcts_properties"), "level": level},
            "capabilities": sorted(manifest.capabilities) if manifest else [],
            "property_capabilities": {p.name: p.capability for p in PROPERTY_BY_NAME.values()},
            # special values enter every property's cases but layout's where ieee754 is claimed
            "capability_also_tested_by": {"ieee754": [p for p in PROPERTY_BY_NAME if p not in ("layout", "errors")]},
            "planned_items": len(plan.items) if replaying is None else len(replaying),
            "harness_threads": HARNESS_THREADS,
            "warnings": warnings,  # e.g. a manifest written for another device type (printed at the start)
        }
        rules = _crash_rules(option, manifest_path, target)
        if option("torchcts_known_segfault_audit"):
            lines, ok = audit_lines(list(rules), list(plan.items) + [a.item for a in plan.accounting],
                                    target.device_type, torch_minor())
            raise AuditDone([f"known-crash ledger: {len(rules)} rules, {len(plan.items)} items would run"] + lines, ok)
        results_dir = Path(option("torchcts_results_dir"))
        isolation = _isolation_policy(option, rules, target, results_dir, environment)
        environment["isolation"] = isolation.describe() if fork_safe(target.device_type) else \
            f"unavailable: {target.device_type} does not survive a fork"
        try:
            writer = RunWriter(results_dir, environment)
        except RunFolderError as exc:
            raise SessionError(f"--results-dir: {exc}") from None
        for entry in plan.accounting:
            writer.record({**entry.item.as_json(), "outcome": entry.outcome, "reason": entry.reason})
        return cls(config, manifest, target, plan, selection, writer, run_seed, max_examples,
                   level or (manifest.semantic_level if manifest else 8), replaying, isolation)

    def header(self) -> list[str]:
        seed = "derandomized (seeds from item ids)" if self.run_seed is None else f"seed {self.run_seed} (--seed to repeat)"
        manifest = self.manifest.source if self.manifest else "none"
        if self.replaying is not None:
            return [f"torchcts: replaying {self.total} corpus cases on {self.target.describe()}, manifest {manifest}, "
                    f"results in {self.writer.folder}"]
        return [f"torchcts: device {self.target.describe()}, manifest {manifest}, level {self.level}, {seed}",
                f"torchcts: {len(self.plan.items)} items to run, {len(self.plan.accounting)} not run (recorded "
                f"with reasons), results in {self.writer.folder}"]

    # -- items ---------------------------------------------------------------------------------

    def items_for(self, property_name: str) -> list[PlanItem | ReplayItem]:
        if property_name not in PROPERTY_BY_NAME:
            raise pytest.UsageError(f"property function test_{property_name} has no entry in torchcts.plan.build.PROPERTIES")
        if self.replaying is not None:
            return [item for item in self.replaying if item.property == property_name]
        return list(self.plan.for_property(property_name))

    def context_for(self, item: PlanItem | ReplayItem) -> CaseContext:
        self.writer.mark_started(item.id)
        if isinstance(item, ReplayItem):
            return self._replay_context(item)
        if self.trace_device_ops:
            from torchcts.testing import faulty

            faulty.start_trace()
        return CaseContext(item=item, op=find_op(item.op), dtype=dtype_names.lookup(item.dtype), target=self.target,
                           manifest=self.manifest, level=self.level, max_examples=self.max_examples,
                           seed=item_seed(item.id, self.run_seed, self.versions),
                           deadline_ms=self.manifest.hypothesis.deadline_ms,
                           shrink=not self.config.getoption("torchcts_no_shrink"))

    def _replay_context(self, item: ReplayItem) -> CaseContext:
        # an unreadable file raises UnreadableCase: an `error` record, one line in pytest's output
        case, cases = replayable(item, CaseLimits.from_option(self.config.getoption("torchcts_max_case_bytes")))
        return CaseContext(item=item, op=find_op(case.op), dtype=dtype_names.lookup(case.dtype), target=self.target,
                           manifest=self.manifest, level=self.level, max_examples=1, seed=0, replay=cases)

    def record_deselected(self, item: PlanItem, reason: str) -> None:
        self.writer.record({**item.as_json(), "outcome": "deselected", "reason": reason})

    def record_result(self, item: PlanItem, context: CaseContext | None, report: pytest.TestReport,
                      call: pytest.CallInfo) -> None:
        outcome, reason, error = _outcome(report, call)
        record = {**item.as_json(), "outcome": outcome, "reason": reason, "error": error,
                  "duration_s": round(report.duration, 4), "counterexample": None}
        if context is not None:
            record.update(context.record_fields())
            if outcome in ("failed", "error") and context.failing_case is not None and self.replaying is None:
                record.update(self._save_counterexample(item, context, outcome, error))
                self.new_cases += bool((record.get("counterexample") or {}).get("new"))
        if self.trace_device_ops:
            from torchcts.testing import faulty

            record["device_ops"] = faulty.take_trace()
        if self.isolating:
            record["isolated"] = self.isolating
        self.writer.record(record)
        self._count(outcome)

    def _count(self, outcome: str) -> None:
        self.last_outcome = outcome
        self.done += 1
        self.problems += outcome in ("failed", "error", "crashed", "timed_out")
        self._progress()

    def run_isolated(self, item: pytest.Item, plan_item: PlanItem | ReplayItem,
                     nextitem: pytest.Item | None) -> bool | None:
        """Run a pytest item in a forked child if the policy says so (True), else None.

        The child runs the item as this process would and writes its record; a child that dies
        or overruns the timeout becomes a `crashed` or `timed_out` record written here."""
        if self.in_child or not fork_safe(self.target.device_type):
            reason = None
        elif isinstance(plan_item, ReplayItem):
            reason = "a crash case" if plan_item.crash else None
        else:
            reason = self.isolation.reason(plan_item)
        if reason is None:
            return None
        from _pytest.reports import TestReport
        from _pytest.runner import runtestprotocol

        hook = item.config.hook
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        self.writer.mark_started(plan_item.id)

        def work():
            self.in_child, self.isolating = True, reason
            reports = runtestprotocol(item, log=False, nextitem=None)
            return {"reports": [hook.pytest_report_to_serializable(config=item.config, report=r) for r in reports],
                    "outcome": self.last_outcome}

        result = run_forked(work, self.isolation.timeout_s)
        if result.status == "finished":
            for data in result.answer["reports"]:
                item.ihook.pytest_runtest_logreport(report=hook.pytest_report_from_serializable(config=item.config,
                                                                                                 data=data))
            if result.answer["outcome"]:
                self.writer.count(result.answer["outcome"])  # the child wrote the record
            self._count(result.answer["outcome"])
        else:
            outcome = "crashed" if result.status == "crashed" else "timed_out"
            self.writer.record({**plan_item.as_json(), "outcome": outcome, "reason": result.describe(),
                                "error": result.output_tail, "duration_s": round(result.duration_s, 4),
                                "signal": result.signal_name or None, "isolated": reason, "counterexample": None})
            self._count(outcome)
            longrepr = f"{outcome}: {result.describe()} (isolated: {reason})\n{result.output_tail[-2000:]}"
            item.ihook.pytest_runtest_logreport(report=TestReport(
                item.nodeid, item.location, {}, "failed", longrepr, "call", duration=result.duration_s))
        item.session._setupstate.teardown_exact(nextitem)  # what pytest would have torn down after the item
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def _save_counterexample(self, item: PlanItem, context: CaseContext, outcome: str,
                             error: str | None) -> dict[str, Any]:
        """Store the item's shrunk failing case in the corpus; the record's reference to it."""
        found = {"run_seed": self.run_seed, "derandomize": self.run_seed is None, "run_id": self.writer.run_id,
                 "hardware_key": self.environment_key}
        flags = f"--device {self.device}" + (f" --compile {self.target.compile_backend}"
                                             if self.target.compile_backend else "")
        return store_failure(context, outcome=outcome, error=error, corpus_dir=self.corpus_dir, found=found,
                             replay_flags=flags)

    def _progress(self) -> None:
        now = time.monotonic()
        if now - self.last_progress < PROGRESS_EVERY_S:
            return
        self.last_progress = now
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        line = (f"torchcts: {self.done}/{self.total} items, {self.problems} failed or errored, "
                f"{now - self.started:.0f} s elapsed")
        if reporter is not None:
            reporter.write_line(line)

    # -- end -----------------------------------------------------------------------------------

    def finish(self, interrupted: bool) -> None:
        if self.finished:
            return
        self.finished = True
        from torchcts import interrupts

        with interrupts.deferred(raise_at_end=False):  # a second Ctrl-C or SIGTERM now must not leave run.json `running`
            signal = interrupts.signal_name()  # set even when the signal's exception was swallowed
            interrupted = interrupted or signal is not None
            complete = not interrupted and self.done >= self.total
            self.writer.close("complete" if complete else "partial",
                              interrupted={"signal": signal} if interrupted else None)

    def summary_lines(self) -> list[str]:
        counts = ", ".join(f"{name} {count}" for name, count in sorted(self.writer.outcomes.items()))
        seed = "derandomized" if self.run_seed is None else f"seed {self.run_seed} (--seed {self.run_seed} repeats it)"
        if self.replaying is not None:
            seed = "corpus replay"
        lines = [f"torchcts: results in {self.writer.folder} ({counts}); {seed}"]
        if self.new_cases:
            lines.append(f"torchcts: {self.new_cases} new counterexample(s) in {self.corpus_dir}; each failing "
                         f"record names its replay command")
        return lines


def _outcome(report: pytest.TestReport, call: pytest.CallInfo) -> tuple[str, str, str | None]:
    """(outcome, reason, error summary) for one executed item."""
    if report.passed:
        return "passed", "", None
    if report.skipped:
        message = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        message = message.removeprefix("Skipped: ")
        if message.startswith("cpu_contract"):
            return "cpu_contract", message, None
        return "runtime_unavailable", message.removeprefix("runtime_unavailable: "), None
    excinfo = call.excinfo
    summary = _summary(excinfo.value) if excinfo is not None else str(report.longrepr)[:2000]
    if excinfo is not None and excinfo.errisinstance(CaseFileError):
        return "error", "the corpus case cannot be replayed", summary
    if report.when != "call":
        return "error", f"harness: the item failed during {report.when}", summary
    if excinfo is not None and excinfo.errisinstance(BackendError):
        return "error", "the backend raised where the CPU oracle did not", summary
    if excinfo is not None and excinfo.errisinstance(AssertionError):
        return "failed", "the backend's result differs from the CPU oracle's", summary
    return "error", "harness: unexpected exception (a TorchCTS bug, or a backend crash in Python)", summary


def _summary(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    notes = getattr(exc, "__notes__", None)
    if notes:
        text += "\n" + "\n".join(str(n) for n in notes)
    return text[:4000]


def _isolation_policy(option: Any, rules: tuple[Any, ...], target: Target, results_dir: Path,
                      environment: dict[str, Any]) -> IsolationPolicy:
    """What runs isolated: everything, ledger matches, and items with earlier crash or hang evidence."""
    if not fork_safe(target.device_type):
        if option("torchcts_subprocess_per_test"):
            raise SessionError(f"--subprocess-per-test forks the process, which {target.device_type} does not "
                               "survive once initialised; run without it")
        return IsolationPolicy(device_type=target.device_type)  # nothing can be isolated by forking
    evidence = crash_evidence(results_dir, environment) if option("torchcts_adaptive_isolation") == "auto" else {}
    return IsolationPolicy(everything=bool(option("torchcts_subprocess_per_test")), rules=rules, evidence=evidence,
                           device_type=target.device_type, torch_version=torch_minor(),
                           timeout_s=option("torchcts_item_timeout") or DEFAULT_ITEM_TIMEOUT_S)


def _crash_rules(option: Any, manifest_path: Path, target: Target) -> tuple[Any, ...]:
    """The known-crash rules in force (none with --known-segfault-policy off)."""
    local = option("torchcts_known_crashes")
    if local is not None and not Path(local).exists():
        raise SessionError(f"--known-crashes {local}: no such file")
    try:
        return tuple(ledger_rules(option("torchcts_known_segfault_policy"),
                                  Path(local) if local else manifest_path.parent / LOCAL_NAME))
    except LedgerError as exc:
        raise SessionError(f"known-crash ledger: {exc}") from None


def _import_backend(manifest: Manifest) -> None:
    """Import the manifest's backend module; one that raises, exits or kills its process is a SessionError."""
    from torchcts.manifest.load import BackendImportError, import_backend

    if manifest.backend_import is None:
        return
    try:
        import_backend(manifest.backend_import)
    except BackendImportError as exc:
        problems = "; ".join(p.render() for p in environment_problems(manifest))
        raise SessionError(f"{manifest.source}: backend_import {manifest.backend_import!r} failed: {exc}"
                           + (f" ({problems})" if problems else "")) from None


def _checked_options(option: Any) -> tuple[Selection, int | None, int | None]:
    """(selection, --seed, --max-examples) after checking every option a user types; SessionError names the bad one.

    Runs before the manifest loads and before anything is written, so a typo costs nothing: output
    folders must be creatable and writable, input files regular files, numbers in range."""
    try:
        selection = Selection(level=option("torchcts_level"), dtypes=_dtypes(option("torchcts_dtypes")),
                              op_patterns=tuple(option("torchcts_ops") or ()),
                              properties=_properties(option("torchcts_properties")))
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
    if not option("torchcts_corpus"):  # a replay writes no counterexamples
        folders.append(("--corpus-dir", option("torchcts_corpus_dir")))
    for name, folder in folders:
        problem = output_folder_problem(folder)
        if problem is not None:
            raise SessionError(f"{name} {shown(str(folder))}: {problem}")
    ledger = option("torchcts_known_crashes")
    problem = input_file_problem(ledger) if ledger is not None else None
    if problem is not None:
        raise SessionError(f"--known-crashes: {problem}")
    return selection, seed, max_examples


def _device_kind(name: str) -> str:
    """The device type a device string names; PrivateUse1 under its registered name (`faulty`, not `privateuseone`)."""
    try:
        return torch.device(name).type
    except (RuntimeError, ValueError, TypeError):  # a backend not imported here: its name as written
        kind = name.split(":", 1)[0]
        return torch._C._get_privateuse1_backend_name() if kind in ("privateuseone", "privateuse1") else kind


def _device_name_warning(manifest: Manifest | None, device: str, validation: bool) -> str | None:
    """A warning when the manifest names another device type than --device (a validation run ignores it)."""
    if manifest is None or validation or manifest.device_name == "auto":
        return None
    if _device_kind(manifest.device_name) == _device_kind(device):
        return None
    return (f"{manifest.source}: device_name is {manifest.device_name!r} but this run tests --device {device}: "
            f"its claims may be another backend's")


def _hash_seed_warning(derandomize: bool) -> str | None:
    """A derandomized run under a random hash seed may draw other cases (`torchcts.cli.hash_seed`)."""
    if not derandomize or not sys.flags.hash_randomization:  # the interpreter's state (`python -E` ignores the variable)
        return None
    return (f"PYTHONHASHSEED is not {HASH_SEED}: OpInfo samples that iterate sets (meshgrid) may differ from other "
            f"derandomized runs; set PYTHONHASHSEED={HASH_SEED} (the torchcts command does)")


def _check_device(device: str) -> None:
    """`device` parses, and this Python environment can allocate on exactly that device (index included)."""
    try:
        wanted = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise SessionError(f"--device {shown(device)} is not a device string torch knows: {_first_line(exc)}") from None
    try:
        got = torch.empty(1, device=device).device
    except Exception as exc:  # noqa: BLE001 - whatever the backend raises, the device is not usable
        raise SessionError(f"--device {shown(device)} is not available in this Python environment ({sys.executable}): "
                           f"{type(exc).__name__}: {_first_line(exc)}") from None
    if wanted.index is not None and (got.index or 0) != wanted.index:
        raise SessionError(f"--device {shown(device)}: {wanted.type} has no device {wanted.index} here (a tensor "
                           f"asked for on it landed on {got}); use an index below the device count")


def _first_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message, cut short: CUDA and dispatcher errors run to paragraphs."""
    lines = str(exc).strip().splitlines()
    line = lines[0] if lines else type(exc).__name__
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _dtypes(names: list[str] | None) -> tuple[torch.dtype, ...] | None:
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


def _properties(names: list[str] | None) -> tuple[str, ...] | None:
    if not names:
        return None
    unknown = [n for n in names if n not in PROPERTY_BY_NAME]
    if unknown:
        raise SessionError(f"--property {shown(unknown[0])} is unknown; choose from {', '.join(PROPERTY_BY_NAME)}")
    return tuple(names)
