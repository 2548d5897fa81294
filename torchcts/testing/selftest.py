"""`torchcts selftest`: do the suites catch bugs? Run them against the faulty device, clean and per bug.

Three phases, each a clean run and then one run per seeded bug: the OpInfo properties at `--level`
in the given dtypes, the scenario suites (views, copies, ieee754, sparse, ...: every property
whose items are scenarios) at their own levels in every dtype they list, and the whole-model compile
suites (`compile`: their aot_eager scenarios, rerun only for the bugs written for them, which fire
only in code torch.compile captured). The clean run records, for
every item, which aten overloads it ran on the device. Each seeded bug is then tested by rerunning
(with only that bug on) the ops or scenarios whose items reached one of the bug's overloads, in
the phase that reached them: an item that never runs an overload cannot see its bug. A bug is detected when
some item that passes on the clean backend fails or errors with the bug on; the clean run must
have no failure, except on ops where the faulty device is documented to differ from CPU
(`agreement.EXPLAINED`, e.g. scaled_dot_product_attention: math kernel vs CPU's fused kernel),
which are listed apart. The registered properties (`torchcts.plan.registry`) no clean item
exercised are listed too: a seeded bug only they could see cannot be detected. A bug written for an
OpInfo property above `--level` (gradcheck, double_backward: level 4) is listed as not run, with the
level that runs it, rather than counted missed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from torchcts.disk import write_atomic, writing
from torchcts.outcomes import EXECUTED, PROBLEMS, Outcome
from torchcts.results.files import read_summary
from torchcts.results.writer import read_records
from torchcts.plugin.launch import latest_run, run_folders
from torchcts.plugin.session import TRACE_ENV
from torchcts.manifest.templates import render_template
from torchcts.testing.faulty.bugs import BUGS, ENV_VAR


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

    @property
    def detection_rate(self) -> float:
        return sum(b.detected for b in self.bugs) / len(self.bugs) if self.bugs else 0.0

    @property
    def ok(self) -> bool:
        return not self.clean_failures and not self.incomplete_runs and all(b.detected for b in self.bugs)


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
        from torchcts.plan import registry

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


def _run(results_dir: Path, manifest: Path, phase: Phase, max_examples: int, bugs: str,
         ops: tuple[str, ...] = ()) -> tuple[list[dict], bool]:
    """The records of one run of a phase, and whether it completed."""
    args = [sys.executable, "-m", "torchcts", "run", "--device", "faulty", "--manifest", str(manifest),
            "--level", str(phase.level), "--derandomize", "--max-examples", str(max_examples),
            "--results-dir", str(results_dir), "--corpus-dir", str(results_dir / "corpus"), "--no-report",
            "--no-shrink"]
    for dtype in phase.dtypes:
        args += ["--dtype", dtype]
    for name in phase.properties:
        args += ["--property", name]
    for pattern in ops or phase.ops:
        args += ["--ops", pattern]
    env = dict(os.environ, **{ENV_VAR: bugs, TRACE_ENV: "1"})
    before = run_folders(results_dir)
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   check=False)
    folder = latest_run(results_dir, before)
    if folder is None:
        raise RuntimeError(f"the selftest run wrote no results under {results_dir}")
    complete = read_summary(folder)["status"] == "complete"
    return read_records(folder), complete


def run_selftest(level: int = 2, dtypes: tuple[str, ...] = ("float32",), max_examples: int = 10,
                 results_dir: Path = Path("results/selftest"), progress: Callable[[str], None] = print,
                 only_bugs: tuple[str, ...] = (), only_phases: tuple[str, ...] = (),
                 ops: tuple[str, ...] = ()) -> SelftestReport:
    """Every phase (or those named in `only_phases`) clean, then once per seeded bug (or per bug of `only_bugs`)
    where its overloads are reached; `ops` (regexes, as `run --ops`) narrows the clean runs."""
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
    chosen = [b for b in chosen if b.name not in {name for name, _, _ in deferred}]
    clean_records: list[dict] = []
    incomplete: list[str] = []
    failing: dict[str, list[str]] = {bug.name: [] for bug in chosen}
    reached_by_bug: dict[str, set[str]] = {bug.name: set() for bug in chosen}
    for phase in planned:
        progress(f"selftest: clean run of the {phase.name} phase against the faulty device ...")
        clean, clean_complete = _run(results_dir / phase.name / "clean", manifest, phase, max_examples, bugs="",
                                     ops=ops)
        clean_records += clean
        if not clean_complete:
            incomplete.append(f"{phase.name}/clean")
        failed = {r["item"] for r in clean if r["outcome"] in PROBLEMS}
        reached: dict[str, set[str]] = {}
        for record in clean:
            for overload in record.get("device_ops", ()):
                reached.setdefault(overload, set()).add(record["op"])
        for bug in (bug for bug in chosen if phase.runs(bug, owned)):
            # named apart from `ops`, which every phase's clean run reads
            reaching = sorted(set().union(*(reached.get(o, set()) for o in bug.ops)))
            if not reaching:
                continue
            reached_by_bug[bug.name].update(reaching)
            progress(f"selftest: {phase.name}: {bug.name} ({len(reaching)} ops or scenarios reach it) ...")
            pattern = "^(" + "|".join(re.escape(op) for op in reaching) + ")$"
            records, complete = _run(results_dir / phase.name / bug.name, manifest, phase, max_examples,
                                     bugs=bug.name, ops=(pattern,))
            if not complete:
                incomplete.append(f"{phase.name}/{bug.name}")
            # only items the clean backend passes can show a bug
            failing[bug.name] += [r["item"] for r in records if r["outcome"] in DETECTS and r["item"] not in failed
                                  and _detects(bug, r)]
    for bug in chosen:
        if not reached_by_bug[bug.name]:
            progress(f"selftest: {bug.name}: no item runs {', '.join(bug.ops)}")
    results = tuple(BugResult(bug.name, bug.description, tuple(sorted(reached_by_bug[bug.name])),
                              tuple(failing[bug.name]), bug.suite) for bug in chosen)
    failing_clean = [r for r in clean_records if r["outcome"] in PROBLEMS]
    failed_items = tuple(r["item"] for r in failing_clean)
    explained = tuple(r["item"] for r in failing_clean if _documented_disagreement(r["op"]))
    return SelftestReport(tuple(item for item in failed_items if item not in explained), results, tuple(incomplete),
                          explained, unexercised_properties(clean_records, 8, _specs_of(planned)), deferred)


def chosen_bugs(planned: Iterable[Phase], owned: set[str], only_bugs: tuple[str, ...] = ()) -> list[Any]:
    """The seeded bugs selftest tests (all but crash and hang, or those of `only_bugs`) that some `planned` phase
    reruns for: `--phase compile` tests the compile bugs only, the other phases never them."""
    planned = tuple(planned)
    return [bug for bug in BUGS.values() if bug.in_all and (not only_bugs or bug.name in only_bugs)
            and any(phase.runs(bug, owned) for phase in planned)]


def faulty_manifest() -> str:
    """The manifest the selftest runs with: the `complete` template for the faulty device, with its two devices and
    multi_device claimed, its own container decoders for every format, and device_generator not claimed (torch
    gives a Python backend no hook for `torch.Generator(device=...)`: docs/faulty-backend.md)."""
    from torchcts.manifest import vocabulary as vocab
    from torchcts.testing.faulty import decoders, runtime

    decoder_paths = {name: decoders.path(name) for name in vocab.CONTAINER_FORMATS}
    return (render_template("complete", device_name="faulty")
            + "\n# the faulty device's runtime (torchcts.testing.faulty.runtime)\n"
            + f'manifest["device_count"] = {runtime.count()}\n'
            + f'manifest["capabilities"]["multi_device"] = {runtime.count() >= 2}\n'
            + 'manifest["capabilities"]["device_generator"] = False\n'
            + "# its own container decoders (torchcts.testing.faulty.decoders), one per format\n"
            + 'manifest["capabilities"]["custom_quantized_decode"] = True\n'
            + f'manifest["custom_container_decoders"] = {decoder_paths!r}\n')


def deferred_bugs(bugs: Iterable[Any], level: int, specs: Iterable[Any] | None = None) -> tuple[tuple[str, str, int], ...]:
    """(bug, suite, suite level) of the bugs written for an OpInfo property (`Bug.suite`: gradcheck, ...) above
    `level`: the opinfo phase runs at `level`, so no item of theirs runs; `--level` >= theirs runs them."""
    if specs is None:
        from torchcts.plan import registry

        specs = registry.load()
    levels = {spec.name: spec.level for spec in specs if not spec.scenario}
    return tuple((bug.name, bug.suite, levels[bug.suite]) for bug in bugs if levels.get(bug.suite, 0) > level)


def _specs_of(planned: Iterable[Phase]) -> list[Any]:
    from torchcts.plan import registry

    names = {name for phase in planned for name in phase.properties}
    return [spec for spec in registry.load() if spec.name in names]


def _detects(bug: Any, record: dict[str, Any]) -> bool:
    """Whether a failing record shows the bug: a missing-kernel bug only as a missing-kernel error."""
    return bug.kind != "missing-kernel" or record.get("error_kind") == "missing_kernel"


def unexercised_properties(records: Iterable[dict[str, Any]], level: int, specs: Iterable[Any] | None = None
                           ) -> tuple[str, ...]:
    """The registered properties at or below `level` (`specs`: the registry's) with no executed item in `records`."""
    if specs is None:
        from torchcts.plan import registry

        specs = registry.load()
    executed = {r["property"] for r in records if r["outcome"] in EXECUTED}
    return tuple(p.name for p in specs if p.level <= level and p.name not in executed)


def _documented_disagreement(op: str) -> bool:
    """Whether the faulty device is documented to differ from CPU on this op (agreement.EXPLAINED)."""
    from torchcts.testing.faulty.agreement import EXPLAINED

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
        if not bug.detected:
            why = "no item reaches its ops" if not bug.reached_ops else f"{len(bug.reached_ops)} ops reach it"
            echo(f"  MISSED   {bug.name} [{bug.suite}]: {bug.description} ({why})")
    for name, suite, level in report.deferred_bugs:
        echo(f"  NOT RUN  {name} [{suite}]: its suite is a level-{level} OpInfo property; selftest --level {level} "
             f"(with a dtype its items run in: {BUGS[name].condition}) runs it")
    if report.unexercised_properties:
        echo("registered properties no clean item executed (bugs only they could see go unseen): "
             + ", ".join(report.unexercised_properties))
    if report.incomplete_runs:
        echo(f"runs that did not complete (a crash?): {', '.join(report.incomplete_runs)}")
    echo(f"clean backend failures: {len(report.clean_failures)}"
         + (": " + ", ".join(report.clean_failures[:10]) if report.clean_failures else ""))
    if report.explained_clean_failures:
        echo(f"clean backend items failing where the faulty device is documented to differ from CPU "
             f"(torchcts.testing.faulty.agreement.EXPLAINED; not counted): "
             + ", ".join(report.explained_clean_failures[:10]))
