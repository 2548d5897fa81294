"""The commands that run no property: `init` and `check-manifest` (the manifest), `show-skips` (the plan) and
`report` (a finished run's files). Each parses its options, calls one function of the library, and prints.
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import os
import sys
from pathlib import Path

import click

from torchcts.cli.completion import TEMPLATE_NAMES
from torchcts.cli.options import (
    LazyChoice, OutputFile, compile_option, device_option, fail, manifest_option, output_folder_option,
    resolved_manifest,
)
from torchcts.cli.selection import (capability_option, claims_beyond_file, only_capabilities, plan_for,
                                    selection_options)


def _template_names() -> tuple[str, ...]:
    """The `init` templates (`torchcts.manifest` imports torch: read when --template is checked or shown)."""
    from torchcts.manifest.template_names import TEMPLATE_NAMES

    return TEMPLATE_NAMES


@click.command("check-manifest")
@manifest_option()
@device_option("Without --manifest and ./manifest.py: check the manifest TorchCTS ships for this device.")
@compile_option("With --device cpu: check the manifest TorchCTS ships for torch.compile(backend=...).", runs=False)
@click.option("--strict", is_flag=True, help="Treat warnings (claims that cannot all be tested) as errors.")
def check_manifest(manifest_path: Path | None, device: str | None, compile_backend: str | None, strict: bool) -> None:
    """Validate a manifest and summarise what it claims.

    Lists every problem at once, each with its key path, the bad value, what is allowed and the
    nearest valid name. Exits 0 when the manifest is valid, 2 when it is not (or, with --strict,
    when it has warnings).
    """
    from torchcts.manifest import ManifestError, environment_problems, load_manifest
    from torchcts.manifest.summary import summary_lines

    manifest_path = resolved_manifest(manifest_path, device, compile_backend)
    try:
        manifest, warnings = load_manifest(manifest_path)
    except ManifestError as exc:
        fail(exc.render())
    warnings = warnings + environment_problems(manifest)
    click.echo(f"{manifest_path}: valid manifest")
    for line in summary_lines(manifest):
        click.echo(f"  {line}")
    for problem in warnings:
        click.echo(f"{manifest_path}: warning: {problem.render()}", err=True)
    if strict and warnings:
        fail(f"{manifest_path}: {len(warnings)} warning(s) and --strict was given")


@click.command("init")
@click.option("--template", type=LazyChoice(_template_names, complete=TEMPLATE_NAMES),
              help="Which starting manifest to write.")
@click.option("--output", type=OutputFile(), default=Path("manifest.py"),
              show_default=True, help="Where to write the manifest.")
@click.option("--device-name", help="Device type the manifest is for (default: auto; asked for on a terminal).")
@click.option("--backend-import", help="Module to import before a run, to register the backend.")
@click.option("--force", is_flag=True, help="Overwrite an existing manifest.")
@click.option("--non-interactive", is_flag=True, help="Never prompt; a missing --template is an error.")
@click.option("--probe", is_flag=True, help="Probe --device first and write a DRAFT manifest whose claims match what "
                                            "works there (dtypes, capabilities, skip_ops for missing kernels).")
@click.option("--device", "probe_device", metavar="D", help="With --probe: the device to probe (tiny, cuda, ...).")
@click.option("--ops", "probe_ops", multiple=True, metavar="REGEX",
              help="With --probe: probe only the ops whose OpInfo id matches (repeatable); default all.")
def init(template: str | None, output: Path, device_name: str | None, backend_import: str | None,
         force: bool, non_interactive: bool, probe: bool, probe_device: str | None,
         probe_ops: tuple[str, ...]) -> None:
    """Write a starting manifest from a template.

    \b
    Templates:
      smoke      float32 only, one sample per op, level 1
      minimal    float32, int64, bool, level 2
      inference  every real dtype, inference capabilities, level 4
      training   inference plus autograd and training capabilities, level 4
      complete   every dtype and single-device capability, level 8

    Without --template, asks for one when run on a terminal.

    With --probe --device D [--backend-import M], imports M, probes which dtypes and capabilities
    work on D, runs the template's items once (derandomized, as `torchcts run` would) and writes a
    draft marked for review: dtypes and capabilities that failed their probe are dropped, ops whose
    items hit a missing kernel go into skip_ops ("no kernel for aten::X"). The template defaults to
    smoke. A derandomized run of the draft with the same versions hits no missing kernel.
    """
    from torchcts.manifest.template_names import TEMPLATE_NAMES
    from torchcts.manifest.templates import render_template, template_purpose

    if probe != (probe_device is not None) or (probe_ops and not probe):
        raise click.UsageError("--probe needs --device D (the device to probe), and --device and --ops need --probe")
    interactive = not non_interactive and sys.stdin.isatty() and not probe
    if probe and template is None:
        template = "smoke"
    if template is None:
        if not interactive:
            reason = "with --non-interactive" if non_interactive else "when stdin is not a terminal"
            raise click.UsageError(f"--template is required {reason}; choose one of {', '.join(TEMPLATE_NAMES)}")
        for name in TEMPLATE_NAMES:
            click.echo(f"  {template_purpose(name)}")
        template = click.prompt("Template", type=click.Choice(TEMPLATE_NAMES), default="smoke")
    if device_name is None and probe:
        device_name = probe_device.split(":", 1)[0]
    if device_name is None:
        device_name = click.prompt("Device name", default="auto") if interactive else "auto"
    if output.exists() and not force:
        fail(f"{output}: already exists; pass --force to overwrite it")
    if probe:
        text = _probed_draft(template, probe_device, device_name, backend_import, output, probe_ops)
    else:
        text = render_template(template, device_name=device_name, backend_import=backend_import)
    _validate_rendered(output, text)
    from torchcts.disk import write_atomic

    write_atomic(output, text)  # checked when --output was parsed; a full disk or a race remains: WriteError
    if probe:
        click.echo(f"wrote the DRAFT manifest {output} (template {template}, probed on {probe_device}): review it")
        click.echo(f"next: torchcts run --manifest {output} --device {probe_device}")
        return
    click.echo(f"wrote {output} from template {template_purpose(template)}")
    click.echo(f"next: torchcts check-manifest --manifest {output}")


def _probed_draft(template: str, device: str, device_name: str, backend_import: str | None, output: Path,
                  ops: tuple[str, ...]) -> str:
    """`init --probe`: import the backend, check the device, probe it (`torchcts.probe.draft`) with progress on
    stderr; the draft's text. Ctrl-C or SIGTERM stops it with nothing written (exit 128 + signal)."""
    from torchcts import interrupts
    from torchcts.isolation.fork import fork_safe
    from torchcts.manifest.load import BackendImportError, import_backend
    from torchcts.plan.selection import Selection, SelectionError
    from torchcts.run_setup.device import check_device, device_kind
    from torchcts.run_setup.errors import SessionError
    from torchcts.probe.draft import DraftError, make_draft

    try:
        Selection(op_patterns=ops)
    except SelectionError as exc:
        fail(str(exc))
    if backend_import is not None:
        try:
            import_backend(backend_import)
        except BackendImportError as exc:
            fail(f"--backend-import {backend_import}: {exc}")
    try:
        check_device(device)
    except SessionError as exc:
        fail(str(exc))
    progress = _ProbeProgress()
    with interrupts.handling():
        try:
            draft = make_draft(template, device, device_name=device_name, backend_import=backend_import,
                               output=output, op_patterns=ops, fork=fork_safe(device_kind(device)),
                               say=lambda line: click.echo(f"torchcts init: {line}", err=True), progress=progress)
        except KeyboardInterrupt:
            progress.end()
            signum = interrupts.requested() or 2
            click.echo(f"torchcts init: interrupted; {output} not written", err=True)
            sys.exit(interrupts.exit_code(signum))
        except DraftError as exc:
            progress.end()  # the error goes on a line of its own, not after the progress line
            fail(f"torchcts init --probe: the draft does not validate:\n{exc}")
    progress.end()
    for line in draft.summary_lines():
        click.echo(f"torchcts init: {line}", err=True)
    return draft.text


