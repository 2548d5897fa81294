"""`torchcts selftest`: do the suites catch bugs? Run them against the faulty device, clean and per bug.

Three phases, each a clean run and then one run per seeded bug: the OpInfo properties at `--level`
in the given dtypes, the scenario suites (views, copies, ieee754, sparse, ...: every property
whose items are scenarios) at their own levels in every dtype they list, and the whole-model compile
suites (`compile`: their aot_eager scenarios, rerun only for the bugs written for them, which fire
only in code torch.compile captured). The clean run records, for
every item, which aten overloads it ran on the device and where each seeded bug's condition held
(`faulty.would_fire`). Each seeded bug is then tested by rerunning, with only that bug on, the items
where its condition held (a bug whose condition counts across calls: the ops or scenarios whose items
reached one of its overloads), in the phase that reached them: an item where the bug never acts runs
as it ran clean (`selftest_reach`). The runs are `torchcts run` processes, several at once
(`selftest_pool`; the clean runs in shards, one per worker). A bug is detected when
some item that passes on the clean backend fails or errors with the bug on; the clean run must
have no failure, except on ops where the faulty device is documented to differ from CPU
(`agreement.EXPLAINED`, e.g. scaled_dot_product_attention: math kernel vs CPU's fused kernel),
which are listed apart. The registered properties (`torchcts.plan.registry`) no clean item
exercised are listed too: a seeded bug only they could see cannot be detected. A bug written for an
OpInfo property above `--level` (gradcheck, double_backward: level 4) is listed as not run, with the
level that runs it, rather than counted missed.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from torchcts import interrupts
from torchcts.disk import write_atomic, writing
from torchcts.core.outcomes import EXECUTED, PROBLEMS, Outcome
from torchcts.manifest import vocabulary as vocab
from torchcts.manifest.templates import render_template
from torchcts.plan import registry
from torchcts.testing.faulty import decoders, generators, runtime
from torchcts.testing.faulty.bugs import BUGS
from torchcts.testing.selftest_pool import RunPool, usable_cores
from torchcts.testing.selftest_runs import Schedule


DETECTS = (Outcome.FAILED, Outcome.ERROR)  # a seeded bug is detected by an item failing or erroring with it on


@attrs.frozen
class BugResult:
    name: str
    description: str
    reached_ops: tuple[str, ...]  # OpInfo ids (or scenario names) whose items ran one of the bug's overloads
    failing_items: tuple[str, ...]
    suite: str = "opinfo"  # the suite the bug was written for (`Bug.suite`)

    @property
    def detected(self) -> bool:
        return bool(self.failing_items)


@attrs.frozen
class SelftestReport:
    clean_failures: tuple[str, ...]  # items the clean backend fails that nothing explains: harness bugs
    bugs: tuple[BugResult, ...]
    incomplete_runs: tuple[str, ...] = ()  # runs that did not finish
    explained_clean_failures: tuple[str, ...] = ()  # the faulty device's documented disagreements with CPU
    unexercised_properties: tuple[str, ...] = ()  # registered properties no clean item executed
    # (bug, suite, level): bugs written for an OpInfo property above the run's --level, so not run (`deferred_bugs`)
    deferred_bugs: tuple[tuple[str, str, int], ...] = ()
    # (bug, suite, reason): bugs of suites that need the faulty device's compiled part, which this machine lacks
    unbuilt_bugs: tuple[tuple[str, str, str], ...] = ()
    interrupted: str | None = None  # the signal that stopped the selftest ("SIGINT"): a partial report
    not_started: tuple[str, ...] = ()  # runs the signal kept from starting

    @property
    def detection_rate(self) -> float:
        return sum(b.detected for b in self.bugs) / len(self.bugs) if self.bugs else 0.0

    @property
    def ok(self) -> bool:
        return (not self.clean_failures and not self.incomplete_runs and not self.interrupted
                and all(b.detected for b in self.bugs))

    @property
    def exit_code(self) -> int:
        """0 when ok, 1 when not; 128 + the signal's number when one stopped it (130 Ctrl-C, 143 SIGTERM)."""
        if self.interrupted:
            return 128 + int(signal.Signals[self.interrupted])
        return 0 if self.ok else 1

    def undecided(self, bug: BugResult) -> bool:
        """Whether a stop left the bug's verdict open: undetected, and its run (or its phase's clean run) unfinished."""
        unfinished = {name.split(" ")[0] for name in (*self.incomplete_runs, *self.not_started)}
        return (self.interrupted is not None and not bug.detected
                and (any(bug.name in name.split("/")[-1].split("+") for name in unfinished)
                     or any(name.endswith("/clean") for name in unfinished)))


