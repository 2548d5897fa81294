"""The `torchcts` command line: each command parses its options, calls the library, and prints."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

import torchcts
from torchcts.arguments import MAX_EXAMPLES, MAX_SEED
from torchcts.cli.hash_seed import run_with_fixed_hash_seed
from torchcts.cli.project_venv import maybe_switch_to_project_venv
from torchcts.manifest.template_names import TEMPLATE_NAMES

# torch and the manifest model load inside the commands that need them: `torchcts report` and
# `--help` start without importing torch.

EXIT_BAD_INPUT = 2


class InputFile(click.Path):
    """A file the command reads: when it exists, a regular file (reading a FIFO or /dev/zero never ends)."""

    def __init__(self, exists: bool = False) -> None:
        super().__init__(exists=exists, dir_okay=False, path_type=Path)

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        from torchcts.arguments import input_file_problem

        path = value if value == "" else super().convert(value, param, ctx)
        problem = input_file_problem(path)
        if problem is not None:
            self.fail(problem, param, ctx)
        return path


class OutputFolder(click.Path):
    """A folder the command writes into: creatable and writable, checked (and left as found) at parse time,
    so a run does not fail hours in when it first writes there."""

    def __init__(self) -> None:
        super().__init__(file_okay=False, path_type=Path)

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        from torchcts.arguments import output_folder_problem

        path = value if value == "" else super().convert(value, param, ctx)
        problem = output_folder_problem(path)
        if problem is not None:
            self.fail(problem, param, ctx)
        return path


class OutputFile(click.Path):
    """A file the command writes (beside it, then renamed over it): its folder creatable and writable."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value, param, ctx):  # noqa: ANN001, ANN201 - click's signature
        from torchcts.arguments import output_file_problem

        path = value if value == "" else super().convert(value, param, ctx)
        problem = output_file_problem(path, replaced=True)
        if problem is not None:
            self.fail(problem, param, ctx)
        return path


