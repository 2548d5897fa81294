"""`torchcts path-shapes ...`: the curated corpus of operator call shapes from real model families.

validate / summary / list read the corpus (TorchCTS's own, or --corpus DIR); run executes its cases on a
device against the CPU oracle into a run folder that `torchcts report --from` reads. docs/path-shapes.md.
"""

from __future__ import annotations

# imports inside functions: each command loads what it runs, so `torchcts --help` and the torch-free commands
# (report, triage's reading, completion) start without torch or the op database

import collections
import datetime
import sys
from pathlib import Path
from typing import Any

import click

from torchcts.cli.number_types import IntRange
from torchcts.cli.options import (
    compile_option, device_option, fail, manifest_option, results_dir_option, shape_mode_option,
)

TIER_NAMES = ("tiny", "small", "medium", "large")  # corpus.TIERS, without importing torch for --help


def _today(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime.date:
    if value is None:
        return datetime.date.today()
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date YYYY-MM-DD", ctx, param) from None


def corpus_option(func: Any) -> Any:
    return click.option("--corpus", "corpus_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                        help="Folder of path-shapes JSON files (default: the corpus TorchCTS ships).")(func)


def today_option(func: Any) -> Any:
    return click.option("--today", callback=_today, metavar="YYYY-MM-DD",
                        help="The date waivers are checked against (default: today).")(func)


def filter_options(func: Any) -> Any:
    func = click.option("--family", "families", multiple=True, help="Only this family; repeatable.")(func)
    func = click.option("--tier", "tiers", multiple=True, type=click.Choice(TIER_NAMES),
                        help="Only this resource tier; repeatable. run: also the opt-in for a tier whose largest "
                             "item does not fit the host's memory, which a run leaves out (runtime_unavailable) "
                             "unless named.")(func)
    return click.option("--level", "levels", multiple=True, type=IntRange(1, 8),
                        help="list, summary: only cases of this semantic level (the case's own); repeatable. "
                             "run: the run's depth, once, over the manifest's semantic_level: items above it "
                             "(a backward item is level 4 or its case's, if higher) are level_filtered.")(func)


def _load(corpus_dir: Path | None) -> Any:
    """The corpus, or exit 2 with one line per problem (file, case, field)."""
    from torchcts.pathshapes.corpus import CorpusError, load_corpus

    try:
        return load_corpus(corpus_dir)
    except CorpusError as exc:
        for line in exc.problems[:-1]:
            click.echo(line, err=True)
        fail(exc.problems[-1])


def _selected(corpus: Any, families: tuple[str, ...], tiers: tuple[str, ...], levels: tuple[int, ...]) -> list[Any]:
    unknown = sorted(set(families) - set(corpus.families))
    if unknown:
        fail(f"--family {unknown[0]}: not a family of the corpus; families: {', '.join(corpus.families)}")
    return [c for c in corpus.cases if (not families or c.family in families) and (not tiers or c.tier in tiers)
            and (not levels or c.level in levels)]


@click.group("path-shapes")
def path_shapes() -> None:
    """Operator call shapes from real model families: validate, summarise, list and run them."""


@path_shapes.command("validate")
@corpus_option
@today_option
def validate(corpus_dir: Path | None, today: datetime.date) -> None:
    """Check every file and case: schema, allowed ops, shapes the op accepts (called on meta), the tier its
    bytes need, levels 1..8, budgets, waivers not expired. Exits 2 listing each problem (file, case, field)."""
    from torchcts.pathshapes.corpus import default_folder, expired_waivers, read_folder

    folder = corpus_dir or default_folder()
    cases, problems = read_folder(folder)
    problems += expired_waivers(cases, today)
    for line in problems:
        click.echo(line, err=True)
    if problems:
        click.echo(f"{len(problems)} problem(s) in {folder}", err=True)
        sys.exit(2)
    families = len({c.family for c in cases})
    click.echo(f"{folder}: {len(cases)} cases in {families} families, valid on {today.isoformat()}")


@path_shapes.command("summary")
@corpus_option
@today_option
def summary(corpus_dir: Path | None, today: datetime.date) -> None:
    """Cases by family, tier, level and dtype; example budgets; waivers (expired ones flagged)."""
    corpus = _load(corpus_dir)
    cases = corpus.cases
    click.echo(f"{corpus.folder}: {len(cases)} cases, {len(corpus.families)} families, "
               f"{sum(c.budget for c in cases)} value draws in all")
    for title, key in (("family", lambda c: c.family), ("tier", lambda c: c.tier), ("level", lambda c: c.level),
                       ("dtype", lambda c: c.dtype), ("op", lambda c: c.op)):
        counts = collections.Counter(key(c) for c in cases)
        ordered = sorted(counts.items(), key=lambda kv: str(kv[0]))
        click.echo(f"by {title}: " + ", ".join(f"{k} {n}" for k, n in ordered))
    click.echo("family budgets: " + ", ".join(f"{f} {sum(c.budget for c in cases if c.family == f)}"
                                              for f in corpus.families))
    waivers = [(c, w) for c in cases for w in c.waivers]
    click.echo(f"waivers: {len(waivers)}")
    for case, waiver in waivers:
        state = "EXPIRED" if waiver.expires < today else "until"
        click.echo(f"  {case.id} [{', '.join(waiver.targets)}] {state} {waiver.expires.isoformat()}: {waiver.reason}")


@path_shapes.command("list")
@corpus_option
@filter_options
def list_cases(corpus_dir: Path | None, families: tuple[str, ...], tiers: tuple[str, ...],
               levels: tuple[int, ...]) -> None:
    """One line per case: id, op, tier (MiB needed), level, budget, dtype, operand shapes."""
    from torchcts.pathshapes.corpus import tensor_specs

    corpus = _load(corpus_dir)
    cases = _selected(corpus, families, tiers, levels)
    for case in cases:
        shapes = " ".join("x".join(map(str, s.shape)) + ("/cl" if s.layout == "channels_last" else
                          "/T" if s.layout == "transposed" else "") for s in tensor_specs(case))
        waived = " waived" if case.waivers else ""
        click.echo(f"{case.id}  {case.op}  {case.tier}({case.needed_bytes / (1 << 20):.1f} MiB)  L{case.level}  "
                   f"x{case.budget}  {case.dtype}  [{shapes}]{waived}")
    click.echo(f"{len(cases)} of {len(corpus.cases)} cases", err=True)


@path_shapes.command("run")
@device_option("Device to run the cases on (cpu, cuda, faulty, ...).")
@click.option("--validation", is_flag=True, help="Run against CPU itself to validate the harness.")
@manifest_option(help="Backend manifest: its semantic_level, capabilities (training: the backward items), dtypes, "
                      "skip_ops, tolerance_overrides and resource_limits decide what runs (default: none; every "
                      "case runs).", resolved=False)
@corpus_option
@filter_options
@click.option("--id", "ids", multiple=True, help="Only this case id; repeatable.")
@today_option
@results_dir_option("Where the run folder <run-id>/ (records.jsonl, run.json) goes.")
@compile_option("Run each case's op through torch.compile(backend=B) on the device; compare with eager CPU.")
@shape_mode_option()
def run(device: str | None, validation: bool, manifest_path: Path | None, corpus_dir: Path | None,
        families: tuple[str, ...], tiers: tuple[str, ...], levels: tuple[int, ...], ids: tuple[str, ...],
        today: datetime.date, results_dir: Path, compile_backend: str | None, shape_mode: str | None) -> None:
    """Run each case's seeded draws on the device and on CPU and compare (the oracle's tolerance model).

    Two items per case: `path_shapes` compares the forward result, `path_shapes_backward` the gradients of
    its floating operands (level 4, needs the training capability). Every item gets a record; those not run
    say why (selection, level, capability, dtype, skip_ops, resource limits, memory). The memory budget is taken
    once at the start (available memory, or resource_limits.max_system_memory_mb): a tier whose largest item's
    estimated peak does not fit it is left out unless named with --tier, and no item whose own does is allocated.
    Waivers mark a problem known (records carry `waiver`), never turn it into a pass; expired ones are
    ignored with a warning. Exits 0 when no unwaived case failed, 1 when one did, 2 for bad input, 3 when
    nothing executed."""
    import torch

    from torchcts.engine.run import HARNESS_THREADS
    from torchcts.pathshapes.memory import MemoryBudget
    from torchcts.pathshapes.runner import RunSettings, Selection, environment, run_corpus
    from torchcts.run_setup.device import check_device, device_kind, run_target
    from torchcts.run_setup.errors import SessionError
    from torchcts.run_setup.manifest_load import import_manifest_backend

    if device is None and not validation:
        raise click.UsageError("pass --device D, or --validation to run against CPU itself")
    if validation and device is not None and device_kind(device) != "cpu":
        raise click.UsageError(f"--validation runs against CPU itself; it cannot be combined with --device {device}")
    device = device or "cpu"
    manifest = _manifest(manifest_path) if manifest_path is not None else None
    corpus = _load(corpus_dir)
    _selected(corpus, families, tiers, ())  # unknown families: exit 2
    if len(levels) > 1:
        fail(f"--level is given {len(levels)} times; `path-shapes run` takes one: the run's depth (cases above it "
             "are level_filtered)")
    unknown = sorted(set(ids) - {c.id for c in corpus.cases})
    if unknown:
        fail(f"--id {unknown[0]}: no such case in {corpus.folder}")
    try:
        if manifest is not None:
            import_manifest_backend(manifest)
        target = run_target(device, manifest, compile_backend, shape_mode)
        check_device(device)
    except SessionError as exc:
        fail(str(exc))
    torch.set_num_threads(HARNESS_THREADS)
    settings = RunSettings(device=device, manifest=manifest, validation=validation, today=today,
                           selection=Selection(families, tiers, (), ids), level=levels[0] if levels else None,
                           compile=target.compile, memory=MemoryBudget.detect(manifest, tiers))
    summary = run_corpus(corpus, settings, results_dir, environment(settings, corpus), click.echo)
    for warning in summary.warnings:
        click.echo(f"warning: {warning}", err=True)
    counts = ", ".join(f"{n} {o}" for o, n in summary.counts.items())
    click.echo(f"{counts}; waived problems {summary.waived_problems}, unwaived {summary.unwaived_problems} "
               f"({summary.duration_s:.1f} s)")
    click.echo(f"results: {summary.run_folder}")
    executed = sum(summary.counts.get(o, 0) for o in ("passed", "failed", "error", "crashed", "timed_out"))
    sys.exit(1 if summary.unwaived_problems else 3 if executed == 0 else 0)


def _manifest(path: Path) -> Any:
    from torchcts.manifest import ManifestError, load_manifest

    try:
        manifest, _ = load_manifest(path)
    except ManifestError as exc:
        fail(f"{path}: {exc}")
    return manifest