class _ProbeProgress:
    """`init --probe`'s progress on stderr: a line rewritten in place on a terminal, else one per tenth of the items."""

    def __init__(self) -> None:
        import time

        self.clock = time.monotonic
        self.started = self.clock()
        self.tty = sys.stderr.isatty()
        self.open = False
        self.shown = 0

    def __call__(self, done: int, total: int, missing: int, ops: int) -> None:
        line = (f"torchcts init: {done}/{total} items, {missing} missing kernels in {ops} ops, "
                f"{self.clock() - self.started:.0f} s")
        if self.tty:
            click.echo(f"\r{line}\x1b[K", nl=False, err=True)
            self.open = True
        elif done == total or done * 10 // max(total, 1) > self.shown:
            self.shown = done * 10 // max(total, 1)
            click.echo(line, err=True)

    def end(self) -> None:
        if self.open:
            click.echo("", err=True)
            self.open = False


def _validate_rendered(output: Path, text: str) -> None:
    """Refuse to write a manifest that would not pass check-manifest (e.g. a bad --device-name)."""
    from torchcts.manifest import ManifestError, parse_manifest
    namespace: dict[str, object] = {}
    exec(compile(text, str(output), "exec"), namespace)
    try:
        parse_manifest(namespace["manifest"], output.resolve())
    except ManifestError as exc:
        fail(exc.render())


