"""`torchcts run --last-failed` and `run --capability`, on the faulty device, asserted on the records written.

--last-failed reruns the items the newest earlier run on the same device left failed, errored, crashed
or timed out, and records every other item deselected with what it was in that run. A seeded bug
(`noncontiguous_add`: add on non-contiguous inputs) fails `layout::add` and leaves `forward::add`
passing; switching the bug off shows the rerun passing. --capability keeps the properties that test
a capability (their own, or one they also prove), intersected with --property.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan import registry
from torchcts.plan.build import build_plan
from torchcts.plan.selection import Selection, SelectionError, check_capabilities
from tests import warm_programs

ADD = ["--device", "faulty", "--ops", "^add$", "--dtype", "float32", "--derandomize", "--max-examples", "10",
       "--no-report"]  # derandomized, 10 examples: layout::add draws the non-contiguous case that shows the bug
LAYOUT, FORWARD = "layout::add::function::float32", "forward::add::function::float32"


def torchcts(cwd: Path, *args: str, bugs: str = "") -> tuple[subprocess.CompletedProcess, Path | None]:
    """Run the CLI in `cwd`; the run folder it made (None: none)."""
    before = set((cwd / "results").glob("*/run.json"))
    result = warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, cwd=cwd,
                            timeout=1200, env=dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs))
    made = sorted(set((cwd / "results").glob("*/run.json")) - before)
    return result, (made[-1].parent if made else None)


def records(folder: Path) -> dict[str, dict]:
    return {r["item"]: r for r in map(json.loads, (folder / "records.jsonl").read_text().splitlines())}


def run_json(folder: Path) -> dict:
    return json.loads((folder / "run.json").read_text())


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("selection-flags")
    (folder / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    return folder


@pytest.mark.slow
def test_last_failed_reruns_only_the_last_failures(project):
    first, run1 = torchcts(project, "run", *ADD, "--property", "forward", "--property", "layout", "--level", "2",
                           bugs="noncontiguous_add")
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    assert {i: r["outcome"] for i, r in records(run1).items() if i in (LAYOUT, FORWARD)} == {
        LAYOUT: "failed", FORWARD: "passed"}
    # a newer run with failures on another device is not "the last run" of faulty
    other = project / "results" / "99991231T000000Z-cpu"
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"status": "complete", "counts": {"failed": 1}, "run_id": "cpu",
                                                "environment": {"device": "cpu"}}))
    (other / "records.jsonl").write_text(json.dumps({"item": FORWARD, "property": "forward", "op": "add",
                                                     "dtype": "float32", "level": 1, "outcome": "failed"}) + "\n")

    second, run2 = torchcts(project, "run", *ADD, "--property", "forward", "--property", "layout", "--level", "2",
                            "--last-failed", bugs="noncontiguous_add")
    assert second.returncode == 1, second.stdout[-3000:] + second.stderr[-3000:]
    assert f"rerunning the 1 item(s) that failed, errored, crashed or timed out in {run1.name}" in second.stderr
    got = records(run2)
    assert got[LAYOUT]["outcome"] == "failed"
    assert got[FORWARD]["outcome"] == "deselected"
    assert got[FORWARD]["reason"] == f"--last-failed: passed in {run1.name}"
    executed = [i for i, r in got.items() if r["outcome"] in ("passed", "failed", "error", "crashed", "timed_out")]
    assert executed == [LAYOUT]
    assert run_json(run2)["environment"]["selection"]["last_failed"] == {
        "run_id": run1.name, "folder": str(Path("results") / run1.name), "items": 1}

    fixed, run3 = torchcts(project, "run", *ADD, "--property", "forward", "--property", "layout", "--level", "2",
                           "--last-failed")  # the bug is gone: the rerun passes; the newest run is run2 now
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]
    got = records(run3)
    assert got[LAYOUT]["outcome"] == "passed"
    assert got[FORWARD]["reason"] == f"--last-failed: deselected in {run2.name}"

    nothing, run4 = torchcts(project, "run", *ADD, "--property", "forward", "--property", "layout", "--level", "2",
                             "--last-failed")
    assert nothing.returncode == 0 and run4 is None, nothing.stderr[-3000:]
    assert f"no item failed, errored, crashed or timed out in {run3.name}" in nothing.stderr
    assert "nothing to rerun" in nothing.stderr


@pytest.mark.slow
def test_capability_keeps_the_properties_that_test_it_within_property(project):
    result, folder = torchcts(project, "run", *ADD, "--level", "4", "--capability", "training",
                              "--property", "backward", "--property", "forward")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    got = records(folder)
    assert got["backward::add::function::float32"]["outcome"] == "passed"
    assert got[FORWARD]["outcome"] == "deselected"
    assert got[FORWARD]["reason"] == "--capability training leaves it out (forward tests inference)"
    assert got[LAYOUT]["reason"] == "--property leaves it out"
    assert run_json(folder)["environment"]["selection"]["capabilities"] == ["training"]


def test_capability_selects_what_a_property_also_proves(project):
    manifest, _ = load_manifest(project / "manifest.py")
    plan = build_plan(manifest, Selection(op_patterns=("^abs$",), capabilities=("ieee754",)))
    kept = {item.property for item in plan.items}
    assert "forward" in kept and "layout" not in kept  # forward proves ieee754 too; layout does not
    assert all(registry.get(name).tests(["ieee754"]) for name in kept)
    reasons = {entry.item.id: entry.reason for entry in plan.accounting if entry.outcome == "deselected"}
    assert reasons["layout::abs::function::float32"] == "--capability ieee754 leaves it out (layout tests inference)"


@pytest.mark.parametrize("args, message", [
    (["--device", "faulty", "--capability", "trainnig"],
     "--capability 'trainnig' is not one of the"),
    (["--device", "faulty", "--last-failed", "--results-dir", "empty"],
     "--last-failed: empty holds no earlier run on device faulty that executed items; run without --last-failed"),
    (["--validation", "--", "-x", "--lf"],
     "pytest arguments after --: --lf needs pytest's cache, which `torchcts run` does not keep; `torchcts run "
     "--last-failed` reruns"),
    (["--validation", "--", "--failed-first"], "pytest arguments after --: --failed-first needs pytest's cache"),
])
def test_bad_selection_flags_are_one_line_and_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["run", *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.output
    assert not (tmp_path / "results").exists()


def test_an_unknown_capability_suggests_the_closest():
    with pytest.raises(SelectionError, match=r"did you mean training\?"):
        check_capabilities(["trainnig"])
    assert check_capabilities(["training", "ieee754", "training"]) == ("training", "ieee754")
    assert check_capabilities([]) is None


def test_run_help_says_what_the_flags_do():
    text = " ".join(CliRunner().invoke(cli, ["run", "--help"]).output.split())
    assert "--capability NAME" in text and "with --property, the properties in both" in text
    assert "--last-failed" in text and "newest earlier run on this device" in text
    assert "pytest's --lf, --ff and --sw after `--` are refused" in text


def _earlier_run(folder: Path, records_text: str, device: str = "faulty") -> Path:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"status": "complete", "counts": {"failed": 1}, "run_id": folder.name,
                                                "environment": {"device": device}}))
    (folder / "records.jsonl").write_text(records_text)
    return folder


def test_an_unreadable_earlier_run_is_one_line_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = json.dumps({"item": LAYOUT, "property": "layout", "op": "add", "dtype": "float32", "level": 1,
                       "outcome": "failed"})
    _earlier_run(tmp_path / "results" / "20260101T000000Z-a", good + "\n" + good.replace('"level": 1', '"level": "x"')
                 + "\n")
    result = CliRunner().invoke(cli, ["run", "--device", "faulty", "--last-failed"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("--last-failed: results/20260101T000000Z-a/records.jsonl:2: field 'level'"), lines


def test_the_plugin_reads_last_failed_from_a_named_folder(tmp_path):
    from torchcts.run_setup.checks import last_failed_from
    from torchcts.run_setup.errors import SessionError

    record = {"item": LAYOUT, "property": "layout", "op": "add", "dtype": "float32", "level": 1, "outcome": "timed_out"}
    folder = _earlier_run(tmp_path / "run", "".join(json.dumps({**record, **more}) + "\n" for more in (
        {}, {"item": FORWARD, "outcome": "passed"}, {"item": "x", "outcome": "level_filtered"})))
    last = last_failed_from(str(folder))
    assert last.failed == (LAYOUT,)
    assert [last.reason(i) for i in (LAYOUT, FORWARD, "x", "y")] == [
        None, "--last-failed: passed in run", "--last-failed: level_filtered in run", "--last-failed: not in run"]
    passed = _earlier_run(tmp_path / "passed", json.dumps({**record, "outcome": "passed"}) + "\n")
    with pytest.raises(SessionError, match="no item failed, errored, crashed or timed out in passed; nothing to rerun"):
        last_failed_from(str(passed))
    with pytest.raises(SessionError, match="--last-failed-from 'nowhere': no such folder"):
        last_failed_from("nowhere")


def test_an_item_a_dead_run_was_running_is_rerun_as_crashed(tmp_path):
    from torchcts.results.last_failed import read_last_failed

    record = {"item": FORWARD, "property": "forward", "op": "add", "dtype": "float32", "level": 1, "outcome": "passed"}
    folder = _earlier_run(tmp_path / "died", json.dumps(record) + "\n")
    summary = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**summary, "status": "running"}))  # killed: never closed
    (folder / "started.jsonl").write_text(json.dumps({"item": FORWARD}) + "\n" + json.dumps({"item": LAYOUT}) + "\n")
    last = read_last_failed(folder)
    assert last.failed == (LAYOUT,) and last.reason(FORWARD) == "--last-failed: passed in died"
    hostile = _earlier_run(tmp_path / "hostile", json.dumps({**record, "outcome": "failed"}) + "\n")
    (hostile / "run.json").write_text(json.dumps({**summary, "run_id": "x" * 10_000}))
    assert read_last_failed(hostile).reason("other") == "--last-failed: not in hostile"  # an id is bounded


def test_last_failed_takes_the_newest_run_of_the_same_kind(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    failed = json.dumps({"item": LAYOUT, "property": "layout", "op": "add", "dtype": "float32", "level": 1,
                         "outcome": "failed"}) + "\n"
    _earlier_run(tmp_path / "results" / "20260101T000000Z-a", failed)
    for name, environment in (("20260102T000000Z-b", {"compile": "inductor"}),
                              ("20260103T000000Z-c", {"suite": "path-shapes"})):
        newer = _earlier_run(tmp_path / "results" / name, failed.replace(LAYOUT, "other::item"))
        summary = json.loads((newer / "run.json").read_text())
        summary["environment"].update(environment)
        (newer / "run.json").write_text(json.dumps(summary))
    from torchcts.cli.last_failed import last_failed_run

    assert last_failed_run(Path("results"), "faulty", None, False, None).name == "20260101T000000Z-a"
    assert last_failed_run(Path("results"), "faulty", "inductor", False, None).name == "20260102T000000Z-b"
