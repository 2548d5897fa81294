"""Paths and ids in untrusted files stay where they belong, and numbers are ASCII.

- `triage` and `report` read a record's `counterexample.path` only inside the run folder, its results
  folder, the default corpus folders (`./corpus`, `corpus/` beside the results folder; a symlinked one
  where it leads) and a --corpus-dir the user names, never anywhere under `/` or the home folder as a
  whole: `/etc/passwd`, `../../..`, a link out, a NUL are refused with one line (report: ten, then a
  count) and the failure is still triaged;
- an evidence store and a run folder's run.json name run ids that cannot step out of a folder (no
  '/', '..', ':'), or `collect-backend-evidence` exits 2 with one line saying how to mend the store;
- full-width and other Unicode digits are refused wherever TorchCTS parses a number from text
  (`--shard`, click's integer and number options, the pytest plugin's, byte counts, budgets).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.ascii_numbers import NotAsciiNumber, ascii_float, ascii_int
from torchcts.cases.files import new_case, save_case
from torchcts.cli.main import cli
from torchcts.results.writer import RunWriter
from torchcts.triage.run import triage_run
from torchcts.untrusted_paths import OutsideFolders, id_problem, resolve_inside
from tests import warm_programs

SECRET = "TOP-SECRET-LINE-never-to-be-read"


def _record(item: str, path: object) -> dict:
    return {"item": item, "property": "forward", "op": "add", "dtype": "float32", "level": 1, "outcome": "failed",
            "variant": "function", "error_line": "values differ", "counterexample": {"path": path, "replay": "x"}}


def _stored_case(path: Path) -> Path:
    x = torch.arange(6.0).reshape(2, 3)
    case = new_case(prop="forward", op="add", variant="function", dtype="float32", device_type="faulty", backend=None,
                    sample=SampleInput(x.t(), args=(torch.ones(3, 2),)), found={},
                    failure={"outcome": "failed", "message": "m",
                             "difference": "output: strides (1, 3), CPU gives (2, 1)"})
    save_case(path, case)
    return path


@pytest.fixture
def hostile_run(tmp_path: Path) -> tuple[Path, Path]:
    """A run folder under tmp/project/results whose records point at a secret outside the project in every way a
    file can spell it, and at one real case inside; (the run folder, the secret)."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    secret = outside / "secret.json"
    secret.write_text(json.dumps({"schema_version": 1, "note": SECRET}))
    project = tmp_path / "project"
    corpus = project / "corpus"
    good = _stored_case(corpus / "strided.json")
    (corpus / "link.json").symlink_to(secret)  # a link inside the corpus that leads out
    folder = project / "results" / "run-1"
    folder.mkdir(parents=True)
    hops = "../" * len(folder.parts)
    records = [
        _record("forward::add::function::float32", str(good)),
        _record("forward::add::function::etc_passwd", "/etc/passwd"),
        _record("forward::add::function::absolute_secret", str(secret)),
        _record("forward::add::function::dotdot", f"{hops}etc/passwd"),
        _record("forward::add::function::dotdot_secret", "corpus/../../elsewhere/secret.json"),
        _record("forward::add::function::link_out", "corpus/link.json"),
        _record("forward::add::function::proc", "/proc/self/environ"),
    ]
    (folder / "run.json").write_text(json.dumps({"status": "complete", "counts": {"failed": len(records)},
                                                 "run_id": "run-1", "environment": {"device": "faulty"}}))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder, secret


def test_triage_reads_no_case_outside_the_run_folders_and_still_triages_each_failure(hostile_run, monkeypatch):
    folder, secret = hostile_run
    monkeypatch.chdir(folder.parent.parent)  # the project: where the run was started
    result = CliRunner().invoke(cli, ["triage", "--from", str(folder), "--no-trace"])
    assert result.exit_code == 0, result.output
    data = json.loads((folder / "triage" / "triage.json").read_text())
    assert data["failures"] == 7  # every record triaged, refused paths too
    refused = [p for p in data["problems"] if "counterexample.path" in p]
    assert len(refused) == 6, data["problems"]
    assert all("not read" in p and "\n" not in p for p in refused)
    assert sum("is outside the folders it may name" in p for p in refused) == 4  # absolute, link out, /proc
    assert sum("steps out of its folder ('..')" in p for p in refused) == 2
    everything = (folder / "triage" / "triage.json").read_text() + (folder / "triage" / "triage.md").read_text()
    assert SECRET not in everything and "root:x:0" not in everything
    strided = next(c for c in data["clusters"] if c["kind"] == "strides")  # the case inside was read
    assert strided["items"] == ["forward::add::function::float32"]


