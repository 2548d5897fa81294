"""Issue 14, item 6: a run never writes new cases into the curated corpus shipped with TorchCTS by default.

Without --corpus-dir, `run`, `fuzz` and `replay` use ./corpus, unless ./corpus is the package's own
curated corpus (a TorchCTS source checkout): then RESULTS_DIR/corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cases.files import builtin_corpus
from torchcts.cases.corpus_default import default_corpus_dir, is_shipped_corpus
from torchcts.cli.main import cli
from torchcts.cli.options import CORPUS_DEFAULT, resolve_corpus
from torchcts.manifest.templates import render_template
from torchcts.testing.faulty import bugs

BUG = "storage_offset_ignored"  # abs reads from the storage's start, ignoring the offset


def test_the_working_folders_own_corpus_is_the_default(tmp_path, monkeypatch):
    assert default_corpus_dir(Path("results"), cwd=tmp_path) == tmp_path / "corpus"  # not there yet: created later
    (tmp_path / "corpus").mkdir()
    assert default_corpus_dir(Path("results"), cwd=tmp_path) == tmp_path / "corpus"
    monkeypatch.chdir(tmp_path)
    assert default_corpus_dir(Path("results")) == Path("corpus")  # relative, as a user would type it


def test_in_a_source_checkout_new_cases_go_under_the_results_folder(tmp_path, monkeypatch):
    checkout = builtin_corpus().parent  # the folder whose ./corpus is the package's curated corpus
    assert is_shipped_corpus(checkout / "corpus")
    assert default_corpus_dir(Path("results"), cwd=checkout) == Path("results") / "corpus"
    assert default_corpus_dir(tmp_path / "r", cwd=checkout) == tmp_path / "r" / "corpus"  # follows --results-dir
    monkeypatch.chdir(checkout)
    assert default_corpus_dir(Path("results")) == Path("results") / "corpus"
    (tmp_path / "corpus").symlink_to(builtin_corpus(), target_is_directory=True)  # the same folder by another path
    assert default_corpus_dir(Path("results"), cwd=tmp_path) == Path("results") / "corpus"


def test_run_fuzz_and_replay_share_the_default_and_say_it(tmp_path, monkeypatch):
    monkeypatch.chdir(builtin_corpus().parent)
    assert resolve_corpus(None, tmp_path / "r") == tmp_path / "r" / "corpus"
    assert resolve_corpus(tmp_path / "mine", tmp_path / "r") == tmp_path / "mine"  # a given --corpus-dir is kept
    for command in ("run", "fuzz"):
        shown = CliRunner().invoke(cli, [command, "--help"], terminal_width=1000).output
        assert CORPUS_DEFAULT in shown
    replay = CliRunner().invoke(cli, ["replay", "--device", "cpu", "--results-dir", str(tmp_path / "r")])
    assert replay.exit_code == 2 and f"no corpus at {tmp_path / 'r' / 'corpus'}" in replay.stderr, replay.output


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_failing_run_beside_the_shipped_corpus_writes_its_case_under_results(tmp_path, monkeypatch):
    """A real run on the faulty device, in a folder whose ./corpus stands in for the shipped corpus."""
    shipped = tmp_path / "corpus"
    shipped.mkdir()
    monkeypatch.setattr("torchcts.cases.files.builtin_corpus", lambda: shipped)
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(bugs.ENV_VAR, BUG)
    bugs.enable_bugs(BUG)  # the device may already be registered in this process (it reads the variable once)
    try:
        result = CliRunner().invoke(cli, ["run", "--device", "faulty", "--ops", "^abs$", "--dtype", "float32",
                                          "--property", "forward", "--level", "2", "--derandomize",
                                          "--max-examples", "15"])
    finally:
        bugs.disable_bugs(BUG)
    assert result.exit_code == 1, result.output[-3000:]
    assert list(shipped.iterdir()) == []
    cases = list((tmp_path / "results" / "corpus").glob("*.json"))
    assert len(cases) == 1 and json.loads(cases[0].read_text())["op"] == "abs"
    records_file = next((tmp_path / "results").glob("*/records.jsonl"))
    records = [json.loads(line) for line in records_file.read_text().splitlines()]
    [failed] = [r for r in records if r["outcome"] == "failed"]
    assert Path(failed["counterexample"]["path"]).resolve() == cases[0].resolve()
