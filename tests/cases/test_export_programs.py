"""`torchcts replay --export-script` for scenario cases: the suite's program in a torch-only script.

A scenario property registered here (as a suite would) with a program; its failing case found on the
faulty device exports to a script that reproduces with torch alone and says "not reproduced" without
the bug. Programs that are not plain torch-only functions, scenarios without programs and hostile
case values are refused or stay data.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch
from hypothesis import strategies as st
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.export import export_script
from torchcts.cases.files import CaseFileError, new_case
from torchcts.engine.programs import program_check
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.strategies import Case, tensors

BUG = "noncontiguous_add"  # a core bug: add misreads a non-contiguous operand
PAYLOAD = "__import__('os').system('touch PWNED')\"\"\"'''\n\\"


def add_transposed(input, other, alpha=1, label="sum"):
    """Adds `other` to the transpose of `input`; returns the sum, the view's strides and a plain value."""
    view = input.transpose(0, -1)
    total = torch.add(view, other, alpha=alpha)
    return total, view.stride(), view._is_view(), {label: math.floor(2.5) + len(view.shape)}


def writes_its_input(input):
    """Writes through its input: the script's CPU run must not change what the device run starts from."""
    return input.mul_(2)


def uses_open(input):
    with open("PWNED", "w"):
        return getattr(input, "clone")()  # getattr is fine: it stays inside Python


def uses_a_dunder(input):
    return input.__class__.__subclasses__()


def uses_import(input):
    import os  # noqa: F401

    return input


def uses_a_global(input):
    return input * PAYLOAD_SCALE


PAYLOAD_SCALE = 2


def hides_open_in_a_comprehension(input):
    [0 for open in ()]  # binds `open` in an inner scope only: the call below is the builtin's
    return open("PWNED").read()


def hides_eval_in_a_lambda(input):
    unused = lambda eval: 0  # noqa: E731
    return eval("1 + 1")


def reaches_a_dunder_by_name(input):
    return getattr(input, "__class__")


def round(value):  # noqa: A001 - a module global over a builtin: the exported script would run the builtin
    return value


def uses_a_shadowed_builtin(input):
    return round(input)


def closure_program():
    factor = 3

    def scaled(input):
        return input * factor

    return scaled


SCENARIOS = {"add_transposed": add_transposed, "writes_its_input": writes_its_input, "uses_open": uses_open, "uses_a_dunder": uses_a_dunder, "uses_import": uses_import,
             "uses_a_global": uses_a_global, "a_closure": closure_program(), "a_lambda": lambda input: input + 1,
             "hides_open": hides_open_in_a_comprehension, "hides_eval": hides_eval_in_a_lambda,
             "dunder_by_name": reaches_a_dunder_by_name, "shadowed_builtin": uses_a_shadowed_builtin}


def _cases(cts):
    pair = tensors(torch.float32, min_dims=2, max_dims=2, allow_empty=False).flatmap(
        lambda t: st.tuples(st.just(t), tensors(torch.float32, shape=tuple(reversed(t.shape)))))
    return pair.map(lambda p: Case(cts.item.op, "scenario", cts.dtype, SampleInput(p[0], args=(p[1],)), 0))


@pytest.fixture
def probe_property(monkeypatch):
    """A scenario property `export_probe` with a program per scenario (and one without)."""
    registry.load()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @registry.register_property("export_probe", capability="inference", level=1,
                                items=registry.ScenarioItems([*SCENARIOS, "no_program"], ["float32"],
                                                             programs=SCENARIOS))
    def test_export_probe(cts):
        cts.run(_cases(cts), program_check(cts, SCENARIOS[cts.item.op]))

    return registry.get("export_probe")


def _run_suite_item():
    """`run_suite_item` of tests/properties/conftest.py (the suites' harness fixture, one item in process)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "properties" / "conftest.py"
    spec = importlib.util.spec_from_file_location("suites_harness", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run_suite_item


def scenario_case(tmp_path, scenario: str, sample: SampleInput, name: str = "case.json", **fields) -> str:
    case = new_case(prop="export_probe", op=scenario, variant="scenario", dtype="float32", device_type="cpu",
                    backend=None, sample=sample, failure={"message": "differs"}, found={"torch": torch.__version__},
                    description="")
    data = {**case.as_json(), **fields}
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


# Runs each (folder, argv, bugs): `<folder>/repro.py` as __main__ with the faulty device's bugs set, in one
# interpreter (one torch import for all), and prints how each ended: [exit code, its output].
RUN_ALL = """
import contextlib, io, json, os, runpy, sys
from torchcts.testing import faulty
ended = []
for folder, argv, bugs in json.loads(sys.argv[1]):
    os.chdir(folder)
    faulty.disable_bugs()
    if bugs:
        faulty.enable_bugs(*bugs)
    sys.argv, out, code = ["repro.py", *argv], io.StringIO(), 0
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path("repro.py", run_name="__main__")
        except SystemExit as exc:
            code = exc.code
    ended.append([code, out.getvalue()])
