"""Running one item: `run_item(item, settings)` builds its context, runs its property's check, and
returns the item's result record (JSON-ready; docs/results.md). No pytest.

Every front end is an adapter over this function: the pytest plugin writes and presents the
record, fuzz workers run items with their own seeds and `targeting`, replay runs `ReplayItem`s
(stored cases instead of draws). An item the isolation policy names runs in a forked child
(`isolation.fork`), or, where the device does not survive a fork (or `--isolation-start spawn`), in a
worker of the spawned pool (`engine.spawned_items` over `isolation.spawn`): either runs it here and sends back its record; a
child or worker that dies or overruns is a `crashed` or `timed_out` record with the end of its
output. Cases of an item a
CPU-oracle crash rule matches each run in their own child (`CaseContext.case_isolation`).
Python warnings raised while an item runs go to its record (`item_warnings`), not the terminal.
Code under test that exits (sys.exit, os._exit, a signal to its own process) ends its item, not the run
(`backend_exits`).
A missing kernel is stored once per overload (`cases.store`), not once per item. A failure under
torch.compile is blamed on the leg that first shows it (`engine.blame`: its stored case replayed under
eager, aot_eager and the backend), within the run's budget of blamed cases.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Callable

import attrs

from torchcts import backend_exits
from torchcts.core import record as typed_record
from torchcts.core.typed_json import RecordError
from torchcts import dtypes as dtype_names
from torchcts.disk import WriteError
from torchcts.core.case_limits import CaseLimits
from torchcts.cases.replay_items import ReplayItem, replayable
from torchcts.cases.store import store_failure
from torchcts.engine import device_ops_trace, item_warnings, memory_cleanup
from torchcts.engine.blame import DEFAULT_BLAME_CASES, blame_failure, use_item_runner
from torchcts.engine.context import CaseContext, item_seed
from torchcts.engine.dispatch_trace import DispatchTrace
from torchcts.engine.outcome import PASSED, Verdict, classify, error_text, first_line, setup_failure
from torchcts.engine.replay_manifest import own_capability, replay_manifest
from torchcts.engine.spawned_items import run_spawned
from torchcts.engine.targets import Target, reset_compiled
from torchcts.isolation.fork import ForkResult, fork_safe, run_forked
from torchcts.isolation.policy import DEFAULT_ITEM_TIMEOUT_S, SPAWN, start_method
from torchcts.core.outcomes import PROBLEMS, Outcome, parse
from torchcts.plan import registry
from torchcts.plan.catalog import find_op
from torchcts.strategies.probes import cpu_probes

HARNESS_THREADS = 1  # intra-op threads every front end sets: stable timings, and 10x faster sweeps on small machines


def versions() -> str:
    """What a derandomized item's seed is derived from besides its id: the torch, Hypothesis and TorchCTS versions."""
    import hypothesis
    import torch

    import torchcts

    return f"torch={torch.__version__};hypothesis={hypothesis.__version__};torchcts={torchcts.__version__}"


@attrs.frozen(eq=False)
class EngineSettings:
    """What every item of a run shares: the target, the claims, the draw settings, where failures go.

    `run_seed` None is derandomized (seeds from item ids and `versions()`). `corpus_dir` None stores
    no counterexamples; `found` and `replay_flags` go into the stored cases. `targeting` steers
    Hypothesis toward larger errors (fuzz); `case_timeout_s` runs every case in a forked child (a
    crash hunt). `isolation` (an `IsolationPolicy`, or None) says which items run in a forked child.
    """

    target: Target
    manifest: Any
    level: int
    max_examples: int
    run_seed: int | None = None
    versions: str = attrs.field(factory=versions)
    deadline_ms: float | None = None
    shrink: bool = True
    corpus_dir: Path | None = None
    found: dict[str, Any] = attrs.field(factory=dict)
    replay_flags: str = ""
    targeting: bool = False
    case_timeout_s: float | None = None
    isolation: Any = None
    trace_device_ops: bool = False
    trace_dispatch: bool = False  # records carry `dispatched` (`engine.dispatch_trace`); never under torch.compile
    show_traceback: bool = False
    case_limits: CaseLimits = CaseLimits()
    draw: Any = None  # `hypothesis_profile.DrawSettings`: profile, verbosity, statistics (None: Hypothesis's current)
    replay_shape_mode: str | None = None  # a replay's --shape-mode; None: each compile case in its own mode
    blame_cases: int = DEFAULT_BLAME_CASES  # compiled failures whose leg is blamed per run (`engine.blame`)
    # how a spawned worker readies the device as this process did (`device_setup.DeviceSetup`; None: no setup)
    device_setup: Any = None


