"""`torchcts sync-opinfo`: rebuild (or, with --check, only check) the OpInfo metadata cache."""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import sys
import time

import click

from torchcts.cli.options import fail


@click.command("sync-opinfo")
@click.option("--check", "check_only", is_flag=True,
              help="Only say whether the cache is fresh; build nothing. Exit 0 fresh, 1 missing or stale.")
def sync_opinfo(check_only: bool) -> None:
    """Rebuild the OpInfo metadata cache that planning reads instead of torch's op database.

    `run`, `show-skips`, `selftest` and the coverage audit plan from a cached description of every
    OpInfo (its names, and the ops and dtypes each installed property's item source takes), so they
    start without importing torch's op database. The cache is kept per torch and TorchCTS version in
    $TORCHCTS_CACHE_DIR (default: $XDG_CACHE_HOME/torchcts, else ~/.cache/torchcts); it is built on
    first use and rebuilt, with a warning, when it is stale (an installed suite's item source changed)
    or corrupt. This command rebuilds it now: after editing a suite, or to warm a CI image. Prints
    where the cache is, how many OpInfos it describes and how long building took (docs/opinfo-cache.md).
    """
    from torchcts.plan import op_metadata

    if check_only:
        path, catalog, why = op_metadata.check()
        if catalog is None:
            click.echo(f"{path}: " + ("missing" if why == "missing" else why.removeprefix(f"{path}: ")))
            sys.exit(1)
        click.echo(f"{path}: fresh: {len(catalog.ops)} OpInfos, {len(catalog.sources)} item sources "
                   f"(torch {catalog.environment.get('torch')})")
        return
    start = time.perf_counter()
    try:
        path, catalog = op_metadata.sync()
    except OSError as exc:
        fail(f"{exc.filename or op_metadata.cache_dir()}: cannot write the OpInfo metadata cache "
             f"({exc.strerror or exc}); set {op_metadata.CACHE_DIR_VARIABLE} to a writable folder")
    click.echo(f"{path}: {len(catalog.ops)} OpInfos, {len(catalog.sources)} item sources, torch "
               f"{catalog.environment.get('torch')}; built in {time.perf_counter() - start:.1f} s "
               f"({catalog.seconds:.1f} s of it importing and reading the op database)")
