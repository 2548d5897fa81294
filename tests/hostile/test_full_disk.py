"""A full or failing disk is one line, exit 2, and nothing already written is lost.

Each command runs in a child process whose files may not grow past a size (RLIMIT_FSIZE, SIGXFSZ
ignored): a write past it fails with EFBIG "File too large", as a full disk fails with ENOSPC.
Standard output pointed at /dev/full fails with ENOSPC. Where this machine lets us mount a small
tmpfs (root in a container), a corpus on a really full file system is tried too (a run storing a
case, `replay --update-status` rewriting one); elsewhere those two are skipped. Every case asserts
the one line naming the file, exit 2, no traceback, and that what was written before still reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import traceback
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.disk import WriteError
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import EXECUTED
from torchcts.results.files import read_records, read_summary

from tests.shared_runs import shared_folder
from tests import warm_programs

TOO_LARGE = "File too large"
NO_SPACE = "No space left on device"
SAFETY_NET_S = 600
# a derandomized run of one OpInfo item: 26,000-odd accounting records, then the item's
RUN = ["run", "--validation", "--derandomize", "--ops", "^add$", "--dtype", "float32", "--level", "1",
       "--max-examples", "2"]
EXECUTED_VALUES = {str(outcome) for outcome in EXECUTED}
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE and /dev/full")

LIMITED = """
import os, resource, signal, sys
limit = int(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


def limited(cwd: Path, limit: int | None, *args: str, module: str = "torchcts",
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m <module> args` in `cwd` whose files may not grow past `limit` bytes (None: no limit)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    command = [sys.executable, "-m", module, *args]
    if limit is not None:
        command = [sys.executable, "-c", LIMITED, str(limit), *command[1:]]
    return warm_programs.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=SAFETY_NET_S)


def the_line(result: subprocess.CompletedProcess, file: str | Path, reason: str = TOO_LARGE, *,
             exit_code: int = 2) -> str:
    """The one line about the file that could not be written (`file`: a path, or a regex of one), after
    checking the exit status and that nothing else went wrong loudly."""
    output = result.stdout + result.stderr
    assert result.returncode == exit_code, output[-3000:]
    assert "Traceback" not in output and "INTERNALERROR" not in output, output[-3000:]
    lines = [line for line in output.splitlines() if "cannot be written" in line]
    assert len(lines) == 1, output[-3000:]
    pattern = file if isinstance(file, re.Pattern) else re.compile(re.escape(str(file)))
    assert re.search(f"(^|: |ERROR: )({pattern.pattern}): cannot be written: {re.escape(reason)}$", lines[0]), lines
    return lines[0]


def run_folder(results: Path) -> Path:
    [folder] = [path for path in results.iterdir() if path.is_dir()]
    return folder


def first_executed_offset(records: Path) -> int:
    """Bytes of records.jsonl before the first executed item's record (the accounting records)."""
    offset = 0
    with open(records, "rb") as lines:
        for line in lines:
            if json.loads(line)["outcome"] in EXECUTED_VALUES:
                return offset
            offset += len(line)
    raise AssertionError(f"{records}: no executed record")


def report_on(folder: Path | str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`torchcts report --from FOLDER --baseline none` in this process (the command's own code, no program start:
    the run under test was the program; this only reads what it left), from `cwd` (the run's project folder)."""
    args = ["report", "--from", str(folder), "--baseline", "none"]
    with contextlib.chdir(cwd or Path(folder).parent.parent):
        done = CliRunner().invoke(cli, args)
    error = "" if done.exception is None or isinstance(done.exception, SystemExit) else \
        "".join(traceback.format_exception(done.exception))
    return subprocess.CompletedProcess(["torchcts", *args], done.exit_code, done.output, done.output + error)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "manifest.py").write_text(render_template("minimal", device_name="cpu"))
    return tmp_path


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict:
    """One unlimited run: its run folder, and where the executed records begin in records.jsonl. Built once per
    test session (shared by the xdist workers); readers copy it before writing."""
    def build(cwd: Path) -> None:
        (cwd / "manifest.py").write_text(render_template("minimal", device_name="cpu"))
        result = limited(cwd, None, *RUN, "--results-dir", "R", "--shard", "1/1")
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    folder = run_folder(shared_folder(tmp_path_factory, "full-disk-measured", build) / "R")
    return {"folder": folder, "accounting": first_executed_offset(folder / "records.jsonl"),
            "run_json": (folder / "run.json").stat().st_size}


# -- the run folder --------------------------------------------------------------------------------

@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("runner", ["torchcts", "pytest"])
def test_a_run_whose_first_run_json_cannot_be_written_is_one_line_and_leaves_no_folder(project, runner):
    if runner == "torchcts":
        result = limited(project, 100, *RUN, "--results-dir", "R")
        exit_code = 2
    else:  # the plugin under plain pytest: pytest's usage-error status, the same one line
        result = limited(project, 100, "--pyargs", "torchcts.properties", "-p", "no:cacheprovider", "--validation",
                         "--ops", "^add$", "--dtype", "float32", "--level", "1", "--max-examples", "2",
                         "--results-dir", "R", module="pytest")
        exit_code = 4
    the_line(result, re.compile(r"R/[0-9TZ]+-[0-9a-f]+/run\.json"), exit_code=exit_code)
    assert list((project / "R").iterdir()) == []  # the empty run folder was removed again


@pytest.mark.slow
@linux_only
def test_a_run_stopped_in_its_accounting_records_keeps_whole_lines_and_reads_as_partial(project):
    result = limited(project, 3_000_000, *RUN, "--results-dir", "R")
    folder = run_folder(project / "R")
    the_line(result, Path("R") / folder.name / "records.jsonl")
    size = (folder / "records.jsonl").stat().st_size
    assert 0 < size <= 3_000_000 and (folder / "records.jsonl").read_bytes().endswith(b"\n")  # cut back to whole lines
    records = read_records(folder)
    assert len(records) == (folder / "records.jsonl").read_bytes().count(b"\n")
    assert read_summary(folder)["status"] == "partial"
    report = report_on(folder)
    assert report.returncode == 0 and (folder / "report" / "scorecard.md").is_file(), report.stderr


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("workers", [None, "2"])
def test_a_run_stopped_at_an_executed_record_keeps_what_it_wrote_and_its_report_works(project, measured, workers):
    limit = measured["accounting"] + 40  # the accounting fits; the first executed record does not
    assert limit > measured["run_json"]
    xdist = ["-n", workers] if workers else []  # pytest-xdist: a worker hits it, its controller ends the run
    result = limited(project, limit, *RUN, "--results-dir", "R", "--shard", "1/1", *xdist)
    folder = run_folder(project / "R")
    the_line(result, Path("R") / folder.name / "records.jsonl")
    assert "report not written" in result.stdout and result.stdout.rstrip().splitlines()[-1].startswith("R/")
    assert (folder / "records.jsonl").stat().st_size == measured["accounting"]  # the torn record was cut back
    records = read_records(folder)
    assert records and not [r for r in records if r["outcome"] in EXECUTED_VALUES]
    summary = read_summary(folder)
    assert summary["status"] == "partial" and sum(summary["counts"].values()) == len(records)
    report = report_on(folder)
    assert report.returncode == 0, report.stderr
    assert "partial" in (folder / "report" / "scorecard.md").read_text().lower()


# -- the corpus ------------------------------------------------------------------------------------

@pytest.mark.slow
@linux_only
def test_a_case_file_that_cannot_be_written_is_one_line_and_the_cases_before_it_stay(tmp_path):
    kept = tmp_path / "cases" / "0123456789abcdef01234567.json"  # a case written earlier (never read here)
    kept.parent.mkdir()
    kept.write_text('{"an earlier case": true}\n')
    before = kept.read_bytes()
    result = limited(tmp_path, 100, "coverage", "materialize", "--ops", r"^aten\.__rshift__\.Scalar$",
                     "--per-overload", "1", "--output", "cases")
    the_line(result, re.compile(r"cases/[0-9a-f]+\.json"))
    assert [p.name for p in (tmp_path / "cases").iterdir()] == [kept.name] and kept.read_bytes() == before


def fill(folder: Path) -> None:
    """Write zeros into `folder` until its file system has no room left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while os.write(fd, b"\0" * 65536):
            pass
    except OSError:  # ENOSPC: full
        pass
    finally:
        os.close(fd)


@pytest.fixture
def small_filesystem(tmp_path: Path):
    """A 1 MiB tmpfs, where this machine allows mounting one (root in a container); `fill` fills it."""
    mount = shutil.which("mount")
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a tmpfs needs root on Linux")
    folder = tmp_path / "small"
    folder.mkdir()
    done = warm_programs.run([mount, "-t", "tmpfs", "-o", "size=1m", f"torchcts-test-{uuid.uuid4().hex[:8]}",
                           str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        warm_programs.run(["umount", str(folder)], capture_output=True)


MISSING_TRUNC = ["--device", "faulty", "--manifest", "manifest.py", "--derandomize", "--ops", "^trunc$", "--dtype",
                 "float32", "--level", "1", "--max-examples", "2"]  # with the bug: one item, its case stored
TRUNC_CASE = "missing-kernel-faulty-PrivateUse1-aten.trunc.json"


@pytest.mark.slow
def test_a_run_whose_corpus_is_on_a_full_disk_keeps_the_failing_record_and_stops(project, small_filesystem):
    fill(small_filesystem)
    corpus = small_filesystem / "corpus"
    result = limited(project, None, "run", *MISSING_TRUNC, "--results-dir", "R", "--corpus-dir", str(corpus),
                     env={"TORCHCTS_FAULTY_BUGS": "missing_kernel"})
    the_line(result, corpus / TRUNC_CASE, NO_SPACE)
    folder = run_folder(project / "R")
    [found] = [r for r in read_records(folder) if r["outcome"] in EXECUTED_VALUES]
    assert found["outcome"] == "error" and found["error_kind"] == "missing_kernel"  # the finding is kept
    assert found["counterexample"] is None and found["counterexample_unwritable"]["reason"] == NO_SPACE
    assert "could not be stored" in found["counterexample_error"]
    assert read_summary(folder)["status"] == "partial"
    assert report_on(folder).returncode == 0
    assert not corpus.exists() or list(corpus.iterdir()) == []  # no half case file, no temporary one


@pytest.mark.slow
def test_replay_update_status_on_a_full_disk_leaves_the_case_file_as_it_was(project, small_filesystem):
    found = limited(project, None, "run", *MISSING_TRUNC, "--results-dir", "R", "--corpus-dir", "C", "--no-report",
                    env={"TORCHCTS_FAULTY_BUGS": "missing_kernel"})
    assert found.returncode == 1, found.stdout[-3000:] + found.stderr[-3000:]
    case = small_filesystem / TRUNC_CASE
    shutil.copy(project / "C" / TRUNC_CASE, case)
    fill(small_filesystem)
    before = case.read_bytes()
    result = limited(project, None, "replay", str(case), "--device", "faulty", "--update-status", "--results-dir", "R2")
    assert "now passing" in result.stdout  # the bug is off: the open case would become fixed
    the_line(result, case, NO_SPACE)
    assert case.read_bytes() == before and sorted(p.name for p in small_filesystem.iterdir()) == ["filler", TRUNC_CASE]


# -- the report, merged shards, coverage artifacts, probes -----------------------------------------

@pytest.mark.slow
@linux_only
def test_a_report_that_cannot_be_written_leaves_the_earlier_report_whole(measured, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(measured["folder"], folder, ignore=shutil.ignore_patterns("report"))
    assert report_on("run", tmp_path).returncode == 0
    before = {p.name: p.read_bytes() for p in (folder / "report").iterdir()}
    result = limited(tmp_path, 2000, "report", "--from", "run", "--baseline", "none")
    line = the_line(result, re.compile(r"run/report/[a-z]+\.(md|html|xml|json)"))
    assert line.startswith("run/report/")  # the command's own line, no prefix
    assert {p.name: p.read_bytes() for p in (folder / "report").iterdir()} == before  # no half file, no temporary


@pytest.mark.slow
@linux_only
def test_a_report_printed_onto_a_full_disk_is_one_line(measured, tmp_path):
    with open("/dev/full", "w") as full:
        result = warm_programs.run([sys.executable, "-m", "torchcts", "report", "--from", str(measured["folder"]),
                                 "--baseline", "none", "--output", str(tmp_path / "printed")],
                                stdout=full, stderr=subprocess.PIPE, text=True, timeout=SAFETY_NET_S)
    result.stdout = ""
    assert the_line(result, "standard output", NO_SPACE) == f"standard output: cannot be written: {NO_SPACE}"


@pytest.mark.slow
@linux_only
def test_output_onto_a_file_at_its_size_limit_is_one_line_about_standard_output(project):
    with open(project / "printed.txt", "w") as printed:  # `torchcts check-manifest > printed.txt`
        result = warm_programs.run([sys.executable, "-c", LIMITED, "300", "-m", "torchcts", "check-manifest",
                                 "--manifest", "manifest.py"], cwd=project, stdout=printed, stderr=subprocess.PIPE,
                                text=True, timeout=SAFETY_NET_S)
    assert (project / "printed.txt").stat().st_size == 300  # what fitted is kept
    result.stdout = ""
    assert the_line(result, "standard output") == f"standard output: cannot be written: {TOO_LARGE}"


@pytest.mark.slow
def test_a_failed_write_of_some_other_file_is_not_blamed_on_a_healthy_standard_output():
    script = ("import errno; from torchcts.disk import output_failure; "
              "print(output_failure(OSError(errno.EFBIG, 'File too large')))")  # a close() flushing a file names none
    done = warm_programs.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert done.stdout == "None\n", done.stderr


@pytest.mark.slow
@linux_only
def test_selftest_whose_manifest_cannot_be_written_is_one_line_naming_it_and_leaves_no_half_file(tmp_path):
    result = limited(tmp_path, 100, "selftest", "--results-dir", "st", "--max-examples", "2")
    the_line(result, Path("st") / "manifest.py")
    assert list((tmp_path / "st").iterdir()) == []  # no manifest cut at 100 bytes, no temporary


def test_files_written_together_are_all_new_or_all_as_they_were(tmp_path):
    from torchcts.disk import write_together

    first, second = tmp_path / "triage.md", tmp_path / "triage.json"
    first.write_text("old md")
    (tmp_path / f".triage.json.{os.getpid()}.tmp").mkdir()  # where triage.json is written first: the write fails
    with pytest.raises(WriteError) as raised:
        write_together({first: "new md", second: "{}"})
    assert str(raised.value).startswith(f"{second}: cannot be written")
    assert first.read_text() == "old md" and not second.exists()  # no new .md beside no .json
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".triage.json.{os.getpid()}.tmp", "triage.md"]
    (tmp_path / f".triage.json.{os.getpid()}.tmp").rmdir()
    assert write_together({first: "new md", second: "{}"}) == [first, second]
    assert (first.read_text(), second.read_text()) == ("new md", "{}")


def test_a_rewritten_file_keeps_its_mode_and_a_symbolic_link_stays_one(tmp_path):
    from torchcts.disk import write_atomic

    target = tmp_path / "real.md"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(target.name)
    write_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.md", "real.md"]


@pytest.mark.slow
def test_lines_appended_by_several_processes_at_once_stay_whole(tmp_path):
    records = tmp_path / "records.jsonl"
    script = ("import os, sys; from torchcts import disk\n"
              "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)\n"
              "for i in range(300): disk.append(fd, (sys.argv[2] * (1000 + i) + '\\n').encode(), sys.argv[1])\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, str(records), letter]) for letter in "abcd"]
    assert [w.wait(timeout=SAFETY_NET_S) for w in writers] == [0, 0, 0, 0]
    lines = records.read_text().splitlines()
    assert len(lines) == 1200 and all(len(set(line)) == 1 for line in lines)


@pytest.mark.slow
@linux_only
def test_merged_shards_that_cannot_be_written_leave_no_half_folder_and_the_shard_as_it_was(measured, tmp_path):
    shard = measured["folder"]
    before = (shard / "records.jsonl").stat().st_size, (shard / "run.json").read_bytes()
    result = limited(tmp_path, 1_000_000, "report", "--merge", str(shard), "--output", "merged")
    the_line(result, Path("merged") / "records.jsonl")
    assert not (tmp_path / "merged").exists()
    assert ((shard / "records.jsonl").stat().st_size, (shard / "run.json").read_bytes()) == before
    assert read_summary(shard)["status"] == "complete"


@pytest.mark.slow
@linux_only
def test_coverage_artifacts_that_cannot_be_written_keep_the_old_ones(tmp_path, monkeypatch):
    from torchcts.coverage import audit
    from torchcts.coverage.exclusions import load_exclusions
    from torchcts.coverage.inventory import inventory_metadata, load_inventory

    sources = audit.Sources((), (), {"aten.abs.default": "generated"}, load_exclusions(tmp_path))
    data = audit.build_audit(load_inventory(), sources, audit.metadata(inventory_metadata(), tmp_path, None, None))
    folder = tmp_path / "coverage"
    folder.mkdir()
    (folder / "audit.json").write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(cli, ["coverage", "report", "--audit", "coverage/audit.json"]).exit_code == 0
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    result = limited(tmp_path, 1000, "coverage", "report", "--audit", "coverage/audit.json")
    the_line(result, Path("coverage") / "summary.md")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


@pytest.mark.slow
@linux_only
def test_probes_that_cannot_write_their_results_are_one_line_and_no_probe_is_blamed(project):
    result = limited(project, 100, "init", "--probe", "--device", "cpu", "--ops", "^add$", "--output", "drafted.py")
    the_line(result, re.compile(r".*/torchcts-probes-[^/]+/(results\.jsonl|step)"))
    assert "failed" not in result.stdout + result.stderr and not (project / "drafted.py").exists()


@pytest.mark.slow
@linux_only
def test_a_probed_draft_that_cannot_be_written_leaves_the_old_manifest(project):
    before = (project / "manifest.py").read_bytes()
    result = limited(project, 6000, "init", "--probe", "--device", "cpu", "--ops", "^add$",  # the draft: 8 KB
                     "--output", "manifest.py", "--force")
    the_line(result, "manifest.py")
    assert (project / "manifest.py").read_bytes() == before
    assert [p.name for p in project.iterdir()] == ["manifest.py"]  # no temporary file left beside it


def test_a_run_json_that_cannot_be_finished_reads_as_partial_and_blames_no_item(tmp_path):
    from torchcts.crashes.history import crash_evidence
    from torchcts.results.writer import RunWriter

    environment = {"hardware_key": "cpu:test", "device": "cpu", "torch": "2.13.0"}
    writer = RunWriter(tmp_path, environment)
    writer.mark_started("forward::add::function::float32")
    writer.record({"item": "forward::abs::function::float32", "property": "forward", "op": "abs", "dtype": "float32",
                   "level": 1, "outcome": "passed"})
    (writer.folder / f".run.json.{os.getpid()}.tmp").mkdir()  # where run.json is written first: the write fails
    with pytest.raises(WriteError) as raised:
        writer.close("complete")
    assert str(raised.value) == f"{writer.folder / 'run.json'}: cannot be written: Is a directory"
    assert read_summary(writer.folder)["status"] == "running"  # its last whole version: the report reads it partial
    assert [r["outcome"] for r in read_records(writer.folder)] == ["passed"]
    assert (writer.folder / "started.jsonl").read_bytes() == b""  # the item that was starting is no crash evidence
    assert crash_evidence(tmp_path, environment, warn=lambda _: None) == {}
