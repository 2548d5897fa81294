"""Manifests and backend modules that end, hang or change their process, and values that break validation.

A manifest runs in a child process (torchcts.manifest.child) and comes back as plain data
(torchcts.manifest.plain): whatever it does, `check-manifest` and `run` exit 2 with one error line
naming the file, and the calling process is left as it was. A `backend_import` module is imported
in a child first, so one that exits is an error naming it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.manifest import ManifestError, load_manifest, read_manifest_dict, validate
from torchcts.manifest.child import run_in_child
from torchcts.manifest.load import run_manifest_file
from torchcts.manifest.plain import MAX_DEPTH, Opaque, from_json, to_json, to_plain
from torchcts.manifest.problems import safe_repr
from tests import warm_programs

VALID = ('manifest = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True}, '
         '"capabilities": {"inference": True}}\n')
RUN_ARGS = ["--device", "cpu", "--ops", "^add$", "--dtype", "float32", "--level", "1", "--max-examples", "1"]

# (id, manifest source, text the one error line must hold)
ENDING_MANIFESTS = [
    ("os-exit-0", "import os\nos._exit(0)\n", "(exited with status 0)"),
    ("os-exit-3", "import os\nos._exit(3)\n", "(exited with status 3)"),
    ("os-exit-after-defining", VALID + "import os\nos._exit(0)\n", "(exited with status 0)"),
    ("sys-exit-0", "import sys\nsys.exit(0)\n", "line 2: the manifest raised SystemExit: 0"),
    ("raise-system-exit", "raise SystemExit\n", "line 1: the manifest raised SystemExit"),
    ("sigterm-itself", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", "(was killed by SIGTERM)"),
    ("sigkill-itself", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "(was killed by SIGKILL)"),
    ("abort", "import os\nos.abort()\n", "(was killed by SIGABRT)"),
    ("keyboard-interrupt", "raise KeyboardInterrupt\n", "line 1: the manifest raised KeyboardInterrupt"),
]


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def check(path: Path):
    return CliRunner().invoke(cli, ["check-manifest", "--manifest", str(path)])


def run(path: Path, tmp_path: Path):
    return CliRunner().invoke(cli, ["run", "--manifest", str(path), "--results-dir", str(tmp_path / "results"),
                                    *RUN_ARGS])


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip().startswith("error:")]


def assert_one_error(result, path: Path, text: str) -> None:
    assert result.exit_code == 2, result.output
    assert str(path) in result.stderr
    errors = error_lines(result.stderr)
    assert len(errors) == 1, result.stderr
    assert text in errors[0], errors[0]
    assert "Traceback" not in result.output + result.stderr
    assert "valid manifest" not in result.stdout


# -- manifests that end their process ------------------------------------------------------------


@pytest.mark.parametrize("source, text", [c[1:] for c in ENDING_MANIFESTS], ids=[c[0] for c in ENDING_MANIFESTS])
def test_check_manifest_reports_a_manifest_that_ends_its_process(tmp_path, source, text):
    path = write(tmp_path, "manifest.py", source)
    assert_one_error(check(path), path, text)


RUN_CASES = ENDING_MANIFESTS[:6]  # os._exit(0) (before and after `manifest`), os._exit(3), sys.exit, SystemExit, SIGTERM


@pytest.mark.parametrize("source, text", [c[1:] for c in RUN_CASES], ids=[c[0] for c in RUN_CASES])
def test_run_reports_a_manifest_that_ends_its_process_and_runs_nothing(tmp_path, source, text):
    path = write(tmp_path, "manifest.py", source)
    assert_one_error(run(path, tmp_path), path, text)
    assert not list(tmp_path.glob("results/*/run.json"))


@pytest.mark.slow
def test_a_real_torchcts_process_exits_2_on_os_exit_0(tmp_path):
    """Not CliRunner: the exit status CI reads, from `python -m torchcts run`."""
    path = write(tmp_path, "manifest.py", "import os\nos._exit(0)\n")
    result = warm_programs.run([sys.executable, "-m", "torchcts", "run", "--manifest", str(path), *RUN_ARGS],
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(error_lines(result.stderr)) == 1 and "(exited with status 0)" in result.stderr
    assert not (tmp_path / "results").exists()


def test_a_manifest_that_never_finishes_times_out(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHCTS_LOAD_TIMEOUT", "1")
    path = write(tmp_path, "manifest.py", "while True:\n    pass\n")
    assert_one_error(check(path), path, "did not finish within 1 s")


def test_a_bad_load_timeout_setting_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHCTS_LOAD_TIMEOUT", "soon")
    path = write(tmp_path, "manifest.py", VALID)
    assert_one_error(check(path), path, "TORCHCTS_LOAD_TIMEOUT must be a positive number of seconds")


# -- manifests that change their process -----------------------------------------------------------


def test_a_manifest_cannot_change_the_process_that_loads_it(tmp_path):
    """cwd, environment, sys.path, sys.modules and signal handlers stay; stdout stays the command's."""
    write(tmp_path, "sibling_helper_xyz.py", "VALUE = 1\n")
    path = write(tmp_path, "manifest.py", textwrap.dedent("""\
        import os, signal, sys
        import sibling_helper_xyz
        os.chdir("/")
        os.environ["TORCHCTS_TEST_LEAK"] = "1"
        sys.path.append("/leaked")
        sys.setrecursionlimit(100_000)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("printed by the manifest")
    """) + VALID)
    before = (os.getcwd(), dict(os.environ), list(sys.path), sys.getrecursionlimit(),
              signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))
    manifest, _ = load_manifest(path)
    assert manifest.device_name == "cpu"
    assert (os.getcwd(), dict(os.environ), list(sys.path), sys.getrecursionlimit(),
            signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    assert "sibling_helper_xyz" not in sys.modules
    result = check(path)
    assert result.exit_code == 0
    assert "printed by the manifest" in result.stderr  # shown, but on stderr
    assert "printed by the manifest" not in result.stdout


def test_processes_a_manifest_starts_are_ended_with_it(tmp_path):
    pid_file = tmp_path / "sleeper.pid"
    path = write(tmp_path, "manifest.py", textwrap.dedent(f"""\
        import os, time
        sleeper = os.fork()
        if sleeper == 0:
            time.sleep(600)
            os._exit(0)
        with open({str(pid_file)!r}, "w") as f:
            f.write(str(sleeper))
        os.fork()  # both copies run the rest of the manifest; only the first may answer
    """) + VALID)
    manifest, _ = load_manifest(path)
    assert manifest.device_name == "cpu"
    assert_gone(int(pid_file.read_text()))


def test_ctrl_c_while_a_manifest_runs_ends_the_manifest_too(tmp_path):
    pid_file = tmp_path / "child.pid"
    path = write(tmp_path, "manifest.py", f"""\
        import os
        open({str(pid_file)!r}, "w").write(str(os.getpid()))
        while True:
            pass
    """)

    def interrupt():
        deadline = time.monotonic() + 600
        while not pid_file.exists() or not pid_file.read_text():
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        read_manifest_dict(path)
    assert_gone(int(pid_file.read_text()))


def assert_gone(pid: int, wait_s: float = 120.0) -> None:
    """The process has ended (a zombie waiting for a reaper that is not ours counts as ended)."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to see whether a process has ended")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.05)
    pytest.fail(f"process {pid} is still running")


# -- backend modules that end their process --------------------------------------------------------

ENDING_BACKENDS = [
    ("sys-exit-0", "import sys\nsys.exit(0)\n", "failed: SystemExit: 0"),
    ("os-exit-0", "import os\nos._exit(0)\n", "importing it ended the process running it (exited with status 0)"),
    ("keyboard-interrupt", "raise KeyboardInterrupt\n", "failed: KeyboardInterrupt"),
    ("sigterm-itself", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", "(was killed by SIGTERM)"),
]


@pytest.mark.parametrize("source, text", [c[1:] for c in ENDING_BACKENDS], ids=[c[0] for c in ENDING_BACKENDS])
def test_run_reports_a_backend_module_that_ends_its_process(tmp_path, monkeypatch, source, text):
    module = f"ending_backend_{abs(hash(source)) % 10**8}"
    write(tmp_path, f"{module}.py", source)
    path = write(tmp_path, "manifest.py", VALID + f"manifest['backend_import'] = {module!r}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run(path, tmp_path)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if "backend_import" in line]
    assert len(lines) == 1 and f"backend_import {module!r} failed" in lines[0] and text in lines[0], result.stderr
    assert str(path) in lines[0]
    assert "Traceback" not in result.output + result.stderr and "INTERNALERROR" not in result.output
    assert module not in sys.modules
    assert not list(tmp_path.glob("results/*/run.json"))


@pytest.mark.slow
def test_a_real_torchcts_process_exits_2_when_the_backend_module_calls_os_exit(tmp_path):
    write(tmp_path, "exiting_backend.py", "import os\nos._exit(0)\n")
    path = write(tmp_path, "manifest.py", VALID + "manifest['backend_import'] = 'exiting_backend'\n")
    result = warm_programs.run([sys.executable, "-m", "torchcts", "run", "--manifest", str(path), *RUN_ARGS],
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)  # cwd: the module is found
    assert result.returncode == 2, result.stdout + result.stderr
    assert "backend_import 'exiting_backend' failed: importing it ended the process" in result.stderr
    assert "Traceback" not in result.stderr


# -- values that break validation ------------------------------------------------------------------

BASE = '''\
import torch
BASE = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
        "capabilities": {"inference": True}}
class Raising:
    def __repr__(self): raise RuntimeError("repr")
    def __eq__(self, other): raise RuntimeError("eq")
    def __hash__(self): raise RuntimeError("hash")
class ItemsRaise(dict):
    def items(self): raise RuntimeError("items")
class IterRaises(list):
    def __iter__(self): raise RuntimeError("iter")
'''

# (id, manifest body using BASE, key path of the one error, text it must hold)
BAD_VALUES = [
    ("tolerance-10**400", 'manifest = dict(BASE, tolerance_overrides={"float32": {"atol": 10**400}})',
     "tolerance_overrides.float32.atol", "must be a finite number (got <int of about 401 digits>)"),
    ("level-10**5000", "manifest = dict(BASE, semantic_level=10**5000)", "semantic_level",
     "<int of about 5001 digits>"),
    ("device-count-2**64", "manifest = dict(BASE, device_count=2**64)", "device_count", "at most 2**63-1"),
    ("seed-10**5000", 'manifest = dict(BASE, hypothesis={"seed": 10**5000})', "hypothesis.seed", "at most 2**63-1"),
    ("deadline-1e300", 'manifest = dict(BASE, hypothesis={"deadline": 1e300})', "hypothesis.deadline", "one day"),
    ("dtype-key-10**5000", 'manifest = dict(BASE, supported_dtypes={10**5000: True})',
     "supported_dtypes[<int of about 5001 digits>]", "unsupported dtype"),
    ("items-raises", 'manifest = dict(BASE, supported_dtypes=ItemsRaise(float32=True))', "supported_dtypes",
     "cannot be read: items() raised RuntimeError: items"),
    ("manifest-items-raises", 'manifest = ItemsRaise(BASE)', "manifest", "cannot be read: items() raised"),
    ("iter-raises", 'manifest = dict(BASE, skip_ops=IterRaises(["add"]))', "skip_ops",
     "cannot be read: iterating it raised RuntimeError: iter"),
    ("repr-eq-hash-raise", 'manifest = dict(BASE, capabilities={"inference": Raising()})', "capabilities.inference",
     "must be a bool (got <Raising object; its repr() raised RuntimeError>)"),
    ("contains-itself", 'd = {}\nd["d"] = d\nmanifest = dict(BASE, hardware=d)', "hardware" + ".d" * (MAX_DEPTH - 1),
     f"nested more than {MAX_DEPTH} levels deep"),
    ("too-many-values", "manifest = dict(BASE, skip_ops=['x'] * 2_000_000)", "manifest",
     "holds more than 1,000,000 values"),
    ("regex-nested", 'manifest = dict(BASE, supported_dtypes={"float32": "(" * 5000 + ")" * 5000})',
     "supported_dtypes.float32", "regex too deeply nested"),
    ("long-regex", 'manifest = dict(BASE, supported_dtypes={"float32": "a" * 200_000})', "supported_dtypes.float32",
     "regex longer than 100,000 characters"),
    ("test-dir-null-byte", 'manifest = dict(BASE, custom_test_dirs=["a\\0b"])', "custom_test_dirs[0]",
     "not a usable folder path"),
    ("test-dir-too-long", 'manifest = dict(BASE, custom_test_dirs=["a" * 5000])', "custom_test_dirs[0]",
     "not a usable folder path"),
    ("ten-mb-device-name", 'manifest = dict(BASE, device_name="a" * 10 * 2**20)', "device_name",
     "(10485760 characters)"),
]


@pytest.mark.parametrize("body, key, text", [c[1:] for c in BAD_VALUES], ids=[c[0] for c in BAD_VALUES])
def test_a_value_that_breaks_validation_is_one_error_line(tmp_path, body, key, text):
    path = write(tmp_path, "manifest.py", BASE + body + "\n")
    result = check(path)
    assert_one_error(result, path, text)
    assert error_lines(result.stderr)[0].startswith(f"  error: {key}: ")
    assert len(result.stderr) < 2000  # a 10 MB value is not printed


@pytest.mark.parametrize("source, text", [
    ("manifest = " + "1+" * 100_000 + "1\n", "cannot compile the file: RecursionError"),
    ("manifest = " + "(" * 1000 + "1" + ")" * 1000 + "\n", "syntax error: too many nested parentheses"),
    ("class E(Exception):\n    def __str__(self): raise ValueError\nraise E()\n", "raised E: <its message cannot"),
    ("manifest = 1\0\n", "syntax error: source code string cannot contain null bytes"),
    ("x = input()\n", "line 1: the manifest raised EOFError"),  # stdin is /dev/null: no hang
], ids=["deep-expression", "deep-parentheses", "raising-exception-message", "null-byte", "reads-stdin"])
def test_a_file_that_cannot_run_is_one_error_line(tmp_path, source, text):
    path = write(tmp_path, "manifest.py", source)
    assert_one_error(check(path), path, text)


def test_subclasses_of_plain_types_are_read_as_their_base_type(tmp_path):
    """A str, float or int subclass holds a plain value; reading it never calls the subclass's methods."""
    path = write(tmp_path, "manifest.py", BASE + '''\
import enum
class Name(str):
    def __str__(self): raise SystemExit(1)
    def __repr__(self): raise SystemExit(1)
    def __eq__(self, other): raise SystemExit(1)
    def __hash__(self): raise SystemExit(1)
class Number(float):
    def __float__(self): raise SystemExit(1)
    def __repr__(self): raise SystemExit(1)
class Level(enum.IntEnum):
    TWO = 2
class Claims(dict):
    def get(self, *a): raise SystemExit(1)
    def keys(self): raise SystemExit(1)
    def __iter__(self): raise SystemExit(1)
    def __len__(self): raise SystemExit(1)
manifest = Claims(BASE, device_name=Name("cpu"), semantic_level=Level.TWO,
                  tolerance_overrides={"float32": {"atol": Number(0.5)}})
''')
    manifest, _ = load_manifest(path)
    assert type(manifest.device_name) is str and manifest.device_name == "cpu"
    assert type(manifest.semantic_level) is int and manifest.semantic_level == 2
    assert manifest.tolerance_override("elementwise", torch.float32).atol == 0.5


def test_validate_reads_hostile_objects_in_process_without_crashing():
    """`validate` called directly (not through a file) gets the same protection."""

    class Evil(dict):
        def items(self):
            raise SystemExit(3)

    manifest, problems = validate({"manifest_version": 1, "device_name": "cpu", "supported_dtypes": Evil(),
                                   "capabilities": {"inference": True}, "semantic_level": 10**5000})
    assert manifest is None
    assert [p.key for p in problems] == ["supported_dtypes", "semantic_level"]
    assert "items() raised SystemExit: 3" in problems[0].render()


def test_many_errors_are_listed_up_to_a_bound(tmp_path):
    path = write(tmp_path, "manifest.py", BASE + "manifest = dict(BASE, **{f'k{i}': 1 for i in range(500)})\n")
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    rendered = info.value.render()
    assert len(info.value.errors) == 500
    assert len(rendered.splitlines()) == 52 and "... and 450 more errors" in rendered


# -- the machinery ---------------------------------------------------------------------------------


def test_safe_repr_never_raises_and_stays_short():
    class Exits:
        def __repr__(self):
            raise SystemExit(0)

    text = safe_repr(Exits())  # (not inside the assert: pytest's own repr of an Exits would exit)
    assert text == "<Exits object; its repr() raised SystemExit>"
    assert safe_repr(10**5000) == "<int of about 5001 digits>"
    assert safe_repr(-(10**300)) == "<negative int of about 301 digits>"
    assert safe_repr(2**64) == "18446744073709551616"
    text = safe_repr("x" * 10**7)
    assert len(text) < 120 and text.endswith("(10000000 characters)")
    assert len(safe_repr(list(range(10**6)))) <= 80
    assert safe_repr(torch.float16) == "torch.float16"


def test_plain_values_survive_json_exactly():
    value = {"a": [1, 2.5, None, True, "s\ud800"], ("matmul", torch.bfloat16): (1e-3, 0.0), torch.float32: "^add$",
             "big": -(10**5000), "nan": float("nan"), 3: Opaque("set", "{1}", "why")}
    plain, problems = to_plain(value)
    assert problems == [((3,), "why")]
    back = from_json(json.loads(json.dumps(to_json(plain))))
    assert list(back) == list(value)
    assert back["a"] == value["a"] and back["big"] == value["big"] and back[torch.float32] == "^add$"
    assert back[("matmul", torch.bfloat16)] == (1e-3, 0.0) and back["nan"] != back["nan"]
    assert isinstance(back[3], Opaque) and back[3].problem == "why" and repr(back[3]) == "{1}"
    for malformed in ([1], {"list": 1}, {"opaque": [1, 2]}, {"dict": [[1]]}, {"x": 1, "y": 2}):
        with pytest.raises(ValueError):
            from_json(malformed)


@pytest.mark.slow
def test_a_fresh_interpreter_child_reads_the_same_manifest(tmp_path):
    """The child used where a fork is unsafe (macOS, CUDA initialised) answers as the fork does."""
    path = write(tmp_path, "manifest.py", "import torch\n" + VALID.replace('"float32"', "torch.float32"))
    forked = run_in_child(run_manifest_file, str(path), 120, fresh_interpreter=False)
    fresh = run_in_child(run_manifest_file, str(path), 600, fresh_interpreter=True)
    assert forked.ended is None and fresh.ended is None, (forked, fresh)
    assert fresh.answer == forked.answer
    assert from_json(fresh.answer["manifest"])["supported_dtypes"] == {torch.float32: True}