def test_triage_reads_a_case_of_a_corpus_the_user_names(tmp_path):
    corpus = tmp_path / "team-corpus"  # outside the run's folders: readable only when named
    good = _stored_case(corpus / "strided.json")
    folder = tmp_path / "deep" / "results" / "run-2"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"status": "complete", "counts": {"failed": 1}, "run_id": "run-2",
                                                 "environment": {"device": "faulty"}}))
    (folder / "records.jsonl").write_text(json.dumps(_record("forward::add::function::float32", str(good))) + "\n")
    refused = triage_run(folder, scripts=False, trace=False)
    assert refused.failures[0].condition.known is False
    assert any("outside the folders" in p and "--corpus-dir" in p for p in refused.problems)
    named = triage_run(folder, corpus_dir=corpus, scripts=False, trace=False)
    assert named.problems == () and [c.kind for c in named.clusters] == ["strides"]


def test_report_describes_no_case_outside_the_run_folders(hostile_run, monkeypatch):
    folder, _ = hostile_run
    monkeypatch.chdir(folder.parent.parent)
    result = CliRunner().invoke(cli, ["report", "--from", str(folder)])
    assert result.exit_code == 0, result.output
    assert result.output.count("counterexample not read") == 6, result.output
    written = "".join(p.read_text(errors="replace") for p in (folder / "report").rglob("*") if p.is_file())
    assert SECRET not in written and "root:x:0" not in written


def _run_folder(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps({"status": "complete", "counts": {"failed": len(records)},
                                                 "run_id": folder.name, "environment": {"device": "faulty"}}))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def _torchcts(args: list[str], cwd: Path | str, home: Path) -> "subprocess.CompletedProcess[str]":
    import subprocess
    import sys

    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["triage", "report"])
def test_started_in_slash_or_home_no_case_path_reaches_them(tmp_path, command):
    """Started in `/` (a container's default) with the run folder in the home folder, neither the working folder
    nor the home folder (the folder holding the results folder) lets a record's path lead anywhere under them."""
    home = tmp_path / "home"
    secret = home / "secret.json"
    home.mkdir()
    secret.write_text(json.dumps({"schema_version": 1, "note": SECRET}))
    good = _stored_case(home / "corpus" / "strided.json")  # the default corpus beside `results`: allowed
    folder = _run_folder(home / "results" / "run-1", [
        _record("forward::add::function::float32", str(good)),
        _record("forward::add::function::etc_passwd", "/etc/passwd"),
        _record("forward::add::function::relative_passwd", "etc/passwd"),  # read against the working folder `/`
        _record("forward::add::function::home_secret", str(secret)),
        _record("forward::add::function::home_relative", "secret.json"),
    ])
    flat = _run_folder(home / "run-2", [_record("forward::add::function::home_secret", str(secret))])
    args = ["triage", "--no-trace", "--from"] if command == "triage" else ["report", "--from"]
    done = _torchcts(args + [str(folder)], cwd="/", home=home)
    assert done.returncode == 0, done.stderr
    written = "".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file() and p.suffix != ".jsonl")
    assert SECRET not in written and "root:x:0" not in written
    assert "strided.json" in written, written
    assert sum("counterexample" in line for line in done.stderr.splitlines()) == 4, done.stderr
    assert done.stderr.count("is outside the folders it may name") == 4, done.stderr
    done = _torchcts(args + [str(flat)], cwd="/", home=home)  # the results folder is the home folder: not a root
    assert done.returncode == 0 and "is outside the folders it may name" in done.stderr, done.stderr
    assert SECRET not in "".join(p.read_text(errors="replace") for p in flat.rglob("*")
                                 if p.is_file() and p.suffix != ".jsonl")


