"""`torchcts triage`: classify and group a run's failures by root-cause signature."""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

from pathlib import Path

import click

from torchcts.cli.options import fail, output_folder_option


def _run_folder(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """--from: an existing folder; anything else is one line and exit 2 (not click's usage text)."""
    if value is None:
        return None
    if not str(value).strip():
        fail("--from: empty; name a run folder (results/<run-id>/)")
    if not value.is_dir():
        fail(f"--from {value}: {'not a folder' if value.exists() else 'no such folder'}; name a run folder "
             f"(results/<run-id>/)")
    return value


def _device(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """DEVICE: a name, not an empty string (an unset shell variable must not mean "any device")."""
    if value is not None and not value.strip():
        fail("triage DEVICE: empty; name the device of the run to triage (cuda, mps, privateuseone, faulty, ...)")
    return value


@click.command("triage")
@click.argument("device", required=False, callback=_device)
@click.option("--from", "source", type=click.Path(path_type=Path), callback=_run_folder,
              help="The run folder (results/<run-id>/) to triage (default: the latest run in --results-dir that "
                   "executed items, as `torchcts report` picks it; with DEVICE, the latest on that device).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the latest run is looked for (default ./results).")
@output_folder_option("--output", "Where triage.md, triage.json and repro/ go (default: <run folder>/triage/).")
@click.option("--corpus-dir", type=click.Path(file_okay=False, path_type=Path),
              help="A corpus folder the run's records name cases in, besides the run folder, its results folder, "
                   "./corpus and <folder above the results folder>/corpus (a case path leading anywhere else is "
                   "not read); also where crash cases of `torchcts fuzz` are looked for, for crashed items without "
                   "a stored case (default: the folder of the run's stored cases, else ./corpus).")
@click.option("--no-scripts", is_flag=True, help="Do not write repro scripts for crashed and timed-out items.")
@click.option("--no-trace", is_flag=True,
              help="Do not call the failing ops on their shrunk cases (on the CPU, each in a forked child capped at "
                   "2 GB and 30 s) to see which kernels inside them saw the condition: group by the op's family "
                   "and the case's condition only.")
def triage(device: str | None, source: Path | None, results_dir: Path | None, output: Path | None,
           corpus_dir: Path | None, no_scripts: bool, no_trace: bool) -> None:
    """Classify a run's failing records and group them by root-cause signature.

    The run is --from RUN_FOLDER, else the latest run in --results-dir that executed items; with
    DEVICE (`torchcts triage cuda`), the latest such run whose run.json names that device (`cuda`
    also names `cuda:1`; `faulty` is the faulty device's run). DEVICE and --from together, or a
    DEVICE without such a run, is a one-line error (exit 2).

    Every failed, error, crashed and timed_out record gets a kind (values, strides, dtype,
    unsupported, error_parity, crash, hang, nondeterminism; harness for TorchCTS's own errors), decided
    by its structured fields (outcome, error_kind, property, the stored case's failure) before any
    message text, with the evidence that decided it. Failures are grouped by signature (op family,
    kind, the condition its shrunk corpus case shows: layout, size class, special values, mixed
    dtypes); a composite op's failure moves to the kernel inside it that saw the condition, found by
    calling the op on its case on the CPU in a capped child (see --no-trace). Each cluster has a
    count, its items, the representative with the smallest case, and what differs inside it.
    Crashed and timed-out items get torch-only repro scripts in repro/.

    Writes triage.md and triage.json (into <run folder>/triage/ unless --output) and prints the
    clusters. Exits 2 when the run's files cannot be read (one line naming the file and line).
    """
    from torchcts.report.latest import latest_run_folder
    from torchcts.results.files import ResultFileError
    from torchcts.triage.output import console_lines, write
    from torchcts.triage.run import triage_run

    if device is not None and source is not None:
        fail(f"triage {device} --from {source}: DEVICE picks the latest run on that device and --from names a run "
             "folder; give one of them")
    folder, passed_over = (source, {}) if source else latest_run_folder(results_dir or Path("results"), device=device)
    if folder is None:
        why = ", ".join(f"{n} {kind}" for kind, n in sorted(passed_over.items()))
        on = f" on device {device}" if device is not None else ""
        fail(f"{results_dir or 'results'}: no run folder of a run{on} that executed items "
             "(results/<run-id>/run.json)" + (f"; passed over: {why}" if why else "")
             + (f"; {device} is a folder: --from {device} triages it" if device and Path(device).is_dir() else
                f"; run `torchcts run{f' --device {device}' if device else ''}` first or pass --from"))
    if source is None:
        on = f" on {device}" if device is not None else ""
        click.echo(f"triaging {folder} (the latest run{on} that executed items)", err=True)
    output = output if output is not None else folder / "triage"
    try:
        result = triage_run(folder, output, corpus_dir, scripts=not no_scripts, trace=not no_trace)
    except ResultFileError as exc:
        fail(str(exc))
    try:
        written = write(result, output)
    except OSError as exc:
        fail(f"--output {output}: cannot write the triage: {exc.strerror or exc}")
    for line in console_lines(result):
        click.echo(line)
    for problem in result.problems[:10]:
        click.echo(f"torchcts triage: warning: {problem}", err=True)
    if len(result.problems) > 10:
        click.echo(f"torchcts triage: warning: {len(result.problems) - 10} more problems ({len(result.problems)} in "
                   f"all): see {output / 'triage.md'} (Problems)", err=True)
    for name, path in written.items():
        click.echo(f"{name:4} {path}")
    if output == folder / "triage" and (folder / "report").is_dir():
        click.echo(f"`torchcts report --from {folder}` links it from the run's report", err=True)