def run_item(item: Any, settings: EngineSettings, *, seed: int | None = None,
             max_examples: int | None = None) -> dict[str, Any]:
    """Run one item (a `PlanItem` or a `ReplayItem`) and return its result record.

    `seed` and `max_examples` override the item's derived seed and the settings' example count
    (fuzz). The record's `outcome` is an `Outcome`; its fields are the typed record's (`core.record`: a field it
    does not name, or a value of the wrong type, is a TorchCTS defect: the item's record is then a harness error
    naming the field). The user's Ctrl-C,
    SIGTERM and SIGHUP propagate: an interrupted item has no record. Code under test that calls sys.exit, raises
    KeyboardInterrupt itself, calls os._exit or signals its own process gets its record (`backend_exits`: error or
    crashed, naming where)."""
    started = time.monotonic()
    record = _run_item(item, settings, seed=seed, max_examples=max_examples)
    if settings.target.compile is not None and not isinstance(item, ReplayItem) \
            and parse(record.get("outcome")) in PROBLEMS:
        # which compile leg first shows it (`engine.blame`), here in the run's process after the item's child or
        # worker returned: the run's budget and the item's timeout are not spent in a child, and a crashed or
        # timed-out item is `not-blamed` with the reason
        record.update(blame_failure(record, settings))
    try:
        return typed_record.checked(record)
    except RecordError as exc:  # a producer filled a field the record does not allow: the item keeps a record
        reason = f"harness: the item's record is invalid, a TorchCTS defect: {exc}"
        verdict = Verdict(Outcome.ERROR, reason, reason, "harness", first_line(reason))
        return typed_record.checked(_record(item, verdict, time.monotonic() - started))


def _run_item(item: Any, settings: EngineSettings, *, seed: int | None,
              max_examples: int | None) -> dict[str, Any]:
    started = time.monotonic()
    try:
        reason = isolation_reason(item, settings)
        if reason is None:
            return run_here(item, settings, seed=seed, max_examples=max_examples)
        if start_method(settings.isolation, settings.target.device_type) == SPAWN:
            return _run_spawned(item, settings, reason, seed=seed, max_examples=max_examples)
        _load_op_database_here(item)
        return _run_isolated(item, settings, reason, lambda: run_here(item, settings, seed=seed,
                                                                        max_examples=max_examples))
    except Exception as exc:  # noqa: BLE001 - raised outside the check (storing, tracing): the item keeps a record
        verdict = Verdict(Outcome.ERROR, "harness: the item's run raised outside its property check",
                          error_text(exc, show_traceback=True), "harness", first_line(error_text(exc)))
        return _record(item, verdict, time.monotonic() - started)
    except BaseException as exc:  # sys.exit, a KeyboardInterrupt no signal raised: the item keeps a record
        if not backend_exits.is_backend_exit(exc):
            raise backend_exits.users_stop(exc)  # the user's Ctrl-C or SIGTERM stops the run
        return _record(item, backend_exit_verdict(exc), time.monotonic() - started)


def _load_op_database_here(item: Any) -> None:
    """The op database, loaded in this process before an item's child forks: every child inherits it instead of
    importing it again (1.5-2 s of CPU per isolated item; a `--subprocess-per-test` run paid it for every item)."""
    if getattr(item, "problem", None) is None and item.variant != "scenario":
        try:
            find_op(item.op)
        except KeyError:
            pass  # the child meets it again, inside the item's run, and its record says so as before


