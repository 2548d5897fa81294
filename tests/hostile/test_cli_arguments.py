"""Hostile command-line arguments: every bad one exits 2 with a short message naming the option.

Issue 13, classes 5 and 8. A sweep over what a user can type (bad regexes, folders that cannot
be written, files that are folders or FIFOs, device strings, out-of-range numbers, pytest
arguments pytest rejects), through every command that takes the option; then the checks
themselves, unit by unit; then a `device_name` that contradicts `--device`, which is a warning
printed at the start of the run and recorded in run.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from torchcts.arguments import MAX_SEED, input_file_problem, output_file_problem, output_folder_problem
from torchcts.cli.main import cli
from torchcts.manifest import load_manifest
from torchcts.plan.build import Selection, SelectionError
from torchcts.plugin.launch import one_line_usage_error
from torchcts.run_setup.checks import checked_options
from torchcts.run_setup.device import check_device, device_name_warning
from torchcts.run_setup.errors import SessionError
from torchcts.run_setup.request import RunRequest
from torchcts.manifest.templates import render_template
from tests import warm_programs

# a run that got past its checks stays tiny: one op, one dtype, level 1, one example
CHEAP = ["--ops", "^add$", "--dtype", "float32", "--level", "1", "--max-examples", "1"]
RUN = ["run", "--manifest", "{tmp}/manifest.py", "--results-dir", "{tmp}/results", "--corpus-dir", "{tmp}/corpus", *CHEAP]
VALIDATION = [*RUN, "--validation"]
FUZZ = ["fuzz", "--manifest", "{tmp}/manifest.py", "--results-dir", "{tmp}/results", "--corpus-dir", "{tmp}/corpus",
        "--max-visits", "1", "--budget", "5s", *CHEAP[:6]]
INIT = ["init", "--template", "smoke", "--non-interactive"]

# (argv, a fragment the error must contain: the option's name, or the bad value)
ARGUMENT_ERRORS = [
    # --ops: compiled once, where the selection is made, in every command that takes it
    ([*VALIDATION, "--ops", "("], "--ops '('"),
    ([*VALIDATION, "--ops", ""], "--ops ''"),
    ([*VALIDATION, "--ops", "a{99999999999}"], "--ops"),
    ([*VALIDATION, "--ops", "(" * 3000], "--ops"),
    (["show-skips", "--manifest", "{tmp}/manifest.py", "--ops", "[z-a]"], "--ops '[z-a]'"),
    ([*FUZZ, "--device", "cpu", "--ops", "("], "--ops '('"),
    # output folders: creatable and writable before anything runs
    ([*VALIDATION, "--results-dir", "{tmp}/file/results"], "--results-dir"),
    ([*VALIDATION, "--results-dir", "{tmp}/file"], "--results-dir"),
    ([*VALIDATION, "--results-dir", "/proc/torchcts-results"], "--results-dir"),
    ([*VALIDATION, "--results-dir", ""], "--results-dir"),
    ([*VALIDATION, "--corpus-dir", "{tmp}/file/corpus"], "--corpus-dir"),
    ([*FUZZ, "--device", "cpu", "--corpus-dir", "/proc/torchcts-corpus"], "--corpus-dir"),
    ([*FUZZ, "--device", "cpu", "--results-dir", "{tmp}/file/r"], "--results-dir"),
    (["replay", "--device", "cpu", "--results-dir", "/proc/torchcts-results"], "--results-dir"),
    (["selftest", "--results-dir", "{tmp}/file/selftest"], "--results-dir"),
    (["report", "--output", "/proc/torchcts-report"], "--output"),
    ([*INIT, "--output", "/proc/torchcts/manifest.py"], "--output"),
    ([*INIT, "--output", "{tmp}/file/manifest.py"], "--output"),
    ([*INIT, "--output", "{tmp}/folder"], "--output"),
    ([*INIT, "--output", "/dev/null", "--force"], "--output"),
    ([*INIT, "--output", ""], "--output"),
    # input files: a folder, a FIFO or a device is refused before it is opened (a FIFO would block)
    ([*VALIDATION, "--manifest", "{tmp}/folder"], "--manifest"),
    ([*VALIDATION, "--manifest", "{tmp}/fifo"], "--manifest"),
    (["check-manifest", "--manifest", "/dev/zero"], "--manifest"),
    (["show-skips", "--manifest", "{tmp}/fifo"], "--manifest"),
    ([*VALIDATION, "--known-crashes", "{tmp}/folder"], "--known-crashes"),
    ([*VALIDATION, "--known-crashes", "{tmp}/fifo"], "--known-crashes"),
    (["replay", "--device", "cpu", "--manifest", "{tmp}/folder"], "--manifest"),
    (["replay", "--device", "cpu", "--export-script", "{tmp}/fifo"], "--export-script"),
    # devices
    ([*VALIDATION, "--device", "foo"], "--validation"),
    ([*RUN, "--device", ""], "--device"),
    ([*RUN, "--device", "cpu:abc"], "--device 'cpu:abc'"),
    ([*RUN, "--device", "faulty:-1"], "--device 'faulty:-1'"),
    ([*RUN, "--device", "cpu:1"], "--device 'cpu:1'"),
    ([*RUN, "--device", "cuda:99"], "--device 'cuda:99'"),
    ([*RUN, "--device", "xla"], "--device 'xla'"),
    ([*FUZZ, "--device", "foo"], "--device 'foo'"),
    ([*FUZZ, "--device", ""], "--device"),
    (["show-skips", "--manifest", "{tmp}/manifest.py", "--device", ""], "--device"),
    (["replay", "--device", ""], "--device"),
    # numbers: bounded where they are typed
    ([*VALIDATION, "--seed", "-1"], "--seed"),
    ([*VALIDATION, "--seed", str(2**70)], "--seed"),
    ([*FUZZ, "--device", "cpu", "--seed", str(2**70)], "--seed"),
    ([*VALIDATION, "--max-examples", str(10**12)], "--max-examples"),
    (["selftest", "--max-examples", str(10**12)], "--max-examples"),
    ([*VALIDATION, "--item-timeout", "nan"], "--item-timeout"),
    # selection words
    ([*VALIDATION, "--dtype", ""], "--dtype ''"),
    ([*VALIDATION, "--dtype", "float32,"], "--dtype ''"),
    ([*VALIDATION, "--property", ""], "--property ''"),
    (["show-skips", "--manifest", "{tmp}/manifest.py", "--dtype", "x" * 5000], "--dtype"),
    # the same options given to pytest after `--` (plain `pytest --pyargs torchcts.properties` users)
    ([*VALIDATION, "--", "--level", "0"], "--level"),
    ([*VALIDATION, "--", "--seed", "-5"], "--seed"),
    ([*VALIDATION, "--", "--max-examples", "0"], "--max-examples"),
    ([*VALIDATION, "--", "--results-dir", "{tmp}/file/r"], "--results-dir"),
    ([*VALIDATION, "--", "--corpus-dir", "/proc/torchcts-corpus"], "--corpus-dir"),
    # what pytest itself rejects: one line, not its usage text or a traceback
    ([*VALIDATION, "--", "--bogus-flag"], "--bogus-flag"),
    ([*VALIDATION, "--", "--level", "abc"], "--level"),
    ([*VALIDATION, "--", "-W", "error::Bogus"], "Bogus"),
    ([*VALIDATION, "--", "--junitxml", "/proc/torchcts/junit.xml"], "--junitxml"),
    ([*VALIDATION, "--", "--log-file", "{tmp}/file/log.txt"], "--log-file"),
]


@pytest.fixture
def hostile_dir(tmp_path, monkeypatch):
    """A folder with a valid manifest and the things in the way: a file, a folder, a FIFO."""
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="auto"))
    (tmp_path / "file").write_text("in the way\n")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    monkeypatch.chdir(tmp_path)  # pytest inside `torchcts run` finds no ini file of ours
    return tmp_path


def _argv(argv: list[str], tmp: Path) -> list[str]:
    return [arg.replace("{tmp}", str(tmp)) for arg in argv]


@pytest.mark.parametrize(("argv", "fragment"), ARGUMENT_ERRORS,
                         ids=[f"{a[0]}:{f}"[:60] for a, f in ARGUMENT_ERRORS])
def test_a_bad_argument_exits_2_with_a_short_message_naming_it(hostile_dir, argv, fragment):
    result = CliRunner().invoke(cli, _argv(argv, hostile_dir))
    output = result.output  # stdout and stderr
    assert isinstance(result.exception, SystemExit), f"{result.exception!r}\n{output}"  # not an uncaught exception
    assert result.exit_code == 2, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 3, result.stderr  # click's usage error: Usage, Try, Error
    assert all(len(line) <= 400 for line in lines), result.stderr
    assert fragment in result.stderr, result.stderr
    assert not (hostile_dir / "results").exists() and not (hostile_dir / "corpus").exists()  # nothing ran


def _torchcts(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize(("extra", "fragment"), [
    (["--ops", "("], "ERROR: --ops '(' is not a valid regular expression"),
    (["--", "--bogus-flag"], "ERROR: pytest arguments after --: unrecognized arguments: --bogus-flag"),
])
def test_a_real_process_prints_one_line(hostile_dir, extra, fragment):
    """What a terminal shows: pytest's own printing included, no INTERNALERROR on stdout either."""
    result = _torchcts(*_argv([*VALIDATION, *extra], hostile_dir), cwd=hostile_dir)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(fragment), result.stderr
    assert "INTERNALERROR" not in result.stdout and "Traceback" not in result.stdout + result.stderr