def test_a_symlinked_corpus_in_the_working_folder_is_read_where_it_leads(tmp_path, monkeypatch):
    shared = tmp_path / "shared" / "corpus"
    _stored_case(shared / "strided.json")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "corpus").symlink_to(Path("..") / "shared" / "corpus")
    folder = _run_folder(project / "results" / "run-1",
                         [_record("forward::add::function::float32", "corpus/strided.json")])
    monkeypatch.chdir(project)
    result = triage_run(folder, scripts=False, trace=False)
    assert result.problems == () and [c.kind for c in result.clusters] == ["strides"]
    report = CliRunner().invoke(cli, ["report", "--from", str(folder), "--format", "json"])
    assert report.exit_code == 0 and "counterexample not" not in report.output, report.output
    described = json.loads((folder / "report" / "summary.json").read_text())["failures"][0]["case"]
    assert described["problem"] is None and described["tensors"], described


def test_report_reads_a_case_of_a_corpus_the_user_names(tmp_path):
    good = _stored_case(tmp_path / "team-corpus" / "strided.json")
    folder = _run_folder(tmp_path / "deep" / "results" / "run-2",
                         [_record("forward::add::function::float32", str(good))])
    refused = CliRunner().invoke(cli, ["report", "--from", str(folder), "--format", "json"])
    assert refused.exit_code == 0, refused.output
    assert "is outside the folders it may name" in refused.output, refused.output
    named = CliRunner().invoke(cli, ["report", "--from", str(folder), "--format", "json",
                                     "--corpus-dir", str(tmp_path / "team-corpus")])
    assert named.exit_code == 0 and "counterexample not" not in named.output, named.output
    described = json.loads((folder / "report" / "summary.json").read_text())["failures"][0]["case"]
    assert described["problem"] is None and described["tensors"], described


def test_report_warns_about_ten_refused_paths_and_counts_the_rest(tmp_path):
    folder = _run_folder(tmp_path / "proj" / "results" / "run-1", [
        _record(f"forward::add::function::n{i}", f"/etc/passwd-{i}") for i in range(300)])
    result = CliRunner().invoke(cli, ["report", "--from", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "counterexample not read" in line]
    assert len(lines) == 11, result.output
    assert "290 more case paths" in lines[-1] and "300 in all" in lines[-1], lines[-1]
    failures = json.loads((folder / "report" / "summary.json").read_text())["failures"]
    assert sum("not read" in (f["case"] or {}).get("problem", "") for f in failures) == 300


def test_triage_warns_about_ten_problems_and_counts_the_rest(tmp_path):
    folder = _run_folder(tmp_path / "proj" / "results" / "run-1", [
        _record(f"forward::add::function::n{i}", f"/etc/passwd-{i}") for i in range(30)])
    result = CliRunner().invoke(cli, ["triage", "--from", str(folder), "--no-trace"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("torchcts triage: warning:")]
    assert len(warnings) == 11 and "20 more problems (30 in all)" in warnings[-1], warnings


@pytest.mark.parametrize("written, problem", [
    ("", "is not a path"), ("a\x00b", "is not a path"), (None, "is not a path"), (7, "is not a path"),
    ("../x.json", "steps out"), ("a/../../x.json", "steps out"),
    ("/etc/passwd", "is outside"), ("//etc/passwd", "is outside"),
])
def test_resolve_inside_refuses_paths_that_lead_out(tmp_path, written, problem):
    with pytest.raises(OutsideFolders, match=problem):
        resolve_inside(written, [tmp_path])


def test_resolve_inside_finds_files_inside_and_nothing_else(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "c.json").write_text("{}")
    (tmp_path / "a" / "dir.json").mkdir()
    assert resolve_inside("a/c.json", [tmp_path / "nowhere", tmp_path]) == (tmp_path / "a" / "c.json").resolve()
    assert resolve_inside(str(tmp_path / "a" / "c.json"), [tmp_path]) == (tmp_path / "a" / "c.json").resolve()
    assert resolve_inside("a/missing.json", [tmp_path]) is None
    assert resolve_inside("x" * 5000 + ".json", [tmp_path]) is None  # no file has so long a name
    assert resolve_inside("a/dir.json", [tmp_path]) is None  # a folder is not a case file
    os.mkfifo(tmp_path / "a" / "fifo.json")
    assert resolve_inside("a/fifo.json", [tmp_path]) is None  # nor a FIFO (opening it would block)


# -- run ids in evidence stores and run folders ----------------------------------------------------------------

def _traced_run(results: Path, run_id: str = "run-a") -> Path:
    writer = RunWriter(results, {"device": "faulty", "compile": None, "torch": "2.13.0", "torchcts": "0.test"},
                       run_id=run_id)
    writer.record({"item": "forward::abs::function::float32", "property": "forward", "op": "abs",
                   "dtype": "float32", "level": 1, "outcome": "passed", "dispatched": ["aten.abs.default"]})
    writer.close("complete")
    return writer.folder


@pytest.mark.parametrize("run_id", ["../../../x", "..", "a/b", "/etc/x", ".hidden", "a\\..\\b", "run\x00",
                                    "ｒｕｎ", "x" * 150 + "/../y"])
def test_a_store_naming_an_unsafe_run_id_is_refused_in_one_line(tmp_path, run_id):
    store = tmp_path / "store"
    store.mkdir()
    (store / "evidence.json").write_text(json.dumps({"schema_version": 1, "runs": [{"run_id": run_id}],
                                                     "overloads": {}}))
    result = CliRunner().invoke(cli, ["coverage", "collect-backend-evidence", "--store", str(store), "--from",
                                      str(_traced_run(tmp_path / "results"))])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert "runs[0].run_id" in line and "is not a name of letters, digits" in line
    assert json.loads((store / "evidence.json").read_text())["runs"] == [{"run_id": run_id}]  # left as it was


@pytest.mark.parametrize("run_id", ["../../../x", "a/../../b", "/tmp/x"])
def test_a_run_folder_naming_an_unsafe_run_id_is_refused_in_one_line(tmp_path, run_id):
    folder = _traced_run(tmp_path / "results")
    summary = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**summary, "run_id": run_id}))
    result = CliRunner().invoke(cli, ["coverage", "collect-backend-evidence", "--store", str(tmp_path / "store"),
                                      "--from", str(folder)])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert "run.json: run_id:" in line and repr(run_id) in line
    assert not (tmp_path / "store" / "evidence.json").exists()


