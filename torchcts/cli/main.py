"""The `torchcts` group and its console-script entry point; the commands live in `run_commands` (they run
properties on a device) and `inspect_commands` (they read a manifest, a plan or a run's files).

torch, the manifest model and the property registry load inside the commands that need them:
`torchcts --help` and `torchcts report` start without importing torch.
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import os
import sys

import click

import torchcts
from torchcts.cli import (coverage_commands, inspect_commands, pathshapes_commands, run_commands, sync_command,
                          triage_command)
from torchcts.hash_seed import run_with_fixed_hash_seed
from torchcts.cli.options import fail
from torchcts.cli.project_venv import maybe_switch_to_project_venv


class Group(click.Group):
    """The `torchcts` group: a file a command cannot write (a full disk, a quota, a read-only mount) is the one
    line `FILE: cannot be written: REASON` on stderr and exit 2, whichever command wrote it; what the command
    wrote before stays readable (`torchcts.disk`)."""

    def invoke(self, ctx: click.Context):  # noqa: ANN201 - click's signature
        from torchcts.disk import WriteError, output_failure

        try:
            return super().invoke(ctx)
        except WriteError as exc:
            fail(str(exc))
        except OSError as exc:
            failure = output_failure(exc)  # printing onto a full disk (`torchcts report > /full/file`)
            if failure is None:
                raise
            fail(str(failure))


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(torchcts.__version__, prog_name="torchcts")
def cli() -> None:
    """TorchCTS: conformance tests for PyTorch backends.

    A backend's manifest claims dtypes and capabilities; TorchCTS turns each claim into property
    tests against CPU oracles. Start with `torchcts init`, then `torchcts check-manifest`.

    TorchCTS tests the torch of the Python environment it runs in. Set
    TORCHCTS_USE_PROJECT_VENV=1 to run it inside the .venv of the current folder instead.

    A file a command cannot write (a full disk, a quota) ends it with one line, FILE: cannot be
    written: REASON, and exit 2; what it wrote before stays readable.
    """


for _command in (inspect_commands.check_manifest, inspect_commands.init, run_commands.run, run_commands.fuzz,
                 inspect_commands.show_skips, inspect_commands.report, run_commands.replay, run_commands.selftest,
                 coverage_commands.coverage, sync_command.sync_opinfo, pathshapes_commands.path_shapes,
                 triage_command.triage):
    cli.add_command(_command)


COMPLETE_VAR = "_TORCHCTS_COMPLETE"  # click's shell completion (README "Shell completion")


def main() -> None:
    """Console-script entry point."""
    if COMPLETE_VAR not in os.environ:  # a Tab press answers at once: no re-execution, no other venv
        maybe_switch_to_project_venv(sys.argv[1:])
        run_with_fixed_hash_seed()  # derandomized runs draw the same cases in every process
    try:
        cli(prog_name="torchcts", complete_var=COMPLETE_VAR)
    except SystemExit as done:
        from torchcts import interrupts

        if interrupts.requested() is not None and isinstance(done.code, int):  # stopped by a signal: written already
            interrupts.exit_now(done.code)
        raise
