"""`torchcts coverage audit | report | check | non-unique-audit`: compute, render, validate and inspect an audit.

Each command parses its options, calls one function of `torchcts.coverage`, and prints. `report`,
`non-unique-audit` and the reading half of `check` work from audit.json alone; `audit` and `check`
import torch inside the command. Exit codes: 0 done, 1 what `check`'s flags make fatal, 2 bad input.
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import json
import time
from pathlib import Path

import click

from torchcts.cli.options import InputFile, fail, output_folder_option

DEFAULT_FOLDER = Path("results") / "coverage"
DEFAULT_AUDIT = DEFAULT_FOLDER / "audit.json"
_AUDIT_HELP = "The audit.json to read (written by `torchcts coverage audit`)."
project_dir_option = click.option(
    "--project-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."),
    show_default=True, help="The folder whose coverage_exclusions.json is merged after the packaged exclusions.")


def _read(path: Path) -> dict:
    from torchcts.coverage.audit_check import AuditFileError, read_audit

    try:
        return read_audit(path)
    except AuditFileError as exc:
        fail(str(exc))


@click.command("audit")
@output_folder_option("--output-dir", "Folder for inventory.json, audit.json, unknowns.json, unmapped-tests.json and "
                                     "summary.md.",
                      default=DEFAULT_FOLDER)
@click.option("--manifest", "manifest_path", type=InputFile(exists=True), default=None,
              help="A manifest whose custom_test_dirs hold the backend's own suites: properties there that "
                   "declare overloads= give the status backend-pack.")
@click.option("--evidence", "evidence_dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=None, help="An evidence store (`coverage collect-backend-evidence --store DIR`): the "
                                 "summary then shows mapped beside reached, and what was mapped but never reached.")
@project_dir_option
def audit(output_dir: Path, manifest_path: Path | None, evidence_dir: Path | None, project_dir: Path) -> None:
    """Give every backend-relevant aten overload of the installed torch one status.

    The first that applies: opinfo (an OpInfo property reaches it by name, or its samples dispatched
    it: the packaged trace, torchcts/strategies/opinfo_trace.json), suite (a built-in suite
    declares it), generated (the dispatch property generates cases for it), backend-pack (a suite of
    the manifest's custom_test_dirs declares it), excluded (torchcts/coverage/exclusions.json, then
    the project's coverage_exclusions.json, each entry with a reason), unknown. Writes inventory.json
    (every overload and its relevance, as `coverage inventory` writes it), audit.json, unknowns.json,
    unmapped-tests.json (OpInfos that map to no overload, with the reason) and summary.md, and prints
    the time it took. docs/coverage/audit.md explains each status.
    """
    from torchcts.coverage import audit as audit_module
    from torchcts.coverage.evidence import EvidenceError
    from torchcts.coverage.exclusions import ExclusionsError
    from torchcts.coverage.generated import GeneratedListError
    from torchcts.coverage.exclusions import inventory_document
    from torchcts.strategies.opinfo_trace import TraceFileError
    from torchcts.coverage.summary import render_markdown
    from torchcts.manifest import ManifestError
    from torchcts.plan.registry import RegistryError

    started = time.monotonic()
    try:
        result, unmapped = audit_module.run_audit(project_dir, manifest=manifest_path, evidence=evidence_dir)
        inventory, _ = inventory_document(project_dir)  # of its exclusion warnings, the audit prints its own
    except ManifestError as exc:
        fail(exc.render())
    except (ExclusionsError, EvidenceError, RegistryError, GeneratedListError, TraceFileError) as exc:
        fail(str(exc))  # RegistryError: a custom_test_dirs module; the last two: a damaged installation
    summary = render_markdown(result)
    written = audit_module.write_artifacts(output_dir, result, unmapped, summary, inventory)
    counts: dict[str, int] = {}
    for entry in result["entries"]:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    shown = ", ".join(f"{status} {counts.get(status, 0)}" for status in audit_module.STATUSES)
    click.echo(f"torchcts coverage audit: {len(result['entries'])} backend-relevant overloads: {shown}; "
               f"{len(unmapped)} OpInfos map to no overload")
    for warning in result["warnings"]:
        click.echo(f"warning: {warning}", err=True)
    click.echo(f"wrote {', '.join(str(p) for p in written)}")
    click.echo(f"the audit took {time.monotonic() - started:.1f} s")


@click.command("report")
@click.option("--audit", "audit_path", type=InputFile(), default=DEFAULT_AUDIT, show_default=True, help=_AUDIT_HELP)
def report(audit_path: Path) -> None:
    """Print the audit's summary (Markdown) and write summary.md and coverage.html next to audit.json.

    coverage.html is an HTML fragment (a section with the same tables) to include in a report page.
    Reads audit.json only: no torch, no op database.
    """
    from torchcts.coverage.atomic import write_atomic
    from torchcts.coverage.summary import render_html, render_markdown

    data = _read(audit_path)
    markdown = render_markdown(data)
    write_atomic(audit_path.parent / "summary.md", markdown)
    write_atomic(audit_path.parent / "coverage.html", render_html(data))
    click.echo(markdown, nl=False)
    click.echo(f"wrote {audit_path.parent / 'summary.md'}, {audit_path.parent / 'coverage.html'}", err=True)


@click.command("check")
@click.option("--audit", "audit_path", type=InputFile(), default=DEFAULT_AUDIT, show_default=True, help=_AUDIT_HELP)
@click.option("--fail-on-unknown", is_flag=True, help="Exit 1 when any overload is unknown.")
@click.option("--strict-unknowns", is_flag=True,
              help="Exit 1 when any overload is unknown or any exclusion entry is stale (names no overload of the "
                   "installed torch, or repeats an entry of its file).")
@project_dir_option
def check(audit_path: Path, fail_on_unknown: bool, strict_unknowns: bool, project_dir: Path) -> None:
    """Validate an audit and the exclusion files.

    Exit 2 when an exclusions file is malformed (file and entry named), audit.json is malformed
    (file and field named), its metadata do not match the installed torch (version, git
    version), the installed TorchCTS or the current exclusion files (sha256), or its entries are
    not exactly the installed torch's backend-relevant overloads (missing or extra names listed).
    Unknowns, stale exclusion names and repeated exclusion entries print as warnings and exit 0,
    unless a flag makes them fatal (exit 1).
    """
    from torchcts.coverage.audit_check import check as run_check

    result = run_check(audit_path, project_dir, fail_on_unknown=fail_on_unknown, strict_unknowns=strict_unknowns)
    for line in result.errors:
        click.echo(line, err=True)
    for line in result.warnings:
        click.echo(f"warning: {line}", err=True)
    for line in result.failures:
        click.echo(f"error: {line}", err=True)
    if not result.errors:
        click.echo(f"{audit_path}: {len(result.failures)} failures, {len(result.warnings)} warnings")
    raise SystemExit(result.exit_code)


@click.command("non-unique-audit")
@click.option("--audit", "audit_path", type=InputFile(), default=DEFAULT_AUDIT, show_default=True, help=_AUDIT_HELP)
@click.option("--output", "output_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the JSON (default: non-unique.json next to audit.json).")
def non_unique_audit(audit_path: Path, output_path: Path | None) -> None:
    """List overloads claimed by more than one source, and OpInfos that map to the same overload set.

    A source is an OpInfo, a suite, generation, a backend pack or an exclusion. Writes the full
    lists as JSON and prints how many overloads each combination of kinds claims, and the groups.
    """
    from torchcts.coverage.atomic import write_atomic
    from torchcts.coverage.audit import non_unique

    result = non_unique(_read(audit_path))
    output_path = output_path or audit_path.parent / "non-unique.json"
    if not output_path.parent.is_dir():
        fail(f"--output {output_path}: its folder {output_path.parent} does not exist")
    write_atomic(output_path, json.dumps(result, indent=1) + "\n")
    combos: dict[str, int] = {}
    for item in result["overloads"]:
        key = " + ".join(item["kinds"])
        combos[key] = combos.get(key, 0) + 1
    click.echo(f"{len(result['overloads'])} overloads claimed by more than one source:")
    for key, count in sorted(combos.items(), key=lambda kv: -kv[1]):
        click.echo(f"  {count:6d}  {key}")
    click.echo(f"{len(result['opinfo_groups'])} groups of OpInfos mapping to the same overloads:")
    for group in result["opinfo_groups"][:20]:
        click.echo(f"  {', '.join(group['opinfos'])}: {len(group['overloads'])} overloads")
    if len(result["opinfo_groups"]) > 20:
        click.echo(f"  ... and {len(result['opinfo_groups']) - 20} more in {output_path}")
    click.echo(f"wrote {output_path}")