@click.command("show-skips")
@device_option("Device the run would target (recorded in the listing; nothing executes).")
@compile_option("The torch.compile backend the run would use (picks the shipped manifest without --manifest).",
                runs=False)
@manifest_option()
@selection_options(level_help="The depth, as run takes it: replaces the manifest's semantic_level; items above it "
                              "are level_filtered.",
                   dtype_help="Claim these dtypes for every op, as run would (the manifest's others are "
                              "deselected); repeatable.")
@capability_option("Only the items of properties that test this capability (their own, or one they also "
                   "prove, as forward proves ieee754); repeatable.")
@click.option("--list", "list_items", is_flag=True, help="Also list every item, not only the counts.")
def show_skips(device: str | None, compile_backend: str | None, manifest_path: Path | None, level: int | None,
               dtypes: tuple[str, ...], ops: tuple[str, ...], properties: tuple[str, ...],
               capabilities: tuple[str, ...], list_items: bool) -> None:
    """Show, without running anything, every item a run would not run and why, and what would run.

    Groups the items not run by outcome and reason, with counts per reason, per capability and
    per dtype. Exits 2 for a bad manifest or selection.
    """
    from torchcts.plan.skips import skip_lines

    manifest_path = resolved_manifest(manifest_path, device, compile_backend)
    plan, manifest = plan_for(manifest_path, level, dtypes, ops, properties)
    plan, testing = only_capabilities(plan, capabilities)
    if capabilities:
        click.echo(f"capability {', '.join(capabilities)}: " + (f"properties {', '.join(testing)}" if testing else
                                                                 "no registered property tests it (no items)"))
    claims = claims_beyond_file(manifest, level, dtypes)
    if claims:
        click.echo(f"this run's claims are not the manifest file's: {claims}")
    for line in skip_lines(plan, manifest, device, list_items):
        click.echo(line)


