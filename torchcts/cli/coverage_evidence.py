"""`torchcts coverage collect-backend-evidence`: a traced run's per-overload observations into an evidence store.

Parses its options, calls `torchcts.coverage.evidence.collect_run`, and prints what it did. No torch.
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

from pathlib import Path

import click

from torchcts.cli.options import OutputFolder, fail


@click.command("collect-backend-evidence")
@click.option("--store", "store", required=True, type=OutputFolder(), metavar="DIR",
              help="The evidence store folder: DIR/evidence.json is created when missing and merged into otherwise.")
@click.option("--from", "source", type=click.Path(exists=True, file_okay=False, path_type=Path), metavar="RUN_FOLDER",
              help="The run folder to collect (default: the latest conformance run under --results-dir).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Where to look for the latest run when --from is not given.")
def collect_backend_evidence(store: Path, source: Path | None, results_dir: Path) -> None:
    """Add a run's measured reach to an evidence store.

    The run must have been started with `torchcts run --trace-dispatch` (its records carry
    `dispatched`: the aten overloads each item's device side ran). For every overload, the store
    counts the items that reached it, how many passed and failed, the error outcomes (error,
    crashed, timed_out) and the runs that reached it; each run is kept with its run_id, device,
    torch and TorchCTS versions. A run already in the store (same run_id) is not counted twice.
    The file is replaced atomically. Exits 0 when collected (or already there), 2 for a run that is
    not traced, still running, or under --compile, or for a malformed store or run folder (the file
    and field are named). docs/coverage/evidence.md describes the store.
    """
    from torchcts.coverage.evidence import EvidenceError, collect_run

    if source is None:
        from torchcts.report.latest import latest_run_folder

        source, _ = latest_run_folder(results_dir)
        if source is None:
            fail(f"--from not given and {results_dir} holds no conformance run that executed an item; "
                 "run `torchcts run --trace-dispatch ...` first or name the folder with --from")
    try:
        collected = collect_run(store, source)
    except EvidenceError as exc:
        fail(f"collect-backend-evidence: {exc}")
    run, observed, evidence = collected.run, collected.observed, collected.evidence
    if not collected.added:
        click.echo(f"run {run['run_id']} is already in {store} (not counted twice); the store holds "
                   f"{len(evidence.runs)} runs, {len(evidence.reached())} overloads reached")
        return
    click.echo(f"collected run {run['run_id']} ({run['device']}, torch {run['torch']}, {collected.status}) from "
               f"{source}: {observed.traced} traced items reached {len(observed.overloads)} overloads")
    if observed.untraced:
        click.echo(f"note: {observed.untraced} executed items carry no trace (an item whose forked child died "
                   "loses its trace); they are not counted")
    click.echo(f"{store}: {len(evidence.runs)} runs, {len(evidence.reached())} overloads reached")
