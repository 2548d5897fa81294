"""`torchcts sync-opinfo` (issue 21): rebuilds the OpInfo metadata cache and says where, how many OpInfos and how
long; `--check` builds nothing and exits 0 fresh, 1 missing or stale."""

from __future__ import annotations

from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.plan import catalog, op_metadata
from torchcts.plan.op_metadata_file import read_catalog


def _invoke(tmp_path, *argv: str):
    env = {op_metadata.CACHE_DIR_VARIABLE: str(tmp_path / "cache")}
    return CliRunner().invoke(cli, ["sync-opinfo", *argv], env=env)


def test_sync_opinfo_builds_checks_and_rebuilds_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(op_metadata.CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    path = op_metadata.cache_path()
    missing = _invoke(tmp_path, "--check")
    assert missing.exit_code == 1 and missing.output == f"{path}: missing\n"
    assert not path.exists()

    built = _invoke(tmp_path)
    assert built.exit_code == 0, built.output
    [line] = built.output.splitlines()
    assert line.startswith(f"{path}: {len(catalog.all_ops())} OpInfos, ") and " built in " in line
    assert [op.id for op in read_catalog(path).ops] == [catalog.op_id(op) for op in catalog.all_ops()]

    fresh = _invoke(tmp_path, "--check")
    assert fresh.exit_code == 0 and fresh.output.startswith(f"{path}: fresh: {len(catalog.all_ops())} OpInfos")

    path.write_text(path.read_text()[:1000])  # truncated
    stale = _invoke(tmp_path, "--check")
    assert stale.exit_code == 1 and stale.output.startswith(f"{path}: not valid JSON")
    assert _invoke(tmp_path).exit_code == 0
    assert len(read_catalog(path).ops) == len(catalog.all_ops())


def test_sync_opinfo_into_a_folder_it_cannot_write_is_a_one_line_error(tmp_path):
    (tmp_path / "cache").write_text("a file where the cache folder would be\n")
    result = _invoke(tmp_path)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert "cannot write the OpInfo metadata cache" in line and op_metadata.CACHE_DIR_VARIABLE in line


def test_sync_opinfo_help_says_what_it_does():
    result = CliRunner().invoke(cli, ["sync-opinfo", "--help"], terminal_width=1000)
    assert result.exit_code == 0
    for words in ("TORCHCTS_CACHE_DIR", "--check", "op database", "docs/opinfo-cache.md"):
        assert words in " ".join(result.output.split())
