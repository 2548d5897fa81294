"""The `torchcts` command line: each command parses its options, calls the library, and prints."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

import torchcts
from torchcts.manifest import ManifestError, environment_problems, load_manifest, parse_manifest
from torchcts.manifest.summary import summary_lines
from torchcts.project_venv import maybe_switch_to_project_venv
from torchcts.templates import TEMPLATE_NAMES, render_template, template_purpose

EXIT_BAD_INPUT = 2

_manifest_option = click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
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
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=Path("manifest.py"),
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
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, output)
    click.echo(f"wrote {output} from template {template_purpose(template)}")
    click.echo(f"next: torchcts check-manifest --manifest {output}")


@cli.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--device", help="Device under test (cuda, mps, privateuseone, faulty, meta, cpu, ...).")
@_manifest_option
@click.option("--level", type=click.IntRange(1, 8), help="Deselect (and record) items above this semantic level.")
@click.option("--dtype", "dtypes", multiple=True, help="Only these dtypes (float32, torch.bfloat16); repeatable.")
@click.option("--ops", multiple=True, help="Only OpInfos whose id matches this regex; repeatable.")
@click.option("--property", "properties", multiple=True,
              help="Only these properties (forward, layout, errors, inplace, out, backward); repeatable.")
@click.option("--derandomize", is_flag=True, help="Seeds from item ids alone: identical cases on every run.")
@click.option("--seed", type=int, help="Repeat a run's random seed (printed by every run that is not derandomized).")
@click.option("--max-examples", type=click.IntRange(min=1), help="Hypothesis examples per item (default: the manifest's).")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Where the run folder (records.jsonl, run.json) is written.")
@click.option("--validation", is_flag=True, help="Run against CPU itself to validate the harness.")
@click.option("--compile", "compile_backend", type=click.Choice(["inductor", "aot_eager", "eager"]),
              help="Run every op through torch.compile(backend=...) on the device; compare with eager CPU.")
@click.argument("pytest_args", nargs=-1, type=click.UNPROCESSED)
def run(device: str | None, manifest_path: Path, level: int | None, dtypes: tuple[str, ...], ops: tuple[str, ...],
        properties: tuple[str, ...], derandomize: bool, seed: int | None, max_examples: int | None,
        results_dir: Path, validation: bool, compile_backend: str | None, pytest_args: tuple[str, ...]) -> None:
    """Run the property suites against a device and write results.

    Every item the manifest rules out, or this run deselects, is recorded with its reason.
    Results go to RESULTS_DIR/<run-id>/ (records.jsonl, run.json). Arguments after `--` go to
    pytest. Exits 0 when no item failed, 1 when one did, 2 for bad input, 130 when interrupted
    (the results so far are kept and marked partial).
    """
    from torchcts.runner import RunOptions, run_suites

    if device is None and not validation:
        raise click.UsageError("pass --device D, or --validation to run against CPU itself")
    options = RunOptions(device=device, manifest=manifest_path, level=level, dtypes=dtypes, ops=ops,
                         properties=properties, derandomize=derandomize, seed=seed, max_examples=max_examples,
                         results_dir=results_dir, validation=validation, compile_backend=compile_backend,
                         pytest_args=pytest_args)
    sys.exit(run_suites(options))


@cli.command("selftest")
@click.option("--level", type=click.IntRange(1, 8), default=2, show_default=True, help="Semantic level of the runs.")
@click.option("--dtype", "dtypes", multiple=True, default=("float32", "bfloat16", "int32"), show_default=True,
              help="Dtypes to run (a bug in one dtype needs that dtype).")
@click.option("--max-examples", type=click.IntRange(min=1), default=10, show_default=True,
              help="Hypothesis examples per item.")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results/selftest"),
              show_default=True, help="Where the runs' folders go.")
def selftest(level: int, dtypes: tuple[str, ...], max_examples: int, results_dir: Path) -> None:
    """Prove the suites catch bugs: run them against the faulty device once clean and once per seeded bug.

    Prints which bugs were detected (with the failing items), which were missed, and the clean
    backend's failures (there must be none). Exits 1 when a bug was missed or the clean run failed.
    """
    from torchcts.selftest import print_report, run_selftest

    report = run_selftest(level=level, dtypes=dtypes, max_examples=max_examples, results_dir=results_dir,
                          progress=click.echo)
    print_report(report, click.echo)
    sys.exit(0 if report.ok else 1)


def _validate_rendered(output: Path, text: str) -> None:
    """Refuse to write a manifest that would not pass check-manifest (e.g. a bad --device-name)."""
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
    cli(prog_name="torchcts")