@attrs.frozen
class Phase:
    """One part of the selftest: these properties, at this level, in these dtypes (empty: every one claimed)."""

    name: str
    properties: tuple[str, ...]
    level: int
    dtypes: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()  # `run --ops` regexes of its clean run (empty: every item); selftest --ops replaces them
    # rerun only for the bugs written for these suites (`Bug.suite`); empty: every bug no other phase owns this way
    bug_suites: tuple[str, ...] = ()

    def runs(self, bug: Any, owned: set[str]) -> bool:
        """Whether this phase is rerun for `bug` (`owned`: the suites some phase's `bug_suites` names)."""
        return bug.suite in self.bug_suites if self.bug_suites else bug.suite not in owned


# The compile phase runs the aot_eager scenarios only: inductor builds C++ for every op graph dynamo captures in the
# faulty device's dispatch (tens of minutes per item); the compile bugs fire under any backend.
COMPILE_OPS = ("_aot_eager$",)


def phases(level: int, dtypes: tuple[str, ...], specs: Iterable[Any] | None = None) -> tuple[Phase, ...]:
    """The OpInfo properties at `level` in `dtypes`, the scenario suites (but the compile ones) at their own
    levels in all their dtypes, and the compile suites' aot_eager scenarios, for their own bugs only."""
    if specs is None:
        specs = registry.load()
    specs = list(specs)
    opinfo = tuple(p.name for p in specs if not p.scenario and p.level <= level)
    # Whole-model compile suites are a phase of their own, rerun only for their own bugs: re-running them once per
    # eager bug they reach (every kernel of four models) would take hours, and the other suites catch those.
    suites = [p for p in specs if p.scenario and p.capability != "compile"]
    compiled = [p for p in specs if p.scenario and p.capability == "compile"]
    found = []
    if opinfo:
        found.append(Phase("opinfo", opinfo, level, tuple(dtypes)))
    if suites:
        found.append(Phase("suites", tuple(p.name for p in suites), max(p.level for p in suites)))
    if compiled:
        names = tuple(p.name for p in compiled)
        found.append(Phase("compile", names, max(p.level for p in compiled), ops=COMPILE_OPS, bug_suites=names))
    return tuple(found)


