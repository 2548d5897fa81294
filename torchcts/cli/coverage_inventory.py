"""`torchcts coverage inventory`: every aten overload of the installed torch, classified, in inventory.json.

Parses its options, calls `torchcts.coverage.inventory` and `exclusions`, writes one JSON file and
prints the counts. torch is imported inside the command. Exit codes: 0 written (stale exclusion
names are warnings), 2 bad input (a malformed exclusions file, named with its entry and field).
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import json
import time
from pathlib import Path
from typing import Any

import click

from torchcts.cli.options import OutputFile, fail

DEFAULT_OUTPUT = Path("results") / "coverage" / "inventory.json"


def build_document(project_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """inventory.json's content and the exclusion warnings (`torchcts.coverage.exclusions.inventory_document`)."""
    from torchcts.coverage.exclusions import inventory_document

    return inventory_document(project_dir)


def write_document(document: dict[str, Any], output: Path) -> None:
    """Write beside `output`, then rename over it: a reader never sees half a file."""
    from torchcts.coverage.atomic import write_atomic

    write_atomic(output, json.dumps(document, indent=1) + "\n")


@click.command("inventory")
@click.option("--output", type=OutputFile(), default=DEFAULT_OUTPUT, show_default=True,
              help="Where to write the inventory JSON.")
@click.option("--project-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."),
              show_default=True, help="The folder whose coverage_exclusions.json is merged after the packaged "
                                      "exclusions (entries there override packaged ones by name).")
def inventory(output: Path, project_dir: Path) -> None:
    """List every aten overload of the installed torch and decide which a backend must answer for.

    Each overload (as `str(OpOverload)`, e.g. aten.add.Tensor) comes with its schema, tags (core,
    pointwise, inplace_view, ...), the dispatch keys that have a kernel (CPU, Meta, composite
    implicit/explicit, sparse, quantized, vendor keys), whether torch._decomp decomposes it, whether
    it is backend-relevant and the rule that decided, and the exclusion that applies to it, if any.
    Prints the counts per rule and the time it took. docs/coverage/policy.md explains every rule and
    the exclusions files.
    """
    from torchcts.coverage.exclusions import ExclusionsError

    started = time.monotonic()
    try:
        document, warnings = build_document(project_dir)
    except ExclusionsError as exc:
        fail(f"torchcts coverage inventory: {exc}")
    write_document(document, output)
    counts = document["metadata"]["counts"]
    click.echo(f"torchcts coverage inventory: {counts['overloads']} aten overloads of torch "
               f"{document['metadata']['torch']}: {counts['relevant']} backend-relevant, "
               f"{counts['not_relevant']} not; {counts['excluded']} excluded "
               f"({counts['relevant_excluded']} of them relevant)")
    for rule in document["rules"]:
        mark = "relevant" if rule["relevant"] else "not relevant"
        click.echo(f"  {rule['id']:<20} {counts['per_rule'][rule['id']]:>5}  {mark}")
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"wrote {output}")
    click.echo(f"the inventory took {time.monotonic() - started:.1f} s")