def isolation_reason(item: Any, settings: EngineSettings) -> str | None:
    """Why the item runs isolated (in a forked child or a spawned worker), or None to run it in this process."""
    if isinstance(item, ReplayItem):
        if item.crash:
            return "a crash case"
        if settings.target.compile is not None and fork_safe(settings.target.device_type):
            # dynamo's caches and shape history are per process: the case compiles as it did when it was found alone
            return "a compile case replays in a fresh process"
        return None
    policy = settings.isolation
    return policy.reason(item) if policy is not None else None


def run_here(item: Any, settings: EngineSettings, *, seed: int | None = None,
             max_examples: int | None = None) -> dict[str, Any]:
    """Run the item in this process: its record, with the warnings it raised (`item_warnings`)."""
    with item_warnings.capture() as log, backend_exits.guard():  # os._exit, a signal to itself: the item's record
        record = _run_here(item, settings, seed=seed, max_examples=max_examples)
        _clean_up(record, settings)
    record.update(log.record_fields())
    return record


def _clean_up(record: dict[str, Any], settings: EngineSettings) -> None:
    """Empty the device's cache when its memory runs full (`memory_cleanup`): backend code, run inside the item's
    guard. Whatever it raises or however it leaves (sys.exit, os._exit) the item keeps its record, which says so in
    `cleanup_error`; the user's interrupt propagates."""
    try:
        memory_cleanup.cleanup_if_needed(settings.target.device_type, settings.manifest)
    except Exception as exc:  # noqa: BLE001 - housekeeping: the item's verdict stands
        record["cleanup_error"] = first_line(error_text(exc))
    except BaseException as exc:
        if not backend_exits.is_backend_exit(exc):
            raise backend_exits.users_stop(exc)
        record["cleanup_error"] = first_line(backend_exits.describe(exc))


def _run_here(item: Any, settings: EngineSettings, *, seed: int | None = None,
              max_examples: int | None = None) -> dict[str, Any]:
    started = time.monotonic()
    try:
        context = build_context(item, settings, seed=seed, max_examples=max_examples)
    except Exception as exc:  # noqa: BLE001 - an unreadable case file, an op this torch lacks: a record says so
        verdict = setup_failure(exc, show_traceback=settings.show_traceback)
        return _record(item, verdict, time.monotonic() - started)
    except BaseException as exc:
        if not backend_exits.is_backend_exit(exc):
            raise backend_exits.users_stop(exc)
        return _record(item, backend_exit_verdict(exc, settings.show_traceback), time.monotonic() - started)
    if settings.trace_dispatch and settings.target.compile_backend is None:
        context.dispatch_trace = DispatchTrace(settings.target.device_type)
    if settings.trace_device_ops and not isinstance(item, ReplayItem):
        device_ops_trace.start()
    started = time.monotonic()
    verdict = _check(item, context, settings)
    record = _record(item, verdict, time.monotonic() - started)
    record.update(context.record_fields())
    if verdict.outcome in PROBLEMS and context.failing_case_storable() and settings.corpus_dir is not None \
            and not isinstance(item, ReplayItem):
        try:
            record.update(_store(context, verdict, settings))
        except WriteError as exc:  # a full disk: the record says so, and the run stops on it (`plugin.session`)
            record.update(counterexample=None, counterexample_error=f"the failing case could not be stored: {exc}",
                          counterexample_unwritable={"path": str(exc.path), "reason": exc.reason})
        except Exception as exc:  # noqa: BLE001 - the finding stands without its stored case
            record.update(counterexample=None,
                          counterexample_error=f"the failing case could not be stored: {first_line(error_text(exc))}")
    if settings.trace_device_ops:
        record["device_ops"] = device_ops_trace.take()
    if context.dispatch_trace is not None:
        record["dispatched"] = context.dispatch_trace.names()
    if context.case_isolation is not None:  # which cases ran forked, and why
        record["isolated_cases"] = f"known CPU-oracle crash rule {context.case_isolation.rule}: " \
                                   f"{context.case_isolation.reason}"
    return record


