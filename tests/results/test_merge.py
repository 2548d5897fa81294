"""`torchcts run --shard K/N` and `torchcts report --merge`: three shards merged equal the unsharded run;
shards of different runs are refused naming the field; a missing shard makes the merged run partial."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest.templates import render_template
from torchcts.core.shards import shard_of
from torchcts.results.files import read_records, read_summary
from tests import warm_programs

RUN = ["run", "--validation", "--derandomize", "--level", "1", "--dtype", "float32",
       "--ops", "^(abs|neg|add|mul|sin|cos)$", "--max-examples", "3", "--no-report"]


def _run(cwd: Path, results: str, *extra: str) -> Path:
    result = warm_programs.run([sys.executable, "-m", "torchcts", *RUN, "--results-dir", results, *extra],
                            capture_output=True, text=True, cwd=cwd, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    [folder] = [path.parent for path in (cwd / results).glob("*/run.json")]
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The unsharded run and its three shards, each a run folder of its own."""
    cwd = tmp_path_factory.mktemp("shards")
    (cwd / "manifest.py").write_text(render_template("smoke", device_name="cpu"))
    folders = {"whole": _run(cwd, "whole")}
    for k in (1, 2, 3):
        folders[k] = _run(cwd, f"shard-{k}", "--shard", f"{k}/3")
    return folders