def test_safe_ids_are_the_ones_torchcts_writes():
    from torchcts.results.writer import new_run_id

    for run_id in (new_run_id(), "merged-20261207T080124Z-62c3e6", "fuzz-20261207T080124Z-62c3e6", "run-a"):
        assert id_problem(run_id) is None, run_id


# -- numbers: ASCII only ------------------------------------------------------------------------------------

FULL_WIDTH = "\uff11\uff10"  # "１０"
OTHER_DIGITS = ["\uff11\uff10", "\u0661\u0660", "\u0967\u0966", "1_0", "\U0001d7cf\U0001d7ce"]  # full-width,
# Arabic-Indic, Devanagari, an underscore, mathematical bold digits: int() takes them all


@pytest.mark.parametrize("text", OTHER_DIGITS)
def test_ascii_int_and_float_refuse_other_digits(text):
    assert int(text) == 10  # what Python itself would accept
    with pytest.raises(NotAsciiNumber):
        ascii_int(text)
    with pytest.raises(NotAsciiNumber):
        ascii_float(text)
    assert ascii_int(" 10 ") == 10 and ascii_float("1e1") == 10.0
    for bad in ("nan", "inf", "1e400", "", "1 0"):
        with pytest.raises(NotAsciiNumber):
            ascii_float(bad)