# -- the checks, unit by unit ------------------------------------------------------------------

def test_an_output_folder_check_leaves_the_disk_as_it_found_it(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    assert output_folder_problem(target) is None
    assert not (tmp_path / "a").exists()
    assert output_folder_problem(tmp_path / "x" / ".." / "y") is None and list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    assert output_folder_problem(tmp_path / "kept") is None and list((tmp_path / "kept").iterdir()) == []


@pytest.mark.parametrize(("path", "expected"), [
    ("{tmp}/file", "is a file, not a folder"),
    ("{tmp}/file/below", "is a file, not a folder"),
    ("/proc/torchcts-folder", "cannot create /proc/torchcts-folder"),
    ("/dev/null", "is not a folder"),
    ("{tmp}/" + "n" * 300, "cannot create"),
    ("{tmp}/loop/below", "not a folder"),
    ("", "empty"),
])
def test_an_output_folder_that_cannot_be_written_says_why(tmp_path, path, expected):
    (tmp_path / "file").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    problem = output_folder_problem(path.replace("{tmp}", str(tmp_path)))
    assert problem is not None and expected in problem


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_not_an_output_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert "cannot write into" in output_folder_problem(folder)
        assert "cannot create" in output_folder_problem(folder / "results")
    finally:
        folder.chmod(0o755)


def test_input_and_output_files(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "manifest.py").write_text("manifest = {}\n")
    assert "not a regular file" in input_file_problem(tmp_path / "fifo")
    assert "not a regular file" in input_file_problem("/dev/zero")
    assert "is a folder" in input_file_problem(tmp_path)
    assert input_file_problem(tmp_path / "manifest.py") is None
    assert input_file_problem(tmp_path / "missing.py") is None  # the reader says "no such file"
    assert output_file_problem("/dev/null") is None  # written through: pytest's --junitxml /dev/null is fine
    assert "not a regular file" in output_file_problem("/dev/null", replaced=True)  # never renamed over
    assert "is a folder" in output_file_problem(tmp_path)


def test_a_selection_compiles_its_regexes_once_and_checks_its_level():
    selection = Selection(op_patterns=["^add$", "mul"])
    assert selection.op_patterns == ("^add$", "mul")
    assert selection.op_selected("add") and selection.op_selected("nn.functional.mul") and not selection.op_selected("sub")
    assert selection == Selection(op_patterns=("^add$", "mul"))
    for bad, fragment in [("(", "--ops '('"), ("", "--ops ''"), ("x{99999999999}", "too large"),
                          ("(" * 3000, "...'")]:
        with pytest.raises(SelectionError, match="--ops") as info:
            Selection(op_patterns=("^add$", bad))
        assert fragment in str(info.value) and len(str(info.value)) < 200
    for level in (0, 9, -1, True):
        with pytest.raises(SelectionError, match="--level must be an integer from 1 to 8"):
            Selection(level=level)


def _options(tmp_path, **given):
    """The run-setup input of a session with these pytest options (the rest at their defaults)."""
    return RunRequest(**{"results_dir": str(tmp_path / "results"), "corpus_dir": str(tmp_path / "corpus"), **given})


@pytest.mark.parametrize(("given", "fragment"), [
    ({"seed": -1}, "--seed"), ({"seed": MAX_SEED + 1}, "--seed"), ({"max_examples": 0}, "--max-examples"),
    ({"max_examples": 10**12}, "--max-examples"), ({"item_timeout": float("nan")}, "--item-timeout"),
    ({"item_timeout": 0.5}, "--item-timeout"), ({"level": 0}, "--level"), ({"ops": ["("]}, "--ops"),
    ({"dtypes": ["float32", "bogus"]}, "--dtype 'bogus'"), ({"properties": ["forwards"]}, "--property 'forwards'"),
    ({"results_dir": "/proc/torchcts"}, "--results-dir"), ({"corpus_dir": "{tmp}/file"}, "--corpus-dir"),
    ({"known_crashes": "{tmp}"}, "--known-crashes"), ({"shard": "4/3"}, "--shard '4/3' is not K/N"),
])
def test_session_options_are_checked_before_anything_loads(tmp_path, given, fragment):
    """`python -m pytest --pyargs torchcts.properties` takes the same options: the session checks them too."""
    (tmp_path / "file").write_text("x")
    given = {k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v for k, v in given.items()}
    with pytest.raises(SessionError) as info:
        checked_options(_options(tmp_path, **given))
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert [p.name for p in tmp_path.iterdir()] == ["file"]  # no folder made


def test_a_replay_does_not_need_a_writable_corpus_dir(tmp_path):
    selection, seed, examples = checked_options(_options(tmp_path, replay=["cases"], corpus_dir="/proc/x", seed=7))
    assert seed == 7 and examples is None and selection == Selection()


@pytest.mark.parametrize(("device", "fragment"), [
    ("cpu:abc", "is not a device string torch knows"),
    ("faulty:-1", "is not a device string torch knows"),
    ("cpu:1", "cpu has no device 1"),
    ("meta:5", "meta has no device 5"),
    ("xla", "is not available in this Python environment"),
])
def test_a_device_is_checked_index_included(device, fragment):
    with pytest.raises(SessionError) as info:
        check_device(device)
    assert fragment in str(info.value) and "\n" not in str(info.value) and len(str(info.value)) < 400
    check_device("cpu")
    check_device("cpu:0")


def test_pytest_usage_errors_become_one_line():
    usage = ("usage: pytest.main() [options] [file_or_dir] [file_or_dir] [...]\n"
             "pytest.main(): error: unrecognized arguments: --bogus-flag\n  inifile: None\n  rootdir: /tmp")
    assert one_line_usage_error(usage) == "unrecognized arguments: --bogus-flag"
    assert one_line_usage_error("file or directory not found: x") == "file or directory not found: x"
    traceback = "while parsing:\n\n  error::Bogus\n\nTraceback (most recent call last):\n  File ...\nAttributeError: Bogus"
    assert one_line_usage_error(traceback) == "while parsing: AttributeError: Bogus"


# -- class 8: device_name against --device -----------------------------------------------------

@pytest.mark.parametrize(("device_name", "device", "validation", "warns"), [
    ("cuda", "cpu", False, True),
    ("cuda:1", "cuda:0", False, False),  # types are compared, not indices
    ("cuda", "meta", False, True),
    ("auto", "meta", False, False),
    ("cuda", "cpu", True, False),  # --validation runs CPU against itself whatever the manifest says
    ("privateuseone", "faulty", False, False),  # PrivateUse1 under the name its backend registered
    ("faulty", "privateuseone", False, False),
    ("faulty", "cpu", False, True),
    ("npu", "cpu", False, True),  # an out-of-tree name torch does not know here
])
def test_a_device_name_that_contradicts_device_warns(tmp_path, device_name, device, validation, warns):
    from torchcts.testing import faulty  # noqa: F401 - importing it registers the test device (PrivateUse1)

    assert torch._C._get_privateuse1_backend_name() == "faulty"  # the test device is registered with torch
    path = tmp_path / "manifest.py"
    path.write_text(render_template("smoke", device_name=device_name))
    manifest, _ = load_manifest(path)
    warning = device_name_warning(manifest, device, validation)
    assert (warning is not None) == warns
    if warns:
        assert f"device_name is {device_name!r}" in warning and f"--device {device}" in warning
    assert device_name_warning(None, device, validation) is None  # a replay without a manifest


@pytest.mark.slow
def test_a_run_on_another_device_warns_first_and_records_it(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="cuda"))
    result = _torchcts(*_argv([*RUN, "--device", "cpu", "--derandomize"], tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    first = result.stderr.splitlines()[0]
    assert first.startswith("torchcts: warning: ") and "device_name is 'cuda'" in first and "--device cpu" in first
    summary = json.loads(next((tmp_path / "results").glob("*/run.json")).read_text())
    assert summary["status"] == "complete"
    assert len(summary["environment"]["warnings"]) == 1
    assert "device_name is 'cuda' but this run tests --device cpu" in summary["environment"]["warnings"][0]
