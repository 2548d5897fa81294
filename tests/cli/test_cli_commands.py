"""Issue 14, item 6: the CLI is split into modules of one concept, its output folders are one shared option,
--property names come from the property registry, and importing the CLI imports neither torch nor the
properties (`torchcts --help` and `torchcts report` stay fast)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner
import pytest

import torchcts.cli
from torchcts.cli.main import cli
from torchcts.cli.options import OutputFolder
from torchcts.manifest.templates import render_template
from torchcts.plan import registry

CLI_FOLDER = Path(torchcts.cli.__file__).parent


def test_the_entry_points_are_where_packaging_and_users_find_them():
    from torchcts.cli import cli as from_package, main

    assert from_package is cli and callable(main)
    assert set(cli.commands) == {"check-manifest", "init", "run", "fuzz", "show-skips", "report", "replay", "selftest",
                                 "coverage", "sync-opinfo", "path-shapes", "triage"}


def test_every_cli_module_stays_small():
    sizes = {path.name: len(path.read_text().splitlines()) for path in CLI_FOLDER.glob("*.py")}
    assert all(lines <= 400 for lines in sizes.values()), sizes


@pytest.mark.slow
def test_importing_the_cli_imports_neither_torch_nor_the_properties():
    # completion_listing is no part of the command: it writes completion_names.py from the registry, run only by
    # scripts/generate_registry_listings.py and its test, so it may import the registry (and torch)
    modules = ", ".join(f"torchcts.cli.{p.stem}" for p in sorted(CLI_FOLDER.glob("*.py"))
                        if p.stem not in ("__init__", "completion_listing"))
    code = (f"import sys, {modules}; from torchcts.cli.main import cli; "
            "heavy = sorted(m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'torchcts.properties')));"
            "assert not heavy, heavy")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_every_folder_a_command_writes_is_the_one_checked_output_folder_option():
    written = {"results_dir", "corpus_dir", "output"}
    for name, command in cli.commands.items():
        for param in command.params:
            read_only = {("report", "results_dir"), ("init", "output"), ("triage", "results_dir"),
                         ("triage", "corpus_dir"), ("report", "corpus_dir")}
            if param.name not in written or (name, param.name) in read_only:
                continue  # report and triage only read --results-dir and --corpus-dir; init's --output: a file
            assert isinstance(param.type, OutputFolder), (name, param.name)


def test_property_help_lists_the_registered_properties():
    names = [spec.name for spec in registry.load()]
    assert names
    for command in ("run", "fuzz", "show-skips"):
        result = CliRunner().invoke(cli, [command, "--help"], terminal_width=1000)
        assert result.exit_code == 0, result.output
        line = next(line for line in result.output.splitlines() if line.lstrip().startswith("--property"))
        assert all(name in line for name in names), line


def test_an_unknown_property_exits_2_naming_it_and_the_registered_ones(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("smoke", device_name="auto"))
    result = CliRunner().invoke(cli, ["show-skips", "--manifest", str(tmp_path / "manifest.py"),
                                      "--property", "forwards"])
    assert result.exit_code == 2, result.output
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    known = len(registry.properties())
    assert line == f"--property 'forwards' is unknown; did you mean forward? {known} are registered " \
                   "(`torchcts run --help` lists them)"
    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert all(spec.name in help_text.replace("\n", " ").replace("  ", " ") for spec in registry.properties())


def test_a_default_corpus_that_cannot_be_written_is_a_one_line_error(tmp_path, monkeypatch):
    (tmp_path / "corpus").write_text("a file where the default corpus folder would be\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["run", "--validation", "--manifest", "missing.py"])
    assert result.exit_code == 2 and "--corpus-dir" in result.stderr and "corpus is a file" in result.stderr, result.output
    assert isinstance(result.exception, SystemExit)


def test_init_template_choice_is_checked_without_importing_it_at_startup(tmp_path):
    result = CliRunner().invoke(cli, ["init", "--template", "smal", "--non-interactive",
                                      "--output", str(tmp_path / "m.py")])
    assert result.exit_code == 2 and "'smal' is not one of 'smoke', 'minimal'" in result.stderr, result.output
    assert isinstance(cli.commands["init"].params[0].type, click.Choice)


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_nothing_imports_the_cli():
    """Imports run one way (docs/architecture.md): the CLI is the face; only `python -m torchcts` enters it."""
    import ast

    root = CLI_FOLDER.parents[1]
    offenders = []
    for folder in ("torchcts", "strategies", "properties"):
        for path in (root / folder).rglob("*.py"):
            if CLI_FOLDER in path.parents or path == root / "torchcts" / "__main__.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                offenders += [f"{path.relative_to(root)}: {n}" for n in names if n.split(".")[:2] == ["torchcts", "cli"]]
    assert offenders == []
