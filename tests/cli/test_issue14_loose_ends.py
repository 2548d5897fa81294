"""Issue 14, loose ends: a bad known-crash ledger stops `torchcts fuzz` with one line (exit 2), and plain
pytest's --corpus-dir default is the same folder the CLI picks (never the shipped curated corpus)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from torchcts.cases.corpus_default import default_corpus_dir
from torchcts.cli.main import cli
from torchcts.manifest.templates import render_template
from torchcts.run_setup.checks import checked_options, corpus_dir
from torchcts.run_setup.request import RunRequest


def test_fuzz_with_an_unreadable_ledger_next_to_the_manifest_is_a_one_line_error(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("minimal", device_name="cpu"))
    (tmp_path / "known_crashes.json").write_text("{not json")
    result = CliRunner().invoke(cli, ["fuzz", "--device", "cpu", "--manifest", str(tmp_path / "manifest.py"),
                                      "--ops", "^abs$", "--dtype", "float32", "--max-visits", "1",
                                      "--results-dir", str(tmp_path / "results"),
                                      "--corpus-dir", str(tmp_path / "corpus")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("known-crash ledger: ") and "known_crashes.json" in lines[0]


def _options(tmp_path, **given):
    return RunRequest(**{"results_dir": str(tmp_path / "results"), **given})


def test_the_plugins_corpus_dir_defaults_like_the_cli(tmp_path):
    option = _options(tmp_path)
    assert corpus_dir(option) == default_corpus_dir(tmp_path / "results")
    checked_options(option)  # the default folder is checked like a given one, and is fine here
    assert corpus_dir(_options(tmp_path, corpus_dir="cases")) == Path("cases")
