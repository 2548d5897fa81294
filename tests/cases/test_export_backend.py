"""An exported reproduction script runs where the failure happened: it imports the case's `backend_import`.

A run against the faulty device, whose manifest names `torchcts.testing.faulty` as its `backend_import`,
stores cases that record the module; their scripts import it (as a literal, from a checked name) in a
clean environment (no TORCHCTS_FAULTY autoload) and exit 1 REPRODUCED with the bug on, 0 without it, and
2 (one line) when they cannot run: a module that does not exist, a device torch does not know. A case
whose module name is not a dotted identifier is refused when it is loaded, naming the field.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from torchcts.cases.files import CaseFileError, load_case, module_name_problem
from torchcts.manifest.templates import render_template
from torchcts.results.writer import read_records
from tests import warm_programs

MODULE = "torchcts.testing.faulty"
BUGS = {"forward::add::function::float32": "noncontiguous_add",  # a value difference
        "errors::roll::function::float32": "index_error_as_runtime_error",  # RuntimeError where CPU raises IndexError
        "forward::trunc::function::float32": "missing_kernel"}  # the device raises where CPU does not
HOSTILE_NAMES = ["os; import x", "__import__('os').system('x')", "a..b", ".a", "a.", "1a", "a.class", "import",
                 "caf\u00e9", "a b", "a\nb", "a" * 201, 3, ["os"], {"m": "os"}, True, "",
                 "unittest.__main__", "__main__", "venv.__main__"]


def cli(folder, *args, bugs=""):
    env = dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs)
    return warm_programs.run([sys.executable, "-m", "torchcts", *args], capture_output=True, text=True, env=env,
                          cwd=folder, timeout=600)


def clean_env(bugs: str) -> dict[str, str]:
    """No TORCHCTS_FAULTY (the development autoload): only the script's own import registers the device."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
            "TORCHCTS_FAULTY_BUGS": bugs}


def run_script(path, *args, bugs=""):
    done = warm_programs.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=300,
                          env=clean_env(bugs), cwd=path.parent)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    """A faulty-device run with a backend_import manifest and three bugs on: {item: its case file}, the folder."""
    folder = tmp_path_factory.mktemp("backend-run")
    (folder / "manifest.py").write_text(render_template("complete", device_name="faulty", backend_import=MODULE))
    result = cli(folder, "run", "--device", "faulty", "--manifest", "manifest.py", "--ops", "^(add|roll|trunc)$",
                 "--property", "forward", "--property", "errors", "--dtype", "float32", "--level", "2",
                 "--derandomize", "--max-examples", "15", "--no-report", bugs=",".join(BUGS.values()))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    records = {r["item"]: r for r in read_records(sorted((folder / "results").glob("*/run.json"))[-1].parent)}
    cases = {item: folder / records[item]["counterexample"]["path"] for item in BUGS}
    return folder, cases


def export(folder, case, *args):
    done = cli(folder, "replay", "--export-script", str(case), *args)
    assert done.returncode == 0, done.stderr
    path = folder / f"{case.stem}-{len(args)}.py"
    path.write_text(done.stdout)
    return path


@pytest.mark.slow
def test_a_stored_case_records_the_manifests_backend_import(found, tmp_path):
    _, cases = found
    assert {load_case(path).backend_import for path in cases.values()} == {MODULE}
    data = json.loads(next(iter(cases.values())).read_text())
    del data["backend_import"]  # a case stored before cases recorded it still loads
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert load_case(tmp_path / "old.json").backend_import is None


@pytest.mark.slow
@pytest.mark.parametrize("item", BUGS)
def test_the_script_imports_the_backend_and_reproduces_only_with_the_bug(found, item):
    folder, cases = found
    path = export(folder, cases[item])
    script = path.read_text()
    assert f"BACKEND_IMPORT = {MODULE!r}" in script and "import torchcts" not in script  # a literal, imported by name
    on = run_script(path, bugs=BUGS[item])
    assert on[0] == 1 and on[1].startswith("REPRODUCED on faulty") and "Traceback" not in on[2], on
    off = run_script(path)
    assert off[0] == 0 and off[1].startswith("not reproduced on faulty"), off
    if item.startswith("errors"):
        assert "it raises RuntimeError where CPU raises IndexError" in on[1]
    if "trunc" in item:
        assert "it raises where CPU does not: NotImplementedError" in on[1]


