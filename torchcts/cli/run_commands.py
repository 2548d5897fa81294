"""The commands that run properties on a device: `run` (the suites, under pytest), `fuzz` (a budgeted hunt),
`replay` (corpus cases) and `selftest` (the suites against the faulty device). Each parses its
options, calls one function of the library, and exits with its status.
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import sys
from pathlib import Path

import click

from torchcts.arguments import MAX_EXAMPLES, MAX_SEED
from torchcts.cli.options import (
    PYTEST_ARGS, Command, InputFile, WorkerCount, compile_option, corpus_option, device_option, fail, manifest_option,
    resolve_corpus, resolved_manifest, results_dir_option, shape_mode_option,
)
from torchcts.cli.number_types import FloatRange, IntRange
from torchcts.cli.completion import complete_dtypes
from torchcts.cli.last_failed import last_failed_run, refuse_cache_flags
from torchcts.cli.selection import capability_option, plan_for, selection_options, shard_option


@click.command("run", cls=Command, pytest_args=True)
@device_option("Device under test (cuda, mps, privateuseone, faulty, meta, cpu, ...).")
@manifest_option()
@selection_options()
@capability_option("Only the properties that test this capability (their own, or one they also prove, as forward "
                   "proves ieee754); repeatable; with --property, the properties in both. The others are recorded "
                   "deselected.")
@click.option("--last-failed", is_flag=True,
              help="Rerun only the items that failed, errored, crashed or timed out in the newest earlier run on this "
                   "device in --results-dir (one that executed items); every other item is recorded deselected "
                   "(`--last-failed: passed in <run-id>`). No such run: exit 2; nothing failed in it: exit 0, no run.")
@shard_option()
@click.option("-n", "--numprocesses", "workers", type=WorkerCount(), metavar="N|auto",
              help="Run the items in N pytest-xdist worker processes (auto: one per core); one run folder, "
                   "the same records and fingerprints as one process. Needs the `xdist` extra.")
@click.option("--derandomize", is_flag=True, help="Seeds from item ids alone: identical cases on every run.")
@click.option("--seed", type=IntRange(0, MAX_SEED),
              help="Repeat a run's random seed (printed by every run that is not derandomized).")
@click.option("--max-examples", type=IntRange(1, MAX_EXAMPLES),
              help="Hypothesis examples per item (default: the manifest's).")
@results_dir_option("Where the run folder (records.jsonl, run.json) is written.")
@click.option("--validation", is_flag=True, help="Run against CPU itself to validate the harness.")
@compile_option("Run every op through torch.compile(backend=B) on the device; compare with eager CPU.")
@shape_mode_option()
@click.option("--blame-cases", type=IntRange(0, 100000), metavar="N",
              help="With --compile: blame at most N failing cases on a leg (dynamo, aot, backend, ...: each stored "
                   "case replayed under eager, aot_eager and the backend; docs/compile.md); 0: none. Default 100.")
@corpus_option("Where the shrunk counterexample of every failing item is written.")
@click.option("--subprocess-per-test", is_flag=True,
              help="Run every item in its own isolated process (forked, or a spawned worker: --isolation-start).")
@click.option("--isolation-start", type=click.Choice(["auto", "fork", "spawn"]), default="auto", show_default=True,
              help="How isolated items start: auto forks where the device survives it and uses spawned worker "
                   "interpreters where it does not (CUDA, XPU, MPS, HPU); fork or spawn forces one.")
@click.option("--known-segfault-policy", type=click.Choice(["isolate", "off"]), default="isolate", show_default=True,
              help="Isolate items a known-crash rule matches (default), or ignore the backend rules "
                   "(CPU-oracle rules stay in force).")
@click.option("--known-crashes", type=InputFile(),
              help="Project-local known-crash ledger (default: known_crashes.json next to the manifest).")
@click.option("--known-segfault-audit", is_flag=True,
              help="Validate every known-crash rule and show the items it matches; run nothing.")
@click.option("--adaptive-isolation", type=click.Choice(["auto", "off"]), default="auto", show_default=True,
              help="Isolate items that crashed or hung in earlier runs (same hardware, device, torch minor).")
@click.option("--item-timeout", type=FloatRange(min=1), help="Seconds an isolated item may run (default 900).")
@click.option("--hypothesis-profile", metavar="NAME",
              help="A registered Hypothesis settings profile over the manifest's `hypothesis` block (default: "
                   "$HYPOTHESIS_PROFILE); see docs/harness.md for what it may change.")
@click.option("--hypothesis-seed", type=IntRange(0, MAX_SEED), metavar="N", help="The same as --seed N.")
@click.option("--hypothesis-show-statistics", is_flag=True,
              help="Record Hypothesis's statistics in each item's record and print them at the end.")
@click.option("--no-shrink", is_flag=True, help="Report the first failing case of an item without shrinking it.")
@click.option("--no-report", is_flag=True,
              help="Do not write the report (scorecard.md, report.html, junit.xml, summary.json) into the run folder.")
@click.option("--trace-dispatch", is_flag=True,
              help="Record in each executed item's record the aten overloads its device side dispatched, for "
                   "`torchcts coverage collect-backend-evidence`. Costs a Python call per op (5-20 us): about 1.06x a "
                   "forward item's time (benchmarks/bench_dispatch_trace.py). Eager devices only: refused with --compile.")
def run(device: str | None, manifest_path: Path | None, level: int | None, dtypes: tuple[str, ...],
        ops: tuple[str, ...], properties: tuple[str, ...], capabilities: tuple[str, ...], last_failed: bool,
        shard: str | None, workers: str | None, derandomize: bool,
        seed: int | None, max_examples: int | None, results_dir: Path, validation: bool, compile_backend: str | None,
        shape_mode: str | None, blame_cases: int | None, corpus_dir: Path | None, subprocess_per_test: bool, isolation_start: str, known_segfault_policy: str,
        known_crashes: Path | None, known_segfault_audit: bool, adaptive_isolation: str, item_timeout: float | None,
        hypothesis_profile: str | None, hypothesis_seed: int | None, hypothesis_show_statistics: bool,
        no_shrink: bool, no_report: bool, trace_dispatch: bool) -> None:
    """Run the property suites against a device and write results and the report.

    Every item the manifest rules out, or this run deselects, is recorded with its reason.
    Results go to RESULTS_DIR/<run-id>/ (records.jsonl, run.json), the report to
    RESULTS_DIR/<run-id>/report/ (unless --no-report). The console shows a progress line, one line
    per failing item and per missing kernel (full detail in the report), and a summary. pytest
    arguments go after `--` (`-- -x -k add`; `-- -v` for pytest's line per item, `-- --tb=short`
    for its failure blocks); an unknown option before `--` is an error. Items that may crash or
    hang (a known-crash rule, or evidence in earlier runs) run in a forked child: a crash is
    recorded `crashed`, a hang `timed_out`, and the run goes on. Exits 0 when no item failed, 1
    when one did, 2 for bad input or a file it cannot write (a full disk: one line naming it, the
    results so far kept), 3 when the selection executed no item (it says which filter left
    nothing), 128 + the signal's number when Ctrl-C (130), SIGTERM (143) or SIGHUP (129) stopped
    it (the results so far are kept and marked partial). With --shard K/N the run is shard K of N
    (one CI job of a matrix); `torchcts report --merge` joins the shards' run folders into one. With -n N
    the items run in N pytest-xdist workers (pip install 'torchcts[xdist]'); a worker that dies outside
    isolation leaves its item `crashed` and is replaced. `torchcts run` keeps no pytest cache: pytest's
    --lf, --ff and --sw after `--` are refused; --last-failed reruns the last run's failures.
    """
    from torchcts.plugin.launch import RunOptions, run_suites

    if device is None and not validation:
        raise click.UsageError("pass --device D, or --validation to run against CPU itself")
    pytest_args = tuple(click.get_current_context().meta[PYTEST_ARGS])
    refuse_cache_flags(pytest_args)
    last_failed_from = last_failed_run(results_dir, device or "cpu", compile_backend, validation, shard) \
        if last_failed else None
    # a --validation run tests CPU: without a manifest it uses the shipped cpu target's
    manifest_path = resolved_manifest(manifest_path, device or "cpu", compile_backend)
    options = RunOptions(device=device, manifest=manifest_path, level=level, dtypes=dtypes, ops=ops,
                         properties=properties, capabilities=capabilities, last_failed_from=last_failed_from,
                         shard=shard, workers=workers, derandomize=derandomize, seed=seed,
                         max_examples=max_examples,
                         results_dir=results_dir, validation=validation, compile_backend=compile_backend,
                         shape_mode=shape_mode, blame_cases=blame_cases,
                         corpus_dir=resolve_corpus(corpus_dir, results_dir), no_shrink=no_shrink, report=not no_report,
                         pytest_args=(("--trace-dispatch",) if trace_dispatch else ()) + pytest_args,
                         isolation_args=_isolation_args(subprocess_per_test, known_segfault_policy, known_crashes,
                                                        known_segfault_audit, adaptive_isolation, item_timeout,
                                                        isolation_start),
                         hypothesis_args=_hypothesis_args(hypothesis_profile, hypothesis_seed,
                                                          hypothesis_show_statistics))
    sys.exit(run_suites(options))


def _hypothesis_args(profile: str | None, seed: int | None, statistics: bool) -> tuple[str, ...]:
    """The Hypothesis options as Hypothesis's pytest plugin takes them (TorchCTS's plugin reads them there)."""
    args = ["--hypothesis-profile", profile] if profile else []
    args += ["--hypothesis-seed", str(seed)] if seed is not None else []
    args += ["--hypothesis-show-statistics"] if statistics else []
    return tuple(args)


def _isolation_args(everything: bool, policy: str, ledger: Path | None, audit: bool, adaptive: str,
                    timeout: float | None, start: str = "auto") -> tuple[str, ...]:
    """The isolation options as the pytest plugin takes them."""
    args = ["--known-segfault-policy", policy, "--adaptive-isolation", adaptive, "--isolation-start", start]
    args += ["--subprocess-per-test"] if everything else []
    args += ["--known-crashes", str(ledger)] if ledger else []
    args += ["--known-segfault-audit"] if audit else []
    args += ["--item-timeout", str(timeout)] if timeout else []
    return tuple(args)


@click.command("fuzz", cls=Command)
@device_option("Device to hunt bugs on.", required=True)
@manifest_option()
@click.option("--budget", help="Time to spend: 90s, 10m, 1h (default: 10m, or no time limit with --max-visits).")
@click.option("--max-visits", type=IntRange(min=1), metavar="N",
              help="Stop after N scheduled visits (--examples-per-task examples each), whatever the machine's "
                   "speed; with --seed and --workers 1 the hunt repeats exactly. With --budget: whichever ends first.")
@selection_options(level_help="The hunt's depth (default: the manifest's semantic_level; deeper or shallower).")
@corpus_option("Where new counterexamples are written.")
@click.option("--workers", type=IntRange(1, 64), default=1, show_default=True,
              help="Worker processes (each imports torch and the op database once).")
@click.option("--examples-per-task", type=IntRange(1, 10_000), default=10, show_default=True,
              help="Hypothesis examples per scheduled visit of an item.")
@click.option("--task-timeout", type=FloatRange(min=1), default=120.0, show_default=True,
              help="Seconds one visit may take before its item counts as hung (timed_out): a hang detector, "
                   "not a budget; raise it on a slow or busy machine.")
@compile_option("Hunt through torch.compile(backend=B) on the device.")
@shape_mode_option()
@click.option("--seed", type=IntRange(0, MAX_SEED), help="Repeat a hunt's scheduling and seeds (printed by every hunt).")
@results_dir_option("Where fuzz-<run-id>/fuzz.json (examples per item, cases found) goes.")
def fuzz(device: str, manifest_path: Path | None, budget: str | None, max_visits: int | None, ops: tuple[str, ...],
         dtypes: tuple[str, ...], properties: tuple[str, ...], level: int | None, corpus_dir: Path | None,
         workers: int, examples_per_task: int, task_timeout: float, compile_backend: str | None,
         shape_mode: str | None, seed: int | None, results_dir: Path) -> None:
    """Hunt for bugs with random seeds under a budget; new shrunk cases go to the corpus.

    Every item the manifest claims (narrowed by --ops, --dtype, --property, --level) is visited
    once, then visits move toward items that still show new behaviour (new cases, growing error)
    and away from saturated ones. The budget is time (--budget), a number of visits
    (--max-visits), or both. A visit budget does not depend on the machine's speed: with --seed
    and one worker, the same corpus, torch and TorchCTS give the same visits and cases on any
    machine (what CI wants). A crash or hang of one item is recorded and the hunt goes on.
    Ctrl-C, SIGTERM and SIGHUP stop it cleanly (exit 130, 143, 129; cases found are kept). Exits 1
    when new failures (or crashes, hangs) were found, 0 when none, 2 for bad input.
    """
    from torchcts.crashes.ledger import LedgerError
    from torchcts.fuzz.hunt import FuzzOptions, exit_status, hunt, parse_budget, print_summary

    if budget is None and max_visits is None:
        budget = "10m"
    try:
        budget_s = parse_budget(budget) if budget is not None else None  # None: --max-visits alone bounds it
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--budget") from None
    if task_timeout != task_timeout:  # FloatRange lets NaN through; it would disable hang detection
        raise click.BadParameter("nan is not a number of seconds", param_hint="--task-timeout")
    corpus_dir = resolve_corpus(corpus_dir, results_dir)
    manifest_path = resolved_manifest(manifest_path, device, compile_backend)
    plan, manifest = plan_for(manifest_path, level, dtypes, ops, properties)
    items = list(plan.items)
    if not items:
        fail("no item to fuzz: the manifest and the selection leave nothing")
    target = _open_device(device, manifest, compile_backend, shape_mode)
    options = FuzzOptions(device=device, manifest=manifest_path, budget_s=budget_s, ops=ops, dtypes=dtypes,
                          properties=properties, level=level, corpus_dir=corpus_dir, results_dir=results_dir,
                          workers=workers, examples_per_task=examples_per_task, task_timeout_s=task_timeout,
                          compile_backend=target.compile_backend, shape_mode=shape_mode, seed=seed,
                          max_visits=max_visits,
                          compile_settings=target.compile.as_json() if target.compile is not None else None)
    try:
        summary = hunt(options, items, click.echo)
    except LedgerError as exc:  # a known_crashes.json next to the manifest that cannot be used
        fail(f"known-crash ledger: {exc}")
    print_summary(summary, click.echo)
    sys.exit(exit_status(summary))


def _open_device(device: str, manifest, compile_backend: str | None = None,  # noqa: ANN001 - a Manifest
                 shape_mode: str | None = None):  # noqa: ANN202 - the run's Target
    """Import the manifest's backend, check the compile target and allocate on --device here, before workers
    start; the target (its CompileSpec as the workers build it). Exits 2 when it cannot be used, and warns when
    the manifest names another device type."""
    from torchcts.run_setup.device import check_device, device_name_warning, run_target
    from torchcts.run_setup.errors import SessionError
    from torchcts.run_setup.manifest_load import import_manifest_backend

    try:
        import_manifest_backend(manifest)
        target = run_target(device, manifest, compile_backend, shape_mode)
        check_device(device)
    except SessionError as exc:
        fail(str(exc))
    warning = device_name_warning(manifest, device, validation=False)
    if warning is not None:
        click.echo(f"torchcts: warning: {warning}", err=True)
    return target


@click.command("replay")
@click.argument("cases", nargs=-1, type=click.Path(exists=True, path_type=Path))
@device_option("Device to replay on (the device the cases were found on, or another).")
@compile_option("Replay through torch.compile(backend=B) on the device.")
@shape_mode_option("With --compile: replay every case in this shape mode (static, dynamic, automatic); default: each "
                   "case in the mode it failed in.")
@manifest_option(help="Manifest whose tolerance_overrides and custom_test_dirs apply (none needed).")
@click.option("--builtin", is_flag=True,
              help="Also replay the curated corpus shipped with TorchCTS: its cases found on eager backends, or "
                   "with --compile B those found under torch.compile(backend=B).")
@click.option("--update-status", is_flag=True,
              help="Mark open cases that now pass as fixed (and fixed cases that fail again as open).")
@click.option("--strict", is_flag=True, help="Exit 1 when any case still fails, not only on regressions.")
@click.option("--export-script", "export", type=InputFile(exists=True),
              help="Print a standalone Python script reproducing this case, and run nothing: it imports torch and "
                   "the case's backend_import module (else the manifest's), and exits 1 REPRODUCED, 0 not "
                   "reproduced, 2 could not run.")
@results_dir_option("Where the replay's run folder (records.jsonl, run.json) is written.")
@click.option("--max-case-bytes", metavar="N", callback=lambda _c, _p, v: _bytes(v),
              help="A case may decode at most N bytes of storages and build at most N bytes of tensors (a "
                   "stride-0 view counts in full); its file may have 2N + 1 MiB. 1G, 512M or bytes; default 64M.")
def replay(cases: tuple[Path, ...], device: str | None, compile_backend: str | None, shape_mode: str | None,
           manifest_path: Path | None,
           builtin: bool, update_status: bool, strict: bool, export: Path | None, results_dir: Path,
           max_case_bytes: int | None) -> None:
    """Replay corpus cases (files or folders) without Hypothesis.

    Without CASES, replays the folder `run` and `fuzz` write new cases to by default: ./corpus, or
    RESULTS_DIR/corpus where ./corpus is the curated corpus shipped with TorchCTS (that one is
    --builtin). Rebuilds each case exactly, reruns its property on the device, and reports it as
    still failing or now passing. A case file that cannot be read, or is over --max-case-bytes, is
    one `unreadable` line naming the file and field (a stored value outside its suite's declared
    bounds too); the other cases still run. A case TorchCTS itself could not run is a `harness
    error` line, never counted as failing. A case replayed on another device type or compile
    backend than it names says so and is never a regression. Exits 2 when a case could not be
    read or ended in a harness error (or for bad input), else 1 when a case marked fixed fails
    again (a regression) or, with --strict, when any case fails; 0 otherwise. The same replay runs under
    pytest with `python -m pytest --pyargs torchcts.properties --replay DIR --device D`.
    """
    from torchcts.cases.files import CaseFileError, builtin_cases
    from torchcts.core.case_limits import CaseLimits
    from torchcts.cases.corpus_default import default_corpus_dir

    if export is not None:
        from torchcts.cases.export import export_script

        manifest = _load_custom_properties(manifest_path)
        try:
            click.echo(export_script(export, device, CaseLimits.from_option(max_case_bytes),
                                     manifest.backend_import if manifest is not None else None), nl=False)
        except CaseFileError as exc:
            fail(str(exc))
        return
    if device is None:
        raise click.UsageError("pass --device D (the device to replay the cases on)")
    paths = list(cases) or ([] if builtin else [default_corpus_dir(results_dir)])
    if builtin:
        paths.extend(builtin_cases(compile_backend))
        if not paths:
            fail(f"the curated corpus holds no case found under --compile {compile_backend}")
    if not all(p.exists() for p in paths):
        fail(f"no corpus at {', '.join(str(p) for p in paths if not p.exists())}; name case files or folders")
    from torchcts.cases.replay import run_replay

    manifest_path = resolved_manifest(manifest_path, device, compile_backend, required=False)
    sys.exit(run_replay(paths, device=device, compile_backend=compile_backend, shape_mode=shape_mode,
                        manifest=manifest_path,
                        results_dir=results_dir, update_status=update_status, strict=strict, echo=click.echo,
                        limits=CaseLimits.from_option(max_case_bytes)))


def _load_custom_properties(manifest_path: Path | None):  # noqa: ANN202 - a Manifest, or None
    """Register the manifest's `custom_test_dirs` (--manifest, else ./manifest.py if it exists), as a replay
    run does, so a case of a custom property is known; the manifest (None: none). Exits 2 on a bad manifest
    or custom suite."""
    from torchcts.manifest import ManifestError, load_manifest
    from torchcts.plan import registry

    path = manifest_path if manifest_path is not None else Path("manifest.py")
    if manifest_path is None and not path.exists():
        return None
    try:
        manifest, _ = load_manifest(path)
        registry.load(tuple(folder for folder in manifest.custom_test_dirs if Path(folder).is_dir()))
    except ManifestError as exc:
        fail(exc.render())
    except registry.RegistryError as exc:
        fail(f"custom_test_dirs: {exc}")
    return manifest


def _bytes(value: str | None) -> int | None:
    """--max-case-bytes as a number of bytes (1G, 512M, 4096)."""
    from torchcts.core.case_limits import byte_count

    try:
        return None if value is None else byte_count(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-case-bytes") from None


@click.command("selftest")
@click.option("--level", type=IntRange(1, 8), default=2, show_default=True, help="Semantic level of the runs.")
@click.option("--dtype", "dtypes", multiple=True, default=("float32", "float64", "bfloat16", "int32"),
              show_default=True,
              shell_complete=complete_dtypes,
              help="Dtypes to run (a bug in one dtype needs that dtype).")
@click.option("--max-examples", type=IntRange(1, MAX_EXAMPLES), default=10, show_default=True,
              help="Hypothesis examples per item.")
@results_dir_option("Where the runs' folders go.", default=Path("results/selftest"))
@click.option("--bug", "bugs", multiple=True, metavar="NAME",
              help="Only this seeded bug (repeatable; default: every bug but the crash and hang ones).")
@click.option("--phase", "only_phases", multiple=True, type=click.Choice(["opinfo", "suites", "compile"]),
              help="Only this phase: the OpInfo properties, the scenario suites, or the whole-model compile suites "
                   "(their aot_eager scenarios; --ops replaces that choice) (repeatable; default: all three).")
@click.option("--ops", "ops", multiple=True, metavar="REGEX",
              help="Only the ops or scenarios this regex finds (repeatable; as run --ops): a quicker, partial selftest.")
@click.option("--workers", type=IntRange(1, 64), metavar="N",
              help="Runs at once (`torchcts run` processes; each clean run split in N shards). Default: one per "
                   "usable core.")
def selftest(level: int, dtypes: tuple[str, ...], max_examples: int, results_dir: Path, bugs: tuple[str, ...],
             only_phases: tuple[str, ...], ops: tuple[str, ...], workers: int | None) -> None:
    """Prove the suites catch bugs: run them against the faulty device once clean and once per seeded bug.

    The OpInfo properties run at --level in --dtype; the scenario suites (views, copies, ieee754,
    sparse, ...) at their own levels in every dtype they list; the compile suites' aot_eager
    scenarios, rerun only for the compile bugs (which fire only in compiled code). Prints the
    detection table per suite, which bugs were detected (with the failing items), which were
    missed, and the clean backend's failures (there must be none). Bugs written for an OpInfo
    property above --level (gradcheck, double_backward: level 4) are listed as not run, with the
    level that runs them (--level 4 --dtype float64 --dtype float32). Each bug is rerun only on the
    items where the clean run saw its condition hold, in --workers processes at once. Exits 1 when a
    bug was missed or the clean run failed; Ctrl-C or SIGTERM stops the runs under way (they keep
    what they ran), prints the partial report and exits 130 or 143.
    """
    from torchcts.testing.faulty.bugs import BUGS
    from torchcts.testing.selftest import print_report, run_selftest

    unknown = [name for name in bugs if name not in BUGS or not BUGS[name].in_all]
    if unknown:
        fail(f"--bug {unknown[0]!r}: not a seeded bug selftest runs; known: "
             f"{', '.join(n for n, b in BUGS.items() if b.in_all)}")
    report = run_selftest(level=level, dtypes=dtypes, max_examples=max_examples, results_dir=results_dir,
                          progress=click.echo, only_bugs=bugs, only_phases=only_phases, ops=ops, workers=workers)
    print_report(report, click.echo)
    sys.exit(report.exit_code)