def _check(item: Any, context: CaseContext, settings: EngineSettings) -> Verdict:
    """Run the item's property check on its context; the verdict from what it raised. Drawing probes the op
    on CPU too: for an item with crash-prone cases those probes run isolated like the cases."""
    probes = contextlib.nullcontext()
    if context.case_isolation is not None:
        probes = cpu_probes(context.case_isolation.probe_runner())
    try:
        with probes:
            property_check(item.property)(context)
    except Exception as exc:  # noqa: BLE001 - classified by type
        return classify(exc, show_traceback=settings.show_traceback, device_type=context.target.device_type)
    except BaseException as exc:  # the user's interrupts propagate; backend code's own exits are the item's verdict
        if not backend_exits.is_backend_exit(exc):
            raise backend_exits.users_stop(exc)
        return backend_exit_verdict(exc, settings.show_traceback)
    return PASSED


def backend_exit_verdict(exc: BaseException, show_traceback: bool = True) -> Verdict:
    """The verdict of an item whose code left by a back door (`backend_exits`), naming the module and function:
    `crashed` when it asked to end the process (os._exit, a fatal signal to itself: intercepted, so the run goes
    on), else an `error` (sys.exit, a KeyboardInterrupt no signal raised): the backend's, or the harness's when no
    frame outside TorchCTS raised it."""
    line = first_line(backend_exits.describe(exc))
    error = error_text(exc, show_traceback=True) if show_traceback else line
    if isinstance(exc, backend_exits.ProcessEndRequested):
        return Verdict(Outcome.CRASHED, "the code under test asked to end the process running it (intercepted; the "
                                        "run goes on)", f"{line}\n{error}" if show_traceback else line,
                       error_line=line)
    if backend_exits.blames_backend(exc):
        return Verdict(Outcome.ERROR, f"the code under test raised {type(exc).__name__}, which stops a program "
                                      "rather than failing an item", f"{line}\n{error}" if show_traceback else line,
                       "backend", line)
    return Verdict(Outcome.ERROR, f"harness: TorchCTS raised {type(exc).__name__} in the item's run",
                   error, "harness", line)


def build_context(item: Any, settings: EngineSettings, *, seed: int | None = None,
                  max_examples: int | None = None) -> CaseContext:
    """The `CaseContext` a property check of this item runs with."""
    common = dict(target=settings.target, manifest=settings.manifest, level=settings.level,
                  case_isolation=case_isolation(item, settings))
    if isinstance(item, ReplayItem):
        case, cases = replayable(item, settings.case_limits)  # UnreadableCase when the file cannot be read
        common["target"] = replay_target(settings.target, case, settings.replay_shape_mode)
        if settings.manifest is None:  # a replay needs no manifest; its suites still read one: the neutral one
            common["manifest"] = replay_manifest(settings.target.device_type,
                                                 own_capability(case, settings.target.device_type))
        if settings.target.compile is not None:  # no history of earlier cases where no fresh process was possible
            reset_compiled()
        op = None if case.variant == "scenario" else find_op(case.op)  # a scenario case names no OpInfo
        return CaseContext(item=item, op=op, dtype=dtype_names.lookup(case.dtype), max_examples=1,
                           seed=0, replay=cases, **common)
    scenario = item.variant == "scenario"
    return CaseContext(item=item, op=None if scenario else find_op(item.op), dtype=dtype_names.lookup(item.dtype),
                       max_examples=max_examples or settings.max_examples,
                       seed=item_seed(item.id, settings.run_seed, settings.versions) if seed is None else seed,
                       deadline_ms=settings.deadline_ms, shrink=settings.shrink, targeting=settings.targeting,
                       case_timeout_s=settings.case_timeout_s, draw=settings.draw, **common)


