"""`torchcts run --last-failed` on the command line's side: which earlier run it reruns the failures of, and
pytest's own cache options refused with a pointer to it (`torchcts run` keeps no pytest cache)."""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import sys
from pathlib import Path

import click

from torchcts.cli.options import fail


# pytest's options that need its cache (the cacheprovider and stepwise plugins, which `torchcts run` turns off)
CACHE_FLAGS = ("--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--lfnf",
               "--last-failed-no-failures", "--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--sw-reset",
               "--stepwise-reset", "--cache-show", "--cache-clear")


def refuse_cache_flags(pytest_args: tuple[str, ...]) -> None:
    """A pytest option after `--` that needs pytest's cache is one line pointing to --last-failed (exit 2)."""
    for arg in pytest_args:
        if arg.split("=", 1)[0] in CACHE_FLAGS:
            fail(f"pytest arguments after --: {arg} needs pytest's cache, which `torchcts run` does not keep; "
                 "`torchcts run --last-failed` reruns the items that failed, errored, crashed or timed out in the "
                 "newest earlier run on the device")


def last_failed_run(results_dir: Path, device: str, compile_backend: str | None, validation: bool,
                     shard: str | None) -> Path:
    """--last-failed: the newest earlier run folder on `device` in `results_dir` that executed items, of the same kind
    (compile backend, validation, shard; not a path-shapes run), read through the bounded reader. None there, or
    one that cannot be read, is one line (exit 2); one where nothing failed ends the command (exit 0): there is
    nothing to rerun."""
    from torchcts.core.shards import ShardError, format_shard, parse_shard
    from torchcts.report.latest import latest_run_folder
    from torchcts.results.files import ResultFileError
    from torchcts.results.last_failed import read_last_failed

    try:
        shard = format_shard(parse_shard(shard)) if shard is not None else None  # as run.json writes it: "K/N"
    except ShardError as exc:
        fail(str(exc))

    def like(environment: dict) -> bool:
        return (environment.get("compile") == compile_backend and bool(environment.get("validation")) == validation
                and environment.get("suite") is None and (shard is None or environment.get("shard") == shard))

    folder, passed_over = latest_run_folder(results_dir, device=device, like=like)
    if folder is None:
        why = ", ".join(f"{n} {kind}" for kind, n in sorted(passed_over.items()))
        fail(f"--last-failed: {results_dir} holds no earlier run on device {device} that executed items"
             + (f" (passed over: {why})" if why else "") + "; run without --last-failed first")
    try:
        last = read_last_failed(folder)
    except ResultFileError as exc:
        fail(f"--last-failed: {exc}")
    if not last.failed:
        click.echo(f"torchcts: --last-failed: no item failed, errored, crashed or timed out in {last.run_id} "
                   f"({folder}); nothing to rerun", err=True)
        sys.exit(0)
    click.echo(f"torchcts: --last-failed: rerunning the {len(last.failed)} item(s) that failed, errored, crashed or "
               f"timed out in {last.run_id} ({folder})", err=True)
    return folder