@pytest.mark.slow
def test_a_script_that_cannot_run_says_so_in_one_line_with_exit_2(found, tmp_path):
    folder, cases = found
    data = json.loads(cases["forward::add::function::float32"].read_text())
    data["backend_import"] = "no_such_backend.torch_module"
    (tmp_path / "missing.json").write_text(json.dumps(data))
    missing = run_script(export(tmp_path, tmp_path / "missing.json"), bugs="noncontiguous_add")  # no manifest here
    assert missing[0] == 2 and missing[1].count("\n") == 1 and missing[2] == "", missing
    assert missing[1].startswith("could not run on faulty: importing the backend module "
                                 "no_such_backend.torch_module failed: ModuleNotFoundError")
    unknown = run_script(export(folder, cases["forward::add::function::float32"]), "nosuch", bugs="noncontiguous_add")
    assert unknown[0] == 2 and unknown[1].count("\n") == 1 and unknown[2] == "", unknown
    assert unknown[1].startswith("could not run on nosuch: the device is not available: RuntimeError: Expected one of")


@pytest.mark.slow
def test_the_users_manifest_wins_over_the_module_a_case_names(found, tmp_path):
    folder, cases = found
    data = json.loads(cases["forward::add::function::float32"].read_text())
    data["backend_import"] = "no_such_backend.torch_module"  # a case file from elsewhere names another module
    (tmp_path / "other.json").write_text(json.dumps(data))
    script = export(folder, tmp_path / "other.json").read_text()  # ./manifest.py names torchcts.testing.faulty
    assert "torchcts.testing.faulty" in script and "no_such_backend" not in script


@pytest.mark.slow
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_a_module_name_that_is_not_a_dotted_identifier_is_refused_at_load(found, tmp_path, name):
    _, cases = found
    data = json.loads(cases["forward::add::function::float32"].read_text())
    data["backend_import"] = name
    path = tmp_path / "bogus.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CaseFileError) as raised:
        load_case(path)
    assert raised.value.field == "backend_import" and "is not a module name" in raised.value.message
    assert "\n" not in str(raised.value)


@pytest.mark.slow
def test_replay_refuses_a_bogus_module_name_naming_the_field(found, tmp_path):
    folder, cases = found
    data = json.loads(cases["forward::add::function::float32"].read_text())
    data["backend_import"] = "os; import x"
    path = tmp_path / "bogus.json"
    path.write_text(json.dumps(data))
    exported = cli(tmp_path, "replay", "--export-script", str(path))
    assert exported.returncode == 2 and exported.stdout == "", exported
    assert "bogus.json: backend_import: 'os; import x' is not a module name" in exported.stderr
    replayed = cli(tmp_path, "replay", str(path), "--device", "faulty")
    assert replayed.returncode == 2 and "unreadable" in replayed.stdout and "backend_import" in replayed.stdout


@pytest.mark.slow
def test_an_older_case_takes_the_module_from_the_manifest(found, tmp_path):
    folder, cases = found
    data = json.loads(cases["forward::add::function::float32"].read_text())
    del data["backend_import"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    without = cli(tmp_path, "replay", "--export-script", "old.json")  # no ./manifest.py here
    assert without.returncode == 0 and "BACKEND_IMPORT = None" in without.stdout
    path = export(tmp_path, tmp_path / "old.json", "--manifest", str(folder / "manifest.py"))
    assert f"BACKEND_IMPORT = {MODULE!r}" in path.read_text()
    assert run_script(path, bugs="noncontiguous_add")[0] == 1


def test_module_names_allowed():
    assert module_name_problem("torch_mydevice") is None and module_name_problem("vendor.torch_backend") is None
    assert module_name_problem("_a.b2.C") is None and module_name_problem(None) is not None