@click.command("report")
@click.option("--from", "source", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The run folder (results/<run-id>/) to report on (default: the latest run in --results-dir that "
                   "executed items; replays and --collect-only sessions are passed over).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),  # read, not written: no probe
              help="Where runs are looked for: the latest run (default ./results) and baselines (default: the "
                   "folder holding the run).")
@click.option("--baseline", default="auto", show_default=True,
              help="`auto` (the latest earlier run with the same hardware key, device and torch minor version), "
                   "`none`, or a run folder.")
@output_folder_option("--output", "Where the report files go (default: <run folder>/report/); with --merge, the "
                                  "merged run folder (its report goes into its report/).")
@click.option("--format", "formats", multiple=True, type=click.Choice(["md", "html", "junit", "json"]),
              help="Only these formats (default: all four); repeatable.")
@click.option("--coverage-audit", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A coverage audit (`torchcts coverage audit`'s audit.json) whose summary report.html shows "
                   "(default: <results dir>/coverage/audit.json when it exists).")
@click.option("--merge", "shards", multiple=True, metavar="RUN_FOLDER",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A run folder of `torchcts run --shard K/N` (repeatable): join the shards into one merged run "
                   "folder (--output, default <parent of the first>/merged-<id>/) and report on it there.")
@click.option("--corpus-dir", type=click.Path(file_okay=False, path_type=Path),
              help="A corpus folder the run's records name cases in, besides the run folder, its results folder, "
                   "./corpus and <folder above the results folder>/corpus (a case path leading anywhere else is "
                   "not read).")
def report(source: Path | None, results_dir: Path | None, baseline: str, output: Path | None,
           formats: tuple[str, ...], coverage_audit: Path | None, shards: tuple[Path, ...],
           corpus_dir: Path | None) -> None:
    """Regenerate a run's reports from its saved results, without running anything.

    Writes scorecard.md, report.html (self-contained), junit.xml and summary.json. A partial run is
    marked partial and gets no support percentage. Exits 2 when the run's files (or an explicit
    --baseline's) cannot be read or are malformed, naming the file and line; an earlier run that
    cannot be read is skipped with a warning when the baseline is found automatically.

    With --merge DIR (once per shard), the shards' run folders become one run folder (records.jsonl,
    run.json; each item once, from the shard that ran it) and the report is written into its
    report/ folder; --output names the merged run folder. Shards of different runs are refused
    (exit 2, naming the folder and field: versions, manifest hash, device, seed, level, examples,
    shard count). A missing shard makes the merged run partial, its items recorded deselected with
    the missing shard named. The baseline of a merged report is none unless --baseline names a folder.
    """
    from torchcts.coverage.summary import report_section
    from torchcts.report.render import FORMATS, write_report
    from torchcts.report.data import ResultsError
    from torchcts.report.latest import latest_run_folder

    if shards:
        _report_merged(shards, source, baseline, output, formats, coverage_audit, corpus_dir)
        return
    folder, passed_over = (source, {}) if source else latest_run_folder(results_dir or Path("results"))
    if folder is None:
        why = ", ".join(f"{n} {kind}" for kind, n in sorted(passed_over.items()))
        fail(f"{results_dir or 'results'}: no run folder of a run that executed items (results/<run-id>/run.json)"
             + (f"; passed over: {why}" if why else "") + "; run `torchcts run` first or pass --from")
    if source is None and passed_over:
        click.echo(f"reporting on {folder} (the latest run that executed items)", err=True)
    if baseline not in ("auto", "none") and not os.path.isdir(baseline):
        fail(f"--baseline {baseline}: not a run folder; use auto, none or a results/<run-id>/ folder")
    try:
        written = write_report(folder, output=output, baseline=baseline, results_dir=results_dir,
                               formats=formats or FORMATS, coverage_audit=coverage_audit, corpus_dir=corpus_dir,
                               coverage_html=report_section)
    except ResultsError as exc:
        fail(str(exc))
    for name, path in written.items():
        click.echo(f"{name:6} {path}")


def _report_merged(shards: tuple[Path, ...], source: Path | None, baseline: str, output: Path | None,
                   formats: tuple[str, ...], coverage_audit: Path | None, corpus_dir: Path | None = None) -> None:
    """`report --merge`: merge the shard folders into one run folder, then write its report there."""
    from torchcts.coverage.summary import report_section
    from torchcts.report.render import FORMATS, write_report
    from torchcts.results.files import ResultFileError
    from torchcts.results.merge import MergeError, merge_shards

    if source is not None:
        fail("--from and --merge exclude each other: --merge reports on the merged shards")
    if baseline not in ("auto", "none") and not os.path.isdir(baseline):
        fail(f"--baseline {baseline}: not a run folder; use auto, none or a results/<run-id>/ folder")
    try:
        folder = merge_shards(shards, output)
        written = write_report(folder, baseline="none" if baseline == "auto" else baseline,
                               formats=formats or FORMATS, coverage_audit=coverage_audit, corpus_dir=corpus_dir,
                               coverage_html=report_section)
    except (MergeError, ResultFileError) as exc:
        fail(str(exc))
    click.echo(f"merged {folder}")
    for name, path in written.items():
        click.echo(f"{name:6} {path}")