def _device(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--device: a name, not an empty string (an unset shell variable must not mean `cpu`)."""
    if value is not None and not value.strip():
        raise click.BadParameter("empty; name a device: cpu, cuda, cuda:1, meta, or a backend's name", ctx, param)
    return value


_manifest_option = click.option(
    "--manifest",
    "manifest_path",
    type=InputFile(),
    default=Path("manifest.py"),
    show_default=True,
    help="Backend manifest: a Python file defining a dict `manifest`.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(torchcts.__version__, prog_name="torchcts")
def cli() -> None:
    """TorchCTS: conformance tests for PyTorch backends.

    A backend's manifest claims dtypes and capabilities; TorchCTS turns each claim into property
    tests against CPU oracles. Start with `torchcts init`, then `torchcts check-manifest`.

    TorchCTS tests the torch of the Python environment it runs in. Set
    TORCHCTS_USE_PROJECT_VENV=1 to run it inside the .venv of the current folder instead.
    """


@cli.command("check-manifest")
@_manifest_option
@click.option("--strict", is_flag=True, help="Treat warnings (claims that cannot all be tested) as errors.")
def check_manifest(manifest_path: Path, strict: bool) -> None:
    """Validate a manifest and summarise what it claims.

    Lists every problem at once, each with its key path, the bad value, what is allowed and the
    nearest valid name. Exits 0 when the manifest is valid, 2 when it is not (or, with --strict,
    when it has warnings).
    """
    from torchcts.manifest import ManifestError, environment_problems, load_manifest
    from torchcts.manifest.summary import summary_lines
    try:
        manifest, warnings = load_manifest(manifest_path)
    except ManifestError as exc:
        _fail(exc.render())
    warnings = warnings + environment_problems(manifest)
    click.echo(f"{manifest_path}: valid manifest")
    for line in summary_lines(manifest):
        click.echo(f"  {line}")
    for problem in warnings:
        click.echo(f"{manifest_path}: warning: {problem.render()}", err=True)
    if strict and warnings:
        _fail(f"{manifest_path}: {len(warnings)} warning(s) and --strict was given")


@cli.command("init")
@click.option("--template", type=click.Choice(TEMPLATE_NAMES), help="Which starting manifest to write.")
@click.option("--output", type=OutputFile(), default=Path("manifest.py"),
              show_default=True, help="Where to write the manifest.")
@click.option("--device-name", help="Device type the manifest is for (default: auto; asked for on a terminal).")
@click.option("--backend-import", help="Module to import before a run, to register the backend.")
@click.option("--force", is_flag=True, help="Overwrite an existing manifest.")
@click.option("--non-interactive", is_flag=True, help="Never prompt; a missing --template is an error.")
def init(template: str | None, output: Path, device_name: str | None, backend_import: str | None,
         force: bool, non_interactive: bool) -> None:
    """Write a starting manifest from a template.

    \b
    Templates:
      smoke      float32 only, one sample per op, level 1
      minimal    float32, int64, bool, level 2
      inference  every real dtype, inference capabilities, level 4
      training   inference plus autograd and training capabilities, level 4
      complete   every dtype and single-device capability, level 8

    Without --template, asks for one when run on a terminal.
    """
    from torchcts.manifest.templates import render_template, template_purpose
    interactive = not non_interactive and sys.stdin.isatty()
    if template is None:
        if not interactive:
            reason = "with --non-interactive" if non_interactive else "when stdin is not a terminal"
            raise click.UsageError(f"--template is required {reason}; choose one of {', '.join(TEMPLATE_NAMES)}")
        for name in TEMPLATE_NAMES:
            click.echo(f"  {template_purpose(name)}")
        template = click.prompt("Template", type=click.Choice(TEMPLATE_NAMES), default="smoke")
    if device_name is None:
        device_name = click.prompt("Device name", default="auto") if interactive else "auto"
    if output.exists() and not force:
        _fail(f"{output}: already exists; pass --force to overwrite it")
    text = render_template(template, device_name=device_name, backend_import=backend_import)
    _validate_rendered(output, text)
    partial = output.with_name(f".{output.name}.partial")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, output)
    except OSError as exc:  # checked when --output was parsed; a full disk or a race remains
        _fail(f"--output {output}: cannot write it: {exc.strerror or exc}")
    click.echo(f"wrote {output} from template {template_purpose(template)}")
    click.echo(f"next: torchcts check-manifest --manifest {output}")


@cli.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--device", callback=_device, help="Device under test (cuda, mps, privateuseone, faulty, meta, cpu, ...).")
@_manifest_option
@click.option("--level", type=click.IntRange(1, 8), help="Deselect (and record) items above this semantic level.")
@click.option("--dtype", "dtypes", multiple=True, help="Only these dtypes (float32, torch.bfloat16); repeatable.")
@click.option("--ops", multiple=True, help="Only OpInfos whose id matches this regex; repeatable.")
@click.option("--property", "properties", multiple=True,
              help="Only these properties (forward, layout, errors, inplace, out, backward); repeatable.")
@click.option("--derandomize", is_flag=True, help="Seeds from item ids alone: identical cases on every run.")
@click.option("--seed", type=click.IntRange(0, MAX_SEED),
              help="Repeat a run's random seed (printed by every run that is not derandomized).")
@click.option("--max-examples", type=click.IntRange(1, MAX_EXAMPLES),
              help="Hypothesis examples per item (default: the manifest's).")
@click.option("--results-dir", type=OutputFolder(), default=Path("results"),
              show_default=True, help="Where the run folder (records.jsonl, run.json) is written.")
@click.option("--validation", is_flag=True, help="Run against CPU itself to validate the harness.")
@click.option("--compile", "compile_backend", type=click.Choice(["inductor", "aot_eager", "eager"]),
              help="Run every op through torch.compile(backend=...) on the device; compare with eager CPU.")
@click.option("--corpus", "corpus_dir", type=OutputFolder(), default=Path("corpus"),
              show_default=True, help="Where the shrunk counterexample of every failing item is written.")
@click.option("--subprocess-per-test", is_flag=True, help="Run every item in its own forked process.")
@click.option("--known-segfault-policy", type=click.Choice(["isolate", "off"]), default="isolate", show_default=True,
              help="Isolate items a known-crash rule matches, or ignore the ledger.")
@click.option("--known-crashes", type=InputFile(),
              help="Project-local known-crash ledger (default: known_crashes.json next to the manifest).")
@click.option("--known-segfault-audit", is_flag=True,
              help="Validate every known-crash rule and show the items it matches; run nothing.")
@click.option("--adaptive-isolation", type=click.Choice(["auto", "off"]), default="auto", show_default=True,
              help="Isolate items that crashed or hung in earlier runs (same hardware, device, torch minor).")
@click.option("--item-timeout", type=click.FloatRange(min=1), help="Seconds an isolated item may run (default 900).")
@click.argument("pytest_args", nargs=-1, type=click.UNPROCESSED)
def run(device: str | None, manifest_path: Path, level: int | None, dtypes: tuple[str, ...], ops: tuple[str, ...],
        properties: tuple[str, ...], derandomize: bool, seed: int | None, max_examples: int | None,
        results_dir: Path, validation: bool, compile_backend: str | None, corpus_dir: Path,
        subprocess_per_test: bool, known_segfault_policy: str, known_crashes: Path | None,
        known_segfault_audit: bool, adaptive_isolation: str, item_timeout: float | None,
        pytest_args: tuple[str, ...]) -> None:
    """Run the property suites against a device and write results.

    Every item the manifest rules out, or this run deselects, is recorded with its reason.
    Results go to RESULTS_DIR/<run-id>/ (records.jsonl, run.json). Arguments after `--` go to
    pytest. Items that may crash or hang (a known-crash rule, or evidence in earlier runs) run in a
    forked child: a crash is recorded `crashed`, a hang `timed_out`, and the run goes on. Exits 0
    when no item failed, 1 when one did, 2 for bad input, 128 + the signal's number when Ctrl-C
    (130), SIGTERM (143) or SIGHUP (129) stopped it (the results so far are kept and marked
    partial).
    """
    from torchcts.plugin.launch import RunOptions, run_suites

    if device is None and not validation:
        raise click.UsageError("pass --device D, or --validation to run against CPU itself")
    options = RunOptions(device=device, manifest=manifest_path, level=level, dtypes=dtypes, ops=ops,
                         properties=properties, derandomize=derandomize, seed=seed, max_examples=max_examples,
                         results_dir=results_dir, validation=validation, compile_backend=compile_backend,
                         corpus_dir=corpus_dir, pytest_args=pytest_args,
                         isolation_args=_isolation_args(subprocess_per_test, known_segfault_policy, known_crashes,
                                                        known_segfault_audit, adaptive_isolation, item_timeout))
    sys.exit(run_suites(options))


def _isolation_args(everything: bool, policy: str, ledger: Path | None, audit: bool, adaptive: str,
                    timeout: float | None) -> tuple[str, ...]:
    args = ["--known-segfault-policy", policy, "--adaptive-isolation", adaptive]
    args += ["--subprocess-per-test"] if everything else []
    args += ["--known-crashes", str(ledger)] if ledger else []
    args += ["--known-segfault-audit"] if audit else []
    args += ["--item-timeout", str(timeout)] if timeout else []
    return tuple(args)


@cli.command("fuzz")
@click.option("--device", required=True, callback=_device, help="Device to hunt bugs on.")
@_manifest_option
@click.option("--budget", help="Time to spend: 90s, 10m, 1h (default: 10m, or no time limit with --max-visits).")
@click.option("--max-visits", type=click.IntRange(min=1), metavar="N",
              help="Stop after N scheduled visits (--examples-per-task examples each), whatever the machine's "
                   "speed; with --seed and --workers 1 the hunt repeats exactly. With --budget: whichever ends first.")
@click.option("--ops", multiple=True, help="Only OpInfos whose id matches this regex; repeatable.")
@click.option("--dtype", "dtypes", multiple=True, help="Only these dtypes; repeatable.")
@click.option("--property", "properties", multiple=True, help="Only these properties; repeatable.")
@click.option("--level", type=click.IntRange(1, 8), help="Semantic level (default: the manifest's).")
@click.option("--corpus", "corpus_dir", type=OutputFolder(), default=Path("corpus"),
              show_default=True, help="Where new counterexamples are written.")
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Worker processes (each imports torch and the op database once).")
@click.option("--examples-per-task", type=click.IntRange(1, 10_000), default=10, show_default=True,
              help="Hypothesis examples per scheduled visit of an item.")
@click.option("--task-timeout", type=click.FloatRange(min=1), default=120.0, show_default=True,
              help="Seconds one visit may take before its item counts as hung (timed_out): a hang detector, "
                   "not a budget; raise it on a slow or busy machine.")
@click.option("--compile", "compile_backend", type=click.Choice(["inductor", "aot_eager", "eager"]),
              help="Hunt through torch.compile(backend=...) on the device.")
@click.option("--seed", type=click.IntRange(0, MAX_SEED), help="Repeat a hunt's scheduling and seeds (printed by every hunt).")
@click.option("--results-dir", type=OutputFolder(), default=Path("results"),
              show_default=True, help="Where fuzz-<run-id>/fuzz.json (examples per item, cases found) goes.")
def fuzz(device: str, manifest_path: Path, budget: str | None, max_visits: int | None, ops: tuple[str, ...],
         dtypes: tuple[str, ...], properties: tuple[str, ...], level: int | None, corpus_dir: Path, workers: int,
         examples_per_task: int, task_timeout: float, compile_backend: str | None, seed: int | None,
         results_dir: Path) -> None:
    """Hunt for bugs with random seeds under a budget; new shrunk cases go to the corpus.

    Every item the manifest claims (narrowed by --ops, --dtype, --property, --level) is visited
    once, then visits move toward items that still show new behaviour (new cases, growing error)
    and away from saturated ones. The budget is time (--budget), a number of visits
    (--max-visits), or both. A visit budget does not depend on the machine's speed: with --seed
    and one worker, the same corpus, torch and TorchCTS give the same visits and cases on any
    machine (what CI wants). A crash or hang of one item is recorded and the hunt goes on.
    Ctrl-C, SIGTERM and SIGHUP stop it cleanly (exit 130, 143, 129; cases found are kept). Exits 1 when new failures (or crashes, hangs) were found, 0 when none,
    2 for bad input.
    """
    from torchcts.fuzz.hunt import FuzzOptions, exit_status, hunt, parse_budget, print_summary

    if budget is None and max_visits is None:
        budget = "10m"
    try:
        budget_s = parse_budget(budget) if budget is not None else None  # None: --max-visits alone bounds it
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--budget") from None
    if task_timeout != task_timeout:  # FloatRange lets NaN through; it would disable hang detection
        raise click.BadParameter("nan is not a number of seconds", param_hint="--task-timeout")
    plan, manifest = _plan(manifest_path, level, dtypes, ops, properties)
    items = list(plan.items)
    if not items:
        _fail("no item to fuzz: the manifest and the selection leave nothing")
    _open_device(device, manifest)
    options = FuzzOptions(device=device, manifest=manifest_path, budget_s=budget_s, ops=ops, dtypes=dtypes,
                          properties=properties, level=level, corpus_dir=corpus_dir, results_dir=results_dir,
                          workers=workers, examples_per_task=examples_per_task, task_timeout_s=task_timeout,
                          compile_backend=compile_backend, seed=seed, max_visits=max_visits)
    summary = hunt(options, items, click.echo)
    print_summary(summary, click.echo)
    sys.exit(exit_status(summary))


def _plan(manifest_path: Path, level: int | None, dtypes: tuple[str, ...], ops: tuple[str, ...],
          properties: tuple[str, ...]):
    """(the plan of a run with this selection, the manifest); exits 2 on bad input."""
    from torchcts.manifest import ManifestError, load_manifest
    from torchcts.plan.build import Selection, SelectionError, build_plan
    from torchcts.plugin.session import SessionError, _dtypes, _properties

    try:
        manifest, _ = load_manifest(manifest_path)
        selection = Selection(level=level, dtypes=_dtypes(list(dtypes)), op_patterns=ops,
                              properties=_properties(list(properties)))
    except ManifestError as exc:
        _fail(exc.render())
    except (SessionError, SelectionError) as exc:
        _fail(str(exc))
    return build_plan(manifest, selection), manifest


def _open_device(device: str, manifest) -> None:  # noqa: ANN001 - a Manifest
    """Import the manifest's backend and allocate on --device here, before workers start; exits 2 when it
    cannot be used, and warns when the manifest names another device type."""
    from torchcts.plugin.session import SessionError, _check_device, _device_name_warning, _import_backend

    try:
        _import_backend(manifest)
        _check_device(device)
    except SessionError as exc:
        _fail(str(exc))
    warning = _device_name_warning(manifest, device, validation=False)
    if warning is not None:
        click.echo(f"torchcts: warning: {warning}", err=True)


@cli.command("show-skips")
@click.option("--device", callback=_device, help="Device the run would target (recorded in the listing; nothing executes).")
@_manifest_option
@click.option("--level", type=click.IntRange(1, 8), help="Deselect items above this semantic level, as run would.")
@click.option("--dtype", "dtypes", multiple=True, help="Only these dtypes, as run would; repeatable.")
@click.option("--ops", multiple=True, help="Only OpInfos whose id matches this regex; repeatable.")
@click.option("--property", "properties", multiple=True, help="Only these properties; repeatable.")
@click.option("--list", "list_items", is_flag=True, help="Also list every item, not only the counts.")
def show_skips(device: str | None, manifest_path: Path, level: int | None, dtypes: tuple[str, ...],
               ops: tuple[str, ...], properties: tuple[str, ...], list_items: bool) -> None:
    """Show, without running anything, every item a run would not run and why, and what would run.

    Groups the items not run by outcome and reason, with counts per reason, per capability and
    per dtype. Exits 2 for a bad manifest or selection.
    """
    from torchcts.plan.skips import skip_lines

    plan, manifest = _plan(manifest_path, level, dtypes, ops, properties)
    for line in skip_lines(plan, manifest, device, list_items):
        click.echo(line)


@cli.command("report")
@click.option("--from", "source", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The run folder (results/<run-id>/) to report on (default: the latest run in --results-dir).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where runs are looked for: the latest run (default ./results) and baselines (default: the "
                   "folder holding the run).")
@click.option("--baseline", default="auto", show_default=True,
              help="`auto` (the latest earlier run with the same hardware key, device and torch minor version), "
                   "`none`, or a run folder.")
@click.option("--output", type=OutputFolder(),
              help="Where the report files go (default: <run folder>/report/).")
@click.option("--format", "formats", multiple=True, type=click.Choice(["md", "html", "junit", "json"]),
              help="Only these formats (default: all four); repeatable.")
def report(source: Path | None, results_dir: Path | None, baseline: str, output: Path | None,
           formats: tuple[str, ...]) -> None:
    """Regenerate a run's reports from its saved results, without running anything.

    Writes scorecard.md, report.html (self-contained), junit.xml and summary.json. A partial run is
    marked partial and gets no support percentage. Exits 2 when the run's files (or an explicit
    --baseline's) cannot be read or are malformed, naming the file and line; an earlier run that
    cannot be read is skipped with a warning when the baseline is found automatically.
    """
    from torchcts.report.render import FORMATS, latest_run_folder, write_report
    from torchcts.report.data import ResultsError

    folder = source or latest_run_folder(results_dir or Path("results"))
    if folder is None:
        _fail(f"{results_dir or 'results'}: no run folder (results/<run-id>/run.json); run `torchcts run` first "
              "or pass --from")
    if baseline not in ("auto", "none") and not os.path.isdir(baseline):
        _fail(f"--baseline {baseline}: not a run folder; use auto, none or a results/<run-id>/ folder")
    try:
        written = write_report(folder, output=output, baseline=baseline, results_dir=results_dir,
                               formats=formats or FORMATS)
    except ResultsError as exc:
        _fail(str(exc))
    for name, path in written.items():
        click.echo(f"{name:6} {path}")


@cli.command("replay")
@click.argument("cases", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--device", callback=_device, help="Device to replay on (the device the cases were found on, or another).")
@click.option("--compile", "compile_backend", type=click.Choice(["inductor", "aot_eager", "eager"]),
              help="Replay through torch.compile(backend=...) on the device.")
@click.option("--manifest", "manifest_path", type=InputFile(),
              help="Manifest whose tolerance_overrides apply (default ./manifest.py if it exists; none needed).")
@click.option("--builtin", is_flag=True, help="Also replay the curated corpus shipped with TorchCTS.")
@click.option("--update-status", is_flag=True,
              help="Mark open cases that now pass as fixed (and fixed cases that fail again as open).")
@click.option("--strict", is_flag=True, help="Exit 1 when any case still fails, not only on regressions.")
@click.option("--export-script", "export", type=InputFile(exists=True),
              help="Print a standalone torch-only Python script reproducing this case, and run nothing.")
@click.option("--results-dir", type=OutputFolder(), default=Path("results"),
              show_default=True, help="Where the replay's run folder (records.jsonl, run.json) is written.")
@click.option("--max-case-bytes", metavar="N", callback=lambda _c, _p, v: _bytes(v),
              help="A case may decode at most N bytes of storages and build at most N bytes of tensors (a "
                   "stride-0 view counts in full); its file may have 2N + 1 MiB. 1G, 512M or bytes; default 64M.")
def replay(cases: tuple[Path, ...], device: str | None, compile_backend: str | None, manifest_path: Path | None,
           builtin: bool, update_status: bool, strict: bool, export: Path | None, results_dir: Path,
           max_case_bytes: int | None) -> None:
    """Replay corpus cases (files or folders; default ./corpus) without Hypothesis.

    Rebuilds each case exactly, reruns its property on the device, and reports it as still
    failing or now passing. A case file that cannot be read, or is over --max-case-bytes, is one
    `unreadable` line naming the file and field; the other cases still run. Exits 2 when a case
    could not be read (or for bad input), else 1 when a case marked fixed fails again (a
    regression) or, with --strict, when any case fails; 0 otherwise. The same replay runs under
    pytest with `python -m pytest --pyargs torchcts.properties --corpus DIR --device D`.
    """
    from torchcts.cases.files import CaseFileError, builtin_corpus
    from torchcts.cases.limits import CaseLimits
    from torchcts.cases.replay import run_replay

    if export is not None:
        from torchcts.cases.export import export_script

        try:
            click.echo(export_script(export, device, CaseLimits.from_option(max_case_bytes)), nl=False)
        except CaseFileError as exc:
            _fail(str(exc))
        return
    if device is None:
        raise click.UsageError("pass --device D (the device to replay the cases on)")
    paths = list(cases) or ([] if builtin else [Path("corpus")])
    if builtin:
        paths.append(builtin_corpus())
    if not all(p.exists() for p in paths):
        _fail(f"no corpus at {', '.join(str(p) for p in paths if not p.exists())}; name case files or folders")
    sys.exit(run_replay(paths, device=device, compile_backend=compile_backend, manifest=manifest_path,
                        results_dir=results_dir, update_status=update_status, strict=strict, echo=click.echo,
                        limits=CaseLimits.from_option(max_case_bytes)))


def _bytes(value: str | None) -> int | None:
    from torchcts.cases.limits import byte_count

    try:
        return None if value is None else byte_count(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-case-bytes") from None


@cli.command("selftest")
@click.option("--level", type=click.IntRange(1, 8), default=2, show_default=True, help="Semantic level of the runs.")
@click.option("--dtype", "dtypes", multiple=True, default=("float32", "bfloat16", "int32"), show_default=True,
              help="Dtypes to run (a bug in one dtype needs that dtype).")
@click.option("--max-examples", type=click.IntRange(1, MAX_EXAMPLES), default=10, show_default=True,
              help="Hypothesis examples per item.")
@click.option("--results-dir", type=OutputFolder(), default=Path("results/selftest"),
              show_default=True, help="Where the runs' folders go.")
def selftest(level: int, dtypes: tuple[str, ...], max_examples: int, results_dir: Path) -> None:
    """Prove the suites catch bugs: run them against the faulty device once clean and once per seeded bug.

    Prints which bugs were detected (with the failing items), which were missed, and the clean
    backend's failures (there must be none). Exits 1 when a bug was missed or the clean run failed.
    """
    from torchcts.testing.selftest import print_report, run_selftest

    report = run_selftest(level=level, dtypes=dtypes, max_examples=max_examples, results_dir=results_dir,
                          progress=click.echo)
    print_report(report, click.echo)
    sys.exit(0 if report.ok else 1)


def _validate_rendered(output: Path, text: str) -> None:
    """Refuse to write a manifest that would not pass check-manifest (e.g. a bad --device-name)."""
    from torchcts.manifest import ManifestError, parse_manifest
    namespace: dict[str, object] = {}
    exec(compile(text, str(output), "exec"), namespace)
    try:
        parse_manifest(namespace["manifest"], output.resolve())
    except ManifestError as exc:
        _fail(exc.render())


def _fail(message: str) -> None:
    click.echo(message, err=True)
    sys.exit(EXIT_BAD_INPUT)


def main() -> None:
    """Console-script entry point."""
    maybe_switch_to_project_venv(sys.argv[1:])
    run_with_fixed_hash_seed()  # derandomized runs draw the same cases in every process
    cli(prog_name="torchcts")