@pytest.mark.parametrize("shard", ["\uff11/\uff12", "1/\uff12", "\u0661/\u0662", "1/2\u00a0", "\u00a01/2"])
def test_a_shard_in_other_digits_is_refused_like_any_non_ascii_number(tmp_path, shard):
    from torchcts.core.shards import ShardError, parse_shard

    with pytest.raises(ShardError, match="is not K/N"):
        parse_shard(shard)
    result = CliRunner().invoke(cli, ["run", "--device", "cpu", "--shard", shard, "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--shard" in result.output and "is not K/N" in result.output, result.output
    assert not any(tmp_path.iterdir())  # refused before a run folder exists


def test_a_merged_shard_whose_run_json_spells_the_shard_in_full_width_is_refused(tmp_path):
    from torchcts.results.merge import MergeError, merge_shards

    folders = []
    for shard in ("1/2", "\uff12/\uff12"):
        writer = RunWriter(tmp_path / "r", {"device": "cpu", "shard": shard}, run_id=f"s{len(folders)}")
        writer.close("complete")
        folders.append(writer.folder)
    with pytest.raises(MergeError, match="environment.shard"):
        merge_shards(folders)


@pytest.mark.parametrize("args", [
    ["run", "--device", "cpu", "--max-examples", FULL_WIDTH],
    ["run", "--device", "cpu", "--seed", FULL_WIDTH],
    ["run", "--device", "cpu", "--level", "\uff12"],
    ["run", "--device", "cpu", "--item-timeout", FULL_WIDTH],
    ["run", "--device", "cpu", "-n", "\uff11"],
    ["replay", str(Path(__file__).parent), "--device", "cpu", "--max-case-bytes", "\uff11M"],
    ["path-shapes", "list", "--level", "\uff12"],
    ["fuzz", "--device", "cpu", "--budget", "\uff11h"],
])
def test_integer_and_number_options_refuse_other_digits(tmp_path, args):
    result = CliRunner().invoke(cli, [*args, "--results-dir", str(tmp_path)] if args[0] != "path-shapes" else args)
    assert result.exit_code == 2, result.output
    assert any(word in result.output for word in ("ASCII", "is not a duration", "expected a positive number of bytes",
                                                  "a worker count"))
    assert "Traceback" not in result.output


@pytest.mark.slow
@pytest.mark.parametrize("option, value", [("--seed", FULL_WIDTH), ("--max-examples", "\u0663"),
                                           ("--level", "\uff12"), ("--item-timeout", "\uff11\uff10"),
                                           ("--blame-cases", "1_0")])
def test_the_pytest_plugin_options_refuse_other_digits(tmp_path, option, value):
    import subprocess
    import sys

    done = warm_programs.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", option, value, "--co", "-q",
                           str(Path(__file__).parents[1] / "test_dtypes.py")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert f"argument {option}: {value!r} is not" in done.stderr and "ASCII" in done.stderr


@pytest.mark.parametrize("run_id", ["C:x", "a:b", "run 1 (copy)"])
def test_ids_with_a_colon_or_a_space_are_refused_and_the_store_error_says_how_to_mend_it(tmp_path, run_id):
    assert id_problem(run_id) is not None
    store = tmp_path / "store"
    store.mkdir()
    runs = [{"run_id": "ok"}, {"run_id": run_id}]
    (store / "evidence.json").write_text(json.dumps({"schema_version": 1, "runs": runs, "overloads": {}}))
    result = CliRunner().invoke(cli, ["coverage", "collect-backend-evidence", "--store", str(store), "--from",
                                      str(_traced_run(tmp_path / "results"))])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert "runs[1].run_id" in line and "rename it here and in each overload's runs" in line, line


@pytest.mark.parametrize("text", OTHER_DIGITS + ["inf", "nan", "-5"])
def test_the_load_timeout_setting_refuses_other_digits(monkeypatch, text):
    from torchcts.manifest.child import timeout_s

    monkeypatch.setenv("TORCHCTS_LOAD_TIMEOUT", text)
    with pytest.raises(ValueError, match="TORCHCTS_LOAD_TIMEOUT must be a positive number of seconds in ASCII"):
        timeout_s()
    monkeypatch.setenv("TORCHCTS_LOAD_TIMEOUT", " 2.5 ")
    assert timeout_s() == 2.5


@pytest.mark.parametrize("text", OTHER_DIGITS)
def test_the_faulty_device_count_setting_refuses_other_digits(monkeypatch, text):
    from torchcts.testing.faulty.ordinals import DEFAULT_DEVICES, count

    monkeypatch.setenv("TORCHCTS_FAULTY_DEVICES", text)
    assert int(text) == 10 and count() == DEFAULT_DEVICES  # not 10 devices: the default, as for any bad value
    monkeypatch.setenv("TORCHCTS_FAULTY_DEVICES", "3")
    assert count() == 3


def test_an_infinite_item_timeout_is_refused_in_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["run", "--device", "cpu", "--item-timeout", "inf", "--results-dir",
                                      str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--item-timeout': 'inf' is not a number in ASCII digits" in result.output