def _merge(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["report", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def _merge_args(*folders: Path) -> list[str]:
    return [arg for folder in folders for arg in ("--merge", str(folder))]


def _by_item(folder: Path) -> dict[str, dict]:
    return {record["item"]: record for record in read_records(folder)}


@pytest.mark.slow
def test_each_shard_is_a_complete_run_folder_of_its_own_items(runs):
    whole = _by_item(runs["whole"])
    executed = {item for item, record in whole.items() if record["outcome"] == "passed"}
    assert len(executed) == 6
    for k in (1, 2, 3):
        summary = read_summary(runs[k])
        assert summary["status"] == "complete" and summary["environment"]["shard"] == f"{k}/3"
        shard = _by_item(runs[k])
        assert shard.keys() == whole.keys()  # every item accounted for in every shard
        assert {i for i, r in shard.items() if r["outcome"] == "passed"} == {i for i in executed if shard_of(i, 3) == k}
    assert read_summary(runs["whole"])["environment"]["shard"] is None


@pytest.mark.slow
def test_three_shards_merged_equal_the_unsharded_run(runs, tmp_path):
    code, out, err = _merge(*_merge_args(runs[3], runs[1], runs[2]), "--output", tmp_path / "merged")
    assert code == 0, out + err
    merged = tmp_path / "merged"
    assert f"merged {merged}" in out
    whole, joined = _by_item(runs["whole"]), _by_item(merged)
    assert joined.keys() == whole.keys()
    assert len(read_records(merged)) == len(whole)  # each item once
    for item, record in whole.items():
        assert (joined[item]["outcome"], joined[item].get("reason"), joined[item].get("fingerprints"),
                joined[item].get("distinct_cases"), joined[item].get("max_examples")) == \
               (record["outcome"], record.get("reason"), record.get("fingerprints"), record.get("distinct_cases"),
                record.get("max_examples")), item
    assert any(record.get("fingerprints") for record in joined.values())
    assert all(record["distinct_cases"] == len(set(record["fingerprints"])) and record["max_examples"] == 3
               for record in joined.values() if record["outcome"] == "passed")  # carried into the merged folder
    summary, expected = read_summary(merged), read_summary(runs["whole"])
    assert summary["status"] == "complete" and summary["complete"] is True
    assert summary["counts"] == expected["counts"] and summary["executed"] == expected["executed"] == 6
    assert summary["environment"]["shard"] == "merged 1,2,3/3"
    assert summary["environment"]["planned_items"] == expected["environment"]["planned_items"]
    assert summary["merged"]["missing"] == [] and [s["shard"] for s in summary["merged"]["shards"]] == [1, 2, 3]
    scorecard = (merged / "report" / "scorecard.md").read_text()
    assert "merged from shards 1, 2, 3 of 3" in scorecard and "PARTIAL" not in scorecard
    assert "6 items executed: 6 passed" in scorecard
    assert (merged / "report" / "junit.xml").is_file() and (merged / "report" / "report.html").is_file()


@pytest.mark.slow
def test_a_missing_shard_makes_the_merged_run_partial_and_names_it(runs, tmp_path):
    code, out, err = _merge(*_merge_args(runs[1], runs[3]), "--output", tmp_path / "merged")
    assert code == 0, out + err
    merged = tmp_path / "merged"
    summary = read_summary(merged)
    assert summary["status"] == "partial" and summary["merged"]["missing"] == [2]
    records = _by_item(merged)
    assert records.keys() == _by_item(runs["whole"]).keys()
    lost = [r for r in records.values() if r.get("reason") == "--shard 2/3: shard 2 is missing from the merge"]
    assert lost and all(r["outcome"] == "deselected" and shard_of(r["item"], 3) == 2 for r in lost)
    assert summary["executed"] == 6 - len(lost)
    scorecard = (merged / "report" / "scorecard.md").read_text()
    assert "(PARTIAL RUN)" in scorecard and "missing shards: 2" in scorecard
    assert "shards 2 missing from the merge" in (merged / "report" / "report.html").read_text()


def _copy(folder: Path, to: Path, **environment: object) -> Path:
    copy = to / folder.name
    shutil.copytree(folder, copy)
    summary = json.loads((copy / "run.json").read_text())
    summary["environment"].update(environment)
    (copy / "run.json").write_text(json.dumps(summary))
    return copy


@pytest.mark.slow
@pytest.mark.parametrize(("field", "value"), [
    ("torch", "2.12.0"), ("manifest_hash", "0" * 64), ("seed", 7), ("device", "meta"), ("torchcts", "0.0.1"),
    ("level", 2), ("max_examples", 100), ("derandomize", False),
])
def test_shards_of_different_runs_are_refused_naming_the_folder_and_field(runs, tmp_path, field, value):
    odd = _copy(runs[2], tmp_path, **{field: value})
    code, out, err = _merge(*_merge_args(runs[1], odd, runs[3]), "--output", tmp_path / "merged")
    assert code == 2
    [line] = err.splitlines()
    assert line.startswith(f"shard {odd}: {field} ") and f"differs from {runs[1]}'s" in line
    assert not (tmp_path / "merged").exists()  # nothing written


@pytest.mark.slow
def test_other_folders_that_are_not_shards_of_one_run_are_refused(runs, tmp_path):
    cases = [
        (_merge_args(runs[1], runs["whole"]), f"shard {runs['whole']}: not a shard"),
        (_merge_args(runs[1], _copy(runs[2], tmp_path / "a", shard="2/4")), "shard count 4 (shard 2/4) differs"),
        (_merge_args(runs[1], _copy(runs[2], tmp_path / "b", shard="1/3")), "shard 1/3 again"),
        (_merge_args(_copy(runs[1], tmp_path / "c", shard="merged 1,2/3")),
         "environment.shard 'merged 1,2/3' is not K/N"),
        (_merge_args(_copy(runs[1], tmp_path / "d", shard="2/3")), "ran there, but --shard sends it to shard 1/3"),
    ]
    for args, fragment in cases:
        code, out, err = _merge(*args, "--output", tmp_path / "merged")
        assert code == 2 and len(err.splitlines()) == 1 and fragment in err, (fragment, err)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    code, _, err = _merge(*_merge_args(runs[1]), "--output", tmp_path / "full")
    assert code == 2 and "exists and is not an empty folder" in err
    code, _, err = _merge(*_merge_args(runs[1]), "--from", runs[1])
    assert code == 2 and "--from and --merge exclude each other" in err


@pytest.mark.slow
@pytest.mark.parametrize(("content", "problem"), [
    ("{not json", "unreadable: not JSON"), ('{"status": "complete", "counts": {}}', "has no field 'environment'"),
    ('{"status": "complete", "counts": {}, "environment": {"shard": 3}}', "field 'environment.shard' must be"),
])
def test_a_malformed_shard_is_refused_naming_the_file(runs, tmp_path, content, problem):
    bad = tmp_path / "bad"
    shutil.copytree(runs[2], bad)
    (bad / "run.json").write_text(content)
    code, _, err = _merge(*_merge_args(runs[1], bad), "--output", tmp_path / "merged")
    assert code == 2
    [line] = err.splitlines()
    assert line.startswith(f"{bad / 'run.json'}: ") and problem in line