def run_selftest(level: int = 2, dtypes: tuple[str, ...] = ("float32",), max_examples: int = 10,
                 results_dir: Path = Path("results/selftest"), progress: Callable[[str], None] = print,
                 only_bugs: tuple[str, ...] = (), only_phases: tuple[str, ...] = (),
                 ops: tuple[str, ...] = (), workers: int | None = None) -> SelftestReport:
    """Every phase (or those named in `only_phases`) clean, then once per seeded bug (or per bug of `only_bugs`)
    on the items where it can act (`selftest_reach`), in `workers` processes (default: one per usable core);
    `ops` (regexes, as `run --ops`) narrows the clean runs. Ctrl-C or SIGTERM stops the runs under way, which
    keep what they ran: the report is partial and says so (`interrupted`)."""
    results_dir = Path(results_dir)
    with writing(results_dir):
        results_dir.mkdir(parents=True, exist_ok=True)
    manifest = results_dir / "manifest.py"
    write_atomic(manifest, faulty_manifest())  # a full disk: the one line naming it, no half manifest
    every_phase = phases(level, dtypes)
    owned = {suite for phase in every_phase for suite in phase.bug_suites}
    planned = tuple(p for p in every_phase if not only_phases or p.name in only_phases)
    chosen = chosen_bugs(planned, owned, only_bugs)
    deferred = deferred_bugs(chosen, level)
    unbuilt = unbuilt_bugs(chosen)
    chosen = [b for b in chosen if b.name not in {name for name, _, _ in (*deferred, *unbuilt)}]
    workers = workers or usable_cores()
    schedule = Schedule(planned, chosen, owned, results_dir, workers, tuple(ops), progress)
    pool = RunPool(workers, manifest, max_examples)
    interrupted = None
    with interrupts.handling():
        try:
            schedule.run(pool)
        except KeyboardInterrupt as exc:
            if not interrupts.from_signal(exc):
                raise
            interrupted = interrupts.signal_name() or "SIGINT"
            interrupts.FinalWrite().claim()  # stopping, not stuck: the watchdog lets the runs write what they ran
            with interrupts.deferred(raise_at_end=False):
                progress(f"selftest: {interrupted}: stopping the {len(pool.running)} runs under way ...")
                for result in pool.stop(interrupts.requested() or signal.SIGINT):
                    schedule.take(result)
    for bug in chosen:
        if not schedule.reached[bug.name] and not interrupted:
            progress(f"selftest: {bug.name}: no item runs {', '.join(bug.ops)}")
    results = tuple(BugResult(bug.name, bug.description, tuple(sorted(schedule.reached[bug.name])),
                              tuple(schedule.failing[bug.name]), bug.suite) for bug in chosen)
    failing_clean = [r for r in schedule.clean_records if r["outcome"] in PROBLEMS]
    failed_items = tuple(r["item"] for r in failing_clean)
    explained = tuple(r["item"] for r in failing_clean if _documented_disagreement(r["op"]))
    return SelftestReport(tuple(item for item in failed_items if item not in explained), results,
                          tuple(schedule.incomplete), explained,
                          unexercised_properties(schedule.clean_records, 8, _specs_of(planned)), deferred,
                          unbuilt_bugs=unbuilt, interrupted=interrupted, not_started=tuple(schedule.not_started()))


def chosen_bugs(planned: Iterable[Phase], owned: set[str], only_bugs: tuple[str, ...] = ()) -> list[Any]:
    """The seeded bugs selftest tests (all but crash and hang, or those of `only_bugs`) that some `planned` phase
    reruns for: `--phase compile` tests the compile bugs only, the other phases never them."""
    planned = tuple(planned)
    return [bug for bug in BUGS.values() if bug.in_all and (not only_bugs or bug.name in only_bugs)
            and any(phase.runs(bug, owned) for phase in planned)]


def faulty_manifest() -> str:
    """The manifest the selftest runs with: the `complete` template for the faulty device, with its two devices and
    multi_device claimed, its own container decoders for every format, and device_generator claimed where the
    device's compiled part gives it generator objects (else declared False, with the reason in a comment)."""
    decoder_paths = {name: decoders.path(name) for name in vocab.CONTAINER_FORMATS}
    return (render_template("complete", device_name="faulty")
            + "\n# the faulty device's runtime (torchcts.testing.faulty.runtime)\n"
            + f'manifest["device_count"] = {runtime.count()}\n'
            + f'manifest["capabilities"]["multi_device"] = {runtime.count() >= 2}\n'
            + _generator_claim()
            + "# its own container decoders (torchcts.testing.faulty.decoders), one per format\n"
            + 'manifest["capabilities"]["custom_quantized_decode"] = True\n'
            + f'manifest["custom_container_decoders"] = {decoder_paths!r}\n')


def _generator_claim() -> str:
    """The manifest line for device_generator: claimed where the faulty device has generator objects."""
    reason = generators.unavailable_reason()
    if reason is None:
        return 'manifest["capabilities"]["device_generator"] = True\n'
    one_line = " ".join(reason.split())  # a comment line: the reason cannot end it
    return f"# {one_line}\nmanifest[\"capabilities\"][\"device_generator\"] = False\n"


# suites whose bugs live in what only the faulty device's compiled part provides (generators.py)
COMPILED_PART_SUITES = ("device_generator",)


def unbuilt_bugs(bugs: Iterable[Any]) -> tuple[tuple[str, str, str], ...]:
    """(bug, suite, reason) of the bugs in `bugs` that need the faulty device's compiled part where it did not load
    (no compiler, TORCHCTS_FAULTY_NATIVE=0): not run, and said so, never counted as detected or missed."""
    reason = generators.unavailable_reason()
    if reason is None:
        return ()
    return tuple((bug.name, bug.suite, reason) for bug in bugs if bug.suite in COMPILED_PART_SUITES)