def replay_target(target: Target, case: Any, shape_mode: str | None) -> Target:
    """The target a corpus case replays on: under a compile target, in the shape mode the case failed in (unless
    --shape-mode names one) and, for a case of the same backend, with its `fullgraph`. A case's `mode` and
    `options` are never applied: the file is untrusted, and a backend option can name a program to run (inductor's
    `cpp.cxx`); the replay's own settings (--manifest's compile section) stand."""
    if target.compile is None:
        return target
    spec = target.compile.evolve(shape_mode=shape_mode or case.shape_mode or target.compile.shape_mode)
    if case.backend == target.compile_backend:
        spec = spec.evolve(fullgraph=case.fullgraph)
    return attrs.evolve(target, compile=spec)


def case_isolation(item: Any, settings: EngineSettings) -> Any:
    """How the item's crash-prone cases run when a CPU-oracle crash rule matches it (`IsolationPolicy.case_isolation`):
    each in a forked child, where an oracle that dies or hangs makes the case cpu_contract with the rule's
    reason. None when no rule matches."""
    policy_of = getattr(settings.isolation, "case_isolation", None)
    return policy_of(item) if policy_of is not None else None


def property_check(name: str) -> Callable[[CaseContext], None]:
    """The registered check function of property `name` (registry.RegistryError when there is none)."""
    if name not in registry.capability_map():
        registry.load()  # the installed suites; custom ones are loaded by whoever planned the item
    return registry.get(name).check


def _record(item: Any, verdict: Verdict, duration_s: float) -> dict[str, Any]:
    return {**item.as_json(), "outcome": verdict.outcome, "reason": verdict.reason, "error": verdict.error,
            **verdict.record_fields(), "duration_s": round(duration_s, 4), "counterexample": None}


def _store(context: CaseContext, verdict: Verdict, settings: EngineSettings) -> dict[str, Any]:
    """Store the item's minimal failing case in the corpus; the record's reference to it."""
    return store_failure(context, outcome=str(verdict.outcome), error=verdict.error, corpus_dir=settings.corpus_dir,
                         found=settings.found, replay_flags=settings.replay_flags,
                         missing_kernel=verdict.missing_kernel,
                         backend_import=getattr(settings.manifest, "backend_import", None))


def _run_isolated(item: Any, settings: EngineSettings, reason: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`work()` (the item run here) in a forked child; its record, or one saying how the child ended."""
    result = run_forked(lambda: {**work(), "isolated": reason, "isolated_by": "fork"}, _item_timeout(settings))
    return _isolated_record(item, result, reason, "fork")


def _run_spawned(item: Any, settings: EngineSettings, reason: str, *, seed: int | None,
                 max_examples: int | None) -> dict[str, Any]:
    """The item run by a worker of the spawned pool; its record, or one saying how the worker ended."""
    result = run_spawned(item, settings, _item_timeout(settings), seed=seed, max_examples=max_examples)
    if result.status == "finished":
        result = attrs.evolve(result, answer={**result.answer, "isolated": reason, "isolated_by": "spawn"})
    return _isolated_record(item, result, reason, "spawn")


def _item_timeout(settings: EngineSettings) -> float:
    return getattr(settings.isolation, "timeout_s", None) or DEFAULT_ITEM_TIMEOUT_S


def _isolated_record(item: Any, result: ForkResult, reason: str, how: str) -> dict[str, Any]:
    if result.status == "finished":
        record = dict(result.answer)
        record["outcome"] = parse(record.get("outcome")) or Outcome.ERROR
        return record
    return ended_record(item, result, reason, how)


def ended_record(item: Any, result: ForkResult, reason: str, how: str = "fork") -> dict[str, Any]:
    """The record of an item whose child or worker (`how`: fork or spawn) died (`crashed`) or overran its
    timeout (`timed_out`)."""
    outcome = Outcome.CRASHED if result.status == "crashed" else Outcome.TIMED_OUT
    return {**item.as_json(), "outcome": outcome, "reason": result.describe(), "error": result.output_tail,
            "error_line": first_line(result.describe()), "duration_s": round(result.duration_s, 4),
            "signal": result.signal_name or None, "isolated": reason, "isolated_by": how, "counterexample": None}


use_item_runner(run_here, ended_record)  # blame replays its legs through this module's runner