print(json.dumps(ended))
"""


def run_scripts(*runs: tuple) -> list[tuple[int, str]]:
    """[(exit code, output)] of each (script, folder, argv, bugs), run in one subprocess; each folder keeps
    nothing but its script."""
    for script, folder, _, _ in runs:
        folder.mkdir(exist_ok=True)
        (folder / "repro.py").write_text(script)
    plan = json.dumps([[str(folder), list(argv), list(bugs)] for _, folder, argv, bugs in runs])
    done = subprocess.run([sys.executable, "-c", RUN_ALL, plan], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TORCHCTS_FAULTY="1", TORCHCTS_FAULTY_BUGS=""))
    assert done.returncode == 0, done.stderr[-3000:]
    for _, folder, _, _ in runs:
        assert sorted(p.name for p in folder.iterdir()) == ["repro.py"], folder
    return [tuple(ended) for ended in json.loads(done.stdout.splitlines()[-1])]


@pytest.mark.slow
def test_a_failing_scenario_case_exports_a_script_that_reproduces(probe_property, tmp_path):
    record = _run_suite_item()(tmp_path, "export_probe", "add_transposed", device="faulty", bugs=(BUG,),
                               max_examples=10, corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED, record
    case_path = tmp_path / "corpus" / record["counterexample"]["path"]
    script = export_script(case_path)
    assert "import torchcts" not in script and "def add_transposed(input, other" in script
    found, clean = run_scripts((script, tmp_path / "bug", (), (BUG,)), (script, tmp_path / "clean", ("faulty",), ()))
    assert found[0] == 1 and "REPRODUCED on faulty" in found[1], found
    assert clean[0] == 0 and "not reproduced on faulty" in clean[1], clean


@pytest.mark.slow
def test_a_bit_exact_suite_exports_a_script_that_compares_bit_for_bit(tmp_path):
    """ieee754 compares bits: a float16 product flushed from a subnormal to 0.0 is inside float16's tolerance,
    so the script must compare bits too, or it would call the failure "not reproduced"."""
    record = _run_suite_item()(tmp_path, "ieee754", "subnormal_arithmetic", "float16", device="faulty",
                               bugs=("subnormal_flush_half",), max_examples=40, corpus_dir=tmp_path / "corpus")
    assert record["outcome"] is Outcome.FAILED, record
    script = export_script(tmp_path / "corpus" / record["counterexample"]["path"])
    assert "EXACT = True" in script and "bit for bit" in script
    found, clean = run_scripts((script, tmp_path / "bug", (), ("subnormal_flush_half",)),
                               (script, tmp_path / "clean", ("faulty",), ()))
    assert found[0] == 1 and "REPRODUCED on faulty" in found[1] and "(bit for bit)" in found[1], found
    assert clean[0] == 0 and "not reproduced on faulty" in clean[1], clean


@pytest.mark.parametrize("scenario, why", [
    ("uses_open", "uses the name open"),
    ("uses_a_dunder", "uses the attribute __"),
    ("uses_import", "uses import"),
    ("uses_a_global", "uses the name PAYLOAD_SCALE"),
    ("a_closure", "not a module-level function"),
    ("a_lambda", "not a function defined with def"),
    ("hides_open", "binds the builtin name open"),
    ("hides_eval", "binds the builtin name eval"),
    ("dunder_by_name", "reaches a dunder attribute through getattr"),
    ("shadowed_builtin", "uses round, which its module defines over the builtin"),
])
def test_a_program_that_is_not_torch_only_is_refused_naming_the_property(probe_property, tmp_path, scenario, why):
    path = scenario_case(tmp_path, scenario, SampleInput(torch.ones(2, 2)))
    with pytest.raises(CaseFileError) as raised:
        export_script(path)
    assert raised.value.field == "property" and f"export_probe scenario {scenario}" in str(raised.value)
    assert why in str(raised.value)


def test_a_scenario_without_a_program_is_refused(probe_property, tmp_path):
    with pytest.raises(CaseFileError, match="export_probe is a scenario property without a program"):
        export_script(scenario_case(tmp_path, "no_program", SampleInput(torch.ones(2))))


@pytest.mark.parametrize("op", ["not_registered", "add_transposed; import os", PAYLOAD])
def test_a_scenario_name_that_is_not_registered_is_refused(probe_property, tmp_path, op):
    with pytest.raises(CaseFileError) as raised:
        export_script(scenario_case(tmp_path, "add_transposed", SampleInput(torch.ones(2, 2)), op=op))
    assert raised.value.field == "op" and "export_probe scenarios: add_transposed" in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.slow
def test_code_like_values_reach_the_script_as_data(probe_property, tmp_path):
    """Strings from the case (arguments, keyword values, keys, the description) stay string constants."""
    x = torch.arange(6.0).view(2, 3)
    sample = SampleInput(x, args=(torch.ones(3, 2),), kwargs={"label": PAYLOAD})
    path = scenario_case(tmp_path, "add_transposed", sample, description=PAYLOAD)
    hostile_key = scenario_case(tmp_path, "add_transposed", SampleInput(x, args=(torch.ones(3, 2),)), "key.json")
    data = json.loads(open(hostile_key).read())
    data["inputs"]["kwargs"]["dict"][PAYLOAD] = 1
    open(hostile_key, "w").write(json.dumps(data))
    writes = export_script(scenario_case(tmp_path, "writes_its_input", SampleInput(x), "writes.json"))
    as_value, as_key, written = run_scripts((export_script(path), tmp_path / "value", ("cpu",), ()),
                                            (export_script(hostile_key), tmp_path / "key", ("cpu",), ()),
                                            (writes, tmp_path / "writes", ("faulty",), ()))
    assert written[0] == 0 and "not reproduced on faulty" in written[1], written  # each run gets fresh inputs
    assert as_value[0] == 0 and "not reproduced on cpu" in as_value[1], as_value
    # CPU itself rejects the hostile keyword: the script could not run the check (exit 2), not "not reproduced"
    assert as_key[0] == 2 and "could not run on cpu: CPU itself raises on this case: TypeError" in as_key[1], as_key


def test_the_scenario_script_allows_only_its_own_and_the_programs_vocabulary(probe_property, tmp_path):
    from torchcts.cases import export

    path = scenario_case(tmp_path, "add_transposed", SampleInput(torch.ones(2, 3), args=(torch.ones(3, 2),)))
    script = export_script(path)
    problem = export._vocabulary_problem  # the exporter's check, with what it allowed for this script
    from torchcts.cases.export_program import SCRIPT_ATTRIBUTES, SCRIPT_IMPORTS, SCRIPT_NAMES, program_source

    program = program_source(probe_property, "add_transposed", path)
    allowed = (set(SCRIPT_ATTRIBUTES | program.attributes | {"float32", "float16", "bfloat16", "float64",
                                                               "complex32", "complex64", "complex128"}
                   | {n for n in dir(torch) if n.startswith("float8")}),
               SCRIPT_NAMES | program.names, SCRIPT_IMPORTS | {(None, "math")})
    assert problem(script, *allowed) is None
    assert "the name 'open'" in problem(script + "\nopen('PWNED', 'w')\n", *allowed)
    assert "import ['os']" in problem(script + "\nimport os\n", *allowed)
    assert "the attribute 'save'" in problem(script + "\ntorch.save(STORAGES, 'x')\n", *allowed)
    compiled = export_script(scenario_case(tmp_path, "add_transposed", SampleInput(torch.ones(2, 3), args=(
        torch.ones(3, 2),)), "compiled.json", backend="aot_eager"))
    assert "DEVICE_PROGRAM = torch.compile(PROGRAM, backend='aot_eager', dynamic=None)" in compiled
    with pytest.raises(CaseFileError, match="backend"):
        export_script(scenario_case(tmp_path, "add_transposed", SampleInput(torch.ones(2)), "bad.json",
                                    backend="inductor'); import os; ('"))


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_every_registered_program_is_exportable():
    """Each built-in suite's programs pass the exporter's checks (torch-only, no imports), so their cases export."""
    from torchcts.cases.export_program import program_source

    registry.load()
    refused = []
    for name in registry.names():
        spec = registry.get(name)
        for scenario, program in (spec.items.programs.items() if spec.scenario else ()):
            try:
                program_source(spec, scenario, "registry")
            except CaseFileError as exc:
                refused.append(f"{name}/{scenario}: {exc}")
    assert not refused, refused