def deferred_bugs(bugs: Iterable[Any], level: int, specs: Iterable[Any] | None = None) -> tuple[tuple[str, str, int], ...]:
    """(bug, suite, suite level) of the bugs written for an OpInfo property (`Bug.suite`: gradcheck, ...) above
    `level`: the opinfo phase runs at `level`, so no item of theirs runs; `--level` >= theirs runs them."""
    if specs is None:
        specs = registry.load()
    levels = {spec.name: spec.level for spec in specs if not spec.scenario}
    return tuple((bug.name, bug.suite, levels[bug.suite]) for bug in bugs if levels.get(bug.suite, 0) > level)


def _specs_of(planned: Iterable[Phase]) -> list[Any]:
    names = {name for phase in planned for name in phase.properties}
    return [spec for spec in registry.load() if spec.name in names]


def unexercised_properties(records: Iterable[dict[str, Any]], level: int, specs: Iterable[Any] | None = None
                           ) -> tuple[str, ...]:
    """The registered properties at or below `level` (`specs`: the registry's) with no executed item in `records`."""
    if specs is None:
        specs = registry.load()
    executed = {r["property"] for r in records if r["outcome"] in EXECUTED}
    return tuple(p.name for p in specs if p.level <= level and p.name not in executed)


def _documented_disagreement(op: str) -> bool:
    """Whether the faulty device is documented to differ from CPU on this op (agreement.EXPLAINED)."""
    from torchcts.testing.faulty.agreement import EXPLAINED  # strategies, hypothesis: `selftest` checks --bug first

    return EXPLAINED.get(op, ("",))[0] == "mismatch"


def print_report(report: SelftestReport, echo: Callable[[str], None] = print) -> None:
    detected = [b for b in report.bugs if b.detected]
    echo(f"seeded bugs detected: {len(detected)}/{len(report.bugs)} ({report.detection_rate:.0%})")
    echo("")
    echo("| suite | bugs | detected |")
    echo("| --- | --- | --- |")
    for suite in sorted({b.suite for b in report.bugs}):
        mine = [b for b in report.bugs if b.suite == suite]
        echo(f"| {suite} | {len(mine)} | {sum(b.detected for b in mine)} |")
    echo("")
    for bug in report.bugs:
        if bug.detected:
            shown = ", ".join(bug.failing_items[:4]) + (" ..." if len(bug.failing_items) > 4 else "")
            echo(f"  detected {bug.name} [{bug.suite}]: {len(bug.failing_items)} failing items ({shown})")
    for bug in report.bugs:
        if report.undecided(bug):
            echo(f"  NOT DONE {bug.name} [{bug.suite}]: its run did not finish ({report.interrupted})")
        elif not bug.detected:
            why = "no item reaches its ops" if not bug.reached_ops else f"{len(bug.reached_ops)} ops reach it"
            echo(f"  MISSED   {bug.name} [{bug.suite}]: {bug.description} ({why})")
    for name, suite, level in report.deferred_bugs:
        echo(f"  NOT RUN  {name} [{suite}]: its suite is a level-{level} OpInfo property; selftest --level {level} "
             f"(with a dtype its items run in: {BUGS[name].condition}) runs it")
    for name, suite, reason in report.unbuilt_bugs:
        echo(f"  NOT RUN  {name} [{suite}]: {reason}")
    if report.unexercised_properties:
        echo("registered properties no clean item executed (bugs only they could see go unseen): "
             + ", ".join(report.unexercised_properties))
    if report.interrupted:
        echo(f"selftest stopped by {report.interrupted}: partial results (the runs under way kept what they ran); "
             f"{len(report.not_started)} runs not started")
    if report.incomplete_runs:
        echo(f"runs that did not complete ({'stopped' if report.interrupted else 'a crash?'}): "
             f"{', '.join(report.incomplete_runs)}")
    echo(f"clean backend failures: {len(report.clean_failures)}"
         + (": " + ", ".join(report.clean_failures[:10]) if report.clean_failures else ""))
    if report.explained_clean_failures:
        echo(f"clean backend items failing where the faulty device is documented to differ from CPU "
             f"(torchcts.testing.faulty.agreement.EXPLAINED; not counted): "
             + ", ".join(report.explained_clean_failures[:10]))
