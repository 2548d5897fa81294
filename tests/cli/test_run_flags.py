"""One vocabulary of flags, and runs that cannot be falsely green.

`--corpus-dir` is where new counterexamples go (run, fuzz, the plugin), `--replay` replays cases under
pytest, and `--corpus` is a one-line error naming both. `torchcts run` takes pytest arguments only
after `--`: an unknown option is click's error with a suggestion. A selection that executes no item
exits 3 and says which filter left nothing; `--collect-only` and replays are marked in run.json's
`run_kind`, so `torchcts report` never takes them for the latest run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest.templates import render_template
from tests import warm_programs

CHEAP = ["--validation", "--level", "1", "--max-examples", "2", "--results-dir", "results"]


def test_corpus_is_one_line_naming_both_new_flags():
    for command in (["run", "--validation"], ["fuzz", "--device", "cpu"]):
        result = CliRunner().invoke(cli, [*command, "--corpus", "cases"])
        assert result.exit_code == 2, result.output
        [line] = [line for line in result.stderr.splitlines() if line.strip()]
        assert "--corpus is gone" in line and "--corpus-dir DIR" in line and "--replay PATH" in line
    assert CliRunner().invoke(cli, ["run", "--validation", "--corpus=cases"]).exit_code == 2


def test_an_unknown_run_option_is_a_click_error_with_a_suggestion():
    result = CliRunner().invoke(cli, ["run", "--validation", "--corpos", "cases"])
    assert result.exit_code == 2
    assert "No such option '--corpos'" in result.stderr and "--corpus-dir" in result.stderr
    assert "unrecognized arguments" not in result.output  # never pytest's error
    stray = CliRunner().invoke(cli, ["run", "--validation", "tests/"])  # a pytest path before `--`
    assert stray.exit_code == 2 and "unexpected extra argument" in stray.stderr


def test_run_help_says_pytest_arguments_go_after_the_double_dash():
    result = CliRunner().invoke(cli, ["run", "--help"])
    assert result.exit_code == 0
    assert "run [OPTIONS] [-- PYTEST_ARGS...]" in result.output
    assert "--no-report" in result.output and "--corpus-dir" in result.output
    assert "--corpus " not in result.output.replace("--corpus-dir", "")


@pytest.mark.slow
def test_plain_pytest_names_the_new_flags_for_corpus(tmp_path):
    result = warm_programs.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--corpus", "cases"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 4, result.stdout + result.stderr  # pytest's usage error
    assert "--corpus-dir DIR" in result.stderr and "--replay PATH" in result.stderr


# -- runs that execute nothing ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("flags")
    (folder / "manifest.py").write_text(render_template("smoke", device_name="cpu"))
    return folder


def _run(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path | None]:
    results = cwd / "results"
    before = set(results.glob("*/run.json"))
    result = warm_programs.run([sys.executable, "-m", "torchcts", "run", *CHEAP, *args], capture_output=True, text=True,
                            cwd=cwd, timeout=900)
    made = sorted(set(results.glob("*/run.json")) - before)
    return result, (made[-1].parent if made else None)


def _nothing_ran(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 3, result.stdout[-3000:] + result.stderr[-3000:]
    [line] = [line for line in result.stdout.splitlines() if line.startswith("torchcts: nothing ran: ")]
    return line


@pytest.mark.slow
def test_ops_matching_nothing_exits_3_and_still_writes_the_report(project):
    result, folder = _run(project, "--ops", "^no_such_op$")
    assert "--ops '^no_such_op$' matches none of the" in _nothing_ran(result)
    assert (folder / "report" / "scorecard.md").is_file() and (folder / "report" / "report.html").is_file()
    assert json.loads((folder / "run.json").read_text())["run_kind"] == "run"


@pytest.mark.slow
def test_a_selection_the_manifest_does_not_claim_exits_3_naming_the_reason(project):
    # --dtype claims its dtype for the run (docs/harness.md): a property whose capability is not declared cannot run
    result, folder = _run(project, "--ops", "^abs$", "--property", "backward", "--dtype", "float32", "--no-report")
    line = _nothing_ran(result)
    assert "capability_not_declared: the backward property needs the training capability" in line, line
    assert "dtype_not" not in line  # only the reasons of what was asked
    assert not (folder / "report").exists()


@pytest.mark.slow
def test_pytest_deselecting_every_item_exits_3(project):
    result, _ = _run(project, "--ops", "^abs$", "--no-report", "--", "-k", "no_such_item")
    assert "pytest deselected or did not collect them" in _nothing_ran(result)


@pytest.mark.slow
def test_plain_pytest_fails_a_session_that_ran_nothing(project):
    result = warm_programs.run([sys.executable, "-m", "pytest", "--pyargs", "torchcts.properties", "-p", "no:cacheprovider",
                             "--manifest", "manifest.py", "--validation", "--ops", "^no_such_op$", "--level", "1",
                             "--results-dir", "plain"], capture_output=True, text=True, cwd=project, timeout=900)
    assert result.returncode == 5, result.stdout[-3000:]  # pytest's "no tests ran"
    assert "torchcts: nothing ran: --ops '^no_such_op$' matches none of the" in result.stdout


@pytest.mark.slow
def test_collect_only_is_recorded_as_such_and_is_not_failed(project):
    result, folder = _run(project, "--ops", "^abs$", "--", "--collect-only")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "test_forward[forward::abs::function::float32]" in result.stdout
    assert json.loads((folder / "run.json").read_text())["run_kind"] == "collect_only"
    assert not (folder / "report").exists()  # nothing ran: nothing to report


@pytest.mark.slow
def test_a_replay_is_recorded_as_such(project, tmp_path):
    (tmp_path / "empty").mkdir()
    result = warm_programs.run([sys.executable, "-m", "torchcts", "replay", str(tmp_path / "empty"), "--device", "cpu",
                             "--results-dir", str(tmp_path / "replays")], capture_output=True, text=True,
                            cwd=project, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    [folder] = [p.parent for p in (tmp_path / "replays").glob("*/run.json")]
    assert json.loads((folder / "run.json").read_text())["run_kind"] == "replay"
