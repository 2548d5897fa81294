"""Exported reproduction scripts hold case values as data, never as code.

A case file is untrusted (it travels between teams). For every field `replay --export-script`
writes, a hostile value is either refused (exit 2, one line naming the file and the field, no
traceback) or exported as a script that runs in a temporary folder without creating anything and
whose code (everything but its string constants) is the honest script's own vocabulary.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.files import CaseFileError, new_case
from torchcts.cli.main import cli
from torchcts.cases.export import _inert, _vocabulary_problem, export_script
from torchcts.plan import registry

PAYLOAD = "__import__('os').system('touch PWNED'); open('PWNED', 'w')"
# Ways out of a docstring, a string literal or a line, each wrapped around the payload.
BREAKOUTS = {
    "triple-quotes": f'"""\n{PAYLOAD}\n"""',
    "single-quotes": f"'''\n{PAYLOAD}\n'''",
    "backslash-quotes": f'\\"""; {PAYLOAD}; """\\',
    "named-escape": f"\\N{{QUOTATION MARK}}\\N{{QUOTATION MARK}}\\N{{QUOTATION MARK}}\n{PAYLOAD}\n\\N{{BOGUS}}",
    "line-separators": f'\u2028"""\u2029{PAYLOAD}\x85"""\r{PAYLOAD}\r\n"""',
    "nul-and-escapes": f'\x00"""\x1b[2K\x1b[1A{PAYLOAD}  # \x0c\x0b\ud800 \U0001f600',
    "trailing-backslash": f'{PAYLOAD}"""\\',
}
EVERYTHING = "".join(BREAKOUTS.values())
pytestmark = pytest.mark.filterwarnings("ignore:.*(beta|prototype):UserWarning")  # sparse and nested inputs


def honest_case(prop: str = "forward", op: str = "add", sample: SampleInput | None = None,
                description: str = "") -> dict:
    """A valid case (as its JSON) for `op`, with a view at an offset among its inputs."""
    if sample is None:
        x = torch.arange(8.0).view(2, 4)[:, 1:3]
        sample = SampleInput(x, args=(torch.tensor([[1.0, 2.0]]),), kwargs={"alpha": 2})
    case = new_case(prop=prop, op=op, variant=registry.get(prop).variant, dtype="float32", device_type="cpu",
                    backend=None, sample=sample, failure={"message": "differs"}, found={"torch": torch.__version__},
                    description=description)
    return case.as_json()


def write(folder: Path, data: dict, name: str = "case.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(data))
    return path


def changed(data: dict, where: tuple, value) -> dict:
    """A deep copy of `data` with the value at the path `where` (keys and indices) set or appended."""
    data = copy.deepcopy(data)
    target = data
    for key in where[:-1]:
        target = target[key]
    if isinstance(target, list) and where[-1] == len(target):
        target.append(value)
    else:
        target[where[-1]] = value
    return data


def vocabulary(script: str) -> set[str]:
    """What a script's code refers to: its names, attributes and imports."""
    found = set()
    for node in ast.walk(ast.parse(script)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(f".{node.attr}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(f"import {getattr(node, 'module', '')} {alias.name}" for alias in node.names)
    return found


def code_without_strings(script: str) -> str:
    """The script with every string constant emptied: what runs, not what it says."""

    class Blank(ast.NodeTransformer):
        def visit_Constant(self, node):
            return ast.Constant("") if isinstance(node.value, str) else node

    return ast.unparse(Blank().visit(ast.parse(script)))


def run_script(script: str, folder: Path) -> subprocess.CompletedProcess:
    """`python repro.py cpu` in an empty `folder`; fails if it leaves any file behind."""
    folder.mkdir()
    (folder / "repro.py").write_text(script)
    result = subprocess.run([sys.executable, "repro.py", "cpu"], cwd=folder, capture_output=True, text=True,
                            timeout=300)
    assert sorted(p.name for p in folder.iterdir()) == ["repro.py"], result.stdout + result.stderr
    return result


# Runs each `<folder>/repro.py` as `__main__` with argv [repro.py, cpu] and its folder as the working
# directory, in one interpreter (one torch import for all of them), and writes how each one ended.
RUN_ALL = """
import json, os, runpy, sys
out, folders, ended = sys.argv[1], sys.argv[2:], {}
for folder in folders:
    os.chdir(folder)
    sys.argv = ["repro.py", "cpu"]
    try:
        runpy.run_path("repro.py", run_name="__main__")
        ended[folder] = "exit 0"
    except SystemExit as exc:
        ended[folder] = f"exit {exc.code}"
    except Exception as exc:
        ended[folder] = type(exc).__name__
with open(out, "w") as handle:
    json.dump(ended, handle)
"""


def export_cli(*args: str) -> object:
    return CliRunner().invoke(cli, ["replay", *args])


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """(the honest case's JSON, its exported script)."""
    data = honest_case()
    return data, export_script(write(tmp_path_factory.mktemp("honest"), data))


# -- values that are data: exported, and inert ------------------------------------------------

RAN = ("exit 0",)  # the script ran: results agree
# the script ran, but the check could not: CPU accepts the input of an `errors` case (exit 2, no traceback)
RAN_CPU_ACCEPTS = ("exit 2",)
REFUSED_BY_ADD = ("exit 2",)  # CPU's add() refuses the extra argument or keyword: could not run; nothing else runs
INERT = {  # (the honest case's property, where the hostile value goes, the value, how the script ends)
    **{f"description-{name}": ("forward", ("description",), text, RAN) for name, text in BREAKOUTS.items()},
    "failure.message": ("forward", ("failure", "message"), EVERYTHING, RAN),
    "failure.message-not-text": ("forward", ("failure", "message"), {"a": [EVERYTHING]}, RAN),
    "failure.outcome": ("forward", ("failure", "outcome"), EVERYTHING, RAN),
    "found.torch": ("forward", ("found", "torch"), EVERYTHING, RAN),
    "found.date": ("forward", ("found", "date"), EVERYTHING, RAN),
    "fingerprint": ("forward", ("fingerprint",), '"""\\\n' + PAYLOAD, RAN),
    "error_type": ("errors", ("inputs", "error_type"), PAYLOAD, RAN_CPU_ACCEPTS),
    "error_regex": ("errors", ("inputs", "error_regex"), EVERYTHING, RAN_CPU_ACCEPTS),
    "kwargs-key": ("forward", ("inputs", "kwargs", "dict", EVERYTHING), 1, REFUSED_BY_ADD),
    "string-argument": ("forward", ("inputs", "args", 1), EVERYTHING, REFUSED_BY_ADD),
    "slice-of-strings": ("forward", ("inputs", "args", 1), {"slice": [EVERYTHING, None, EVERYTHING]}, REFUSED_BY_ADD),
    "nested-lists": ("forward", ("inputs", "args", 1), json.loads("[" * 90 + json.dumps(EVERYTHING) + "]" * 90),
                     REFUSED_BY_ADD),
}


@pytest.fixture(scope="module")
def inert_runs(tmp_path_factory):
    """{case name: (its exported script, how running it ended, the files in its folder after)}."""
    root = tmp_path_factory.mktemp("inert")
    scripts = {}
    for name, (prop, where, value, _) in INERT.items():
        scripts[name] = export_script(write(root, changed(honest_case(prop), where, value), f"{name}.json"))
        (root / name).mkdir()
        (root / name / "repro.py").write_text(scripts[name])
    ended = root / "ended.json"
    subprocess.run([sys.executable, "-c", RUN_ALL, str(ended), *(str(root / name) for name in INERT)],
                   capture_output=True, timeout=600, check=True)
    endings = json.loads(ended.read_text())
    return {name: (scripts[name], endings[str(root / name)], sorted(p.name for p in (root / name).iterdir()))
            for name in INERT}


@pytest.fixture(scope="module")
def honest_vocabulary(tmp_path_factory):
    """Everything the code of honest scripts refers to, over every kind of input value."""
    folder = tmp_path_factory.mktemp("vocabulary")
    found = set()
    for i, sample in enumerate(every_kind_of_input()):
        for prop in ("forward", "errors"):
            found |= vocabulary(export_script(write(folder, honest_case(prop, sample=sample), f"{prop}{i}.json")))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", INERT)
def test_text_from_the_case_is_exported_as_data(inert_runs, honest_vocabulary, name):
    script, ended, files = inert_runs[name]
    assert script.isascii() and "\x00" not in script
    assert vocabulary(script) <= honest_vocabulary  # no name, attribute or import of its own
    assert "PWNED" not in code_without_strings(script)  # the payload is only ever a string
    assert files == ["repro.py"] and ended in INERT[name][3]


@pytest.mark.slow
def test_a_hostile_description_runs_as_a_plain_script(tmp_path):
    data = changed(honest_case(), ("description",), EVERYTHING)
    result = run_script(export_script(write(tmp_path, data)), tmp_path / "run")
    assert result.returncode == 0 and "not reproduced on cpu" in result.stdout, result.stderr


def test_the_docstring_says_the_description_exactly(tmp_path):
    description = '"\'"\'"""\\ first\nsecond \\N{BULLET} \u00e9 \x1b[2J\u2028third'
    script = export_script(write(tmp_path, honest_case(description=description)))
    assert "\n".join(description.splitlines()) in ast.get_docstring(ast.parse(script))


@settings(max_examples=300)
@given(st.text(st.characters(blacklist_categories=())))
def test_inert_text_reads_as_itself_and_stays_inside_its_docstring(text):
    inert = _inert(text)
    assert inert.isascii() and inert.isprintable()
    assert ast.literal_eval(f'"""{inert}\n"""') == text + "\n"


# -- values that could be code: refused, with the field named ---------------------------------

SIZES = ("inputs", "input", "sizes")
KWARG = ("inputs", "kwargs", "dict", "k")
REFUSED = {
    "op": (("op",), PAYLOAD, "op"),
    "property": (("property",), PAYLOAD, "property"),
    "variant": (("variant",), EVERYTHING, "variant"),
    "dtype": (("dtype",), "float32; " + PAYLOAD, "dtype"),
    "status": (("status",), PAYLOAD, "status"),
    "device_type": (("device_type",), "cpu'); " + PAYLOAD + "; ('", "device_type"),
    "device_type-newline": (("device_type",), "cpu\n" + PAYLOAD, "device_type"),
    "backend": (("backend",), "inductor'); " + PAYLOAD + "; ('", "backend"),
    "backend-list": (("backend",), ["inductor"], "backend"),
    "backend-empty": (("backend",), "", "backend"),
    "storage-dtype": (("storages", 0, "dtype"), "float32, " + PAYLOAD, "storages[0].dtype"),
    "storage-elements": (("storages", 0, "elements"), "2); " + PAYLOAD + "; (", "storages[0].elements"),
    "storage-elements-bool": (("storages", 0, "elements"), True, "storages[0].elements"),
    "storage-elements-float": (("storages", 0, "elements"), 7.0, "storages[0].elements"),
    "storage-base64": (("storages", 0, "base64"), "AAAA'); " + PAYLOAD + "; ('", "storages[0].base64"),
    "storage-base64-list": (("storages", 0, "base64"), ["AAAA"], "storages[0].base64"),
    "storage-not-object": (("storages", 0), PAYLOAD, "storages[0]"),
    "sizes": (SIZES, ["2); " + PAYLOAD + "; (", 2], "inputs.input.sizes[0]"),
    "sizes-text": (SIZES, "[2, 2]", "inputs.input.sizes"),
    "sizes-nan": (SIZES, [float("nan"), 2], "inputs.input.sizes[0]"),
    "strides": (("inputs", "input", "strides"), [True, 1], "inputs.input.strides[0]"),
    "storage_offset": (("inputs", "input", "storage_offset"), "1) + " + PAYLOAD + " + (",
                       "inputs.input.storage_offset"),
    "storage-index": (("inputs", "input", "storage"), "0].x; " + PAYLOAD + "; s[0", "inputs.input.storage"),
    "tensor-dtype": (("inputs", "input", "dtype"), PAYLOAD, "inputs.input.dtype"),
    "requires_grad": (("inputs", "input", "requires_grad"), PAYLOAD, "inputs.input.requires_grad"),
    "tensor-kind": (("inputs", "input", "tensor"), "sparse_csr, " + PAYLOAD, "inputs.input.tensor"),
    "memory_format": (KWARG, {"memory_format": "channels_last; " + PAYLOAD}, "inputs.kwargs.k.memory_format"),
    "layout": (KWARG, {"layout": "strided; " + PAYLOAD}, "inputs.kwargs.k.layout"),
    "dtype-value": (KWARG, {"dtype": "float32; " + PAYLOAD}, "inputs.kwargs.k.dtype"),
    "int-value": (KWARG, {"int": "1); " + PAYLOAD + "; (1"}, "inputs.kwargs.k.int"),
    "int-value-digits": (KWARG, {"int": "9" * 5000}, "inputs.kwargs.k.int"),
    "float-value": (KWARG, {"float": PAYLOAD}, "inputs.kwargs.k"),
    "complex-value": (KWARG, {"complex": ["0x1p0", PAYLOAD]}, "inputs.kwargs.k[1]"),
    "size-value": (KWARG, {"size": [PAYLOAD]}, "inputs.kwargs.k.size[0]"),
    "slice-value": (KWARG, {"slice": PAYLOAD}, "inputs.kwargs.k.slice"),
    "tuple-value": (KWARG, {"tuple": PAYLOAD}, "inputs.kwargs.k.tuple"),
    "dict-value": (KWARG, {"dict": PAYLOAD}, "inputs.kwargs.k.dict"),
    "unknown-kind": (KWARG, {"code": PAYLOAD}, "inputs.kwargs.k"),
    "two-kinds": (KWARG, {"int": 1, "code": PAYLOAD}, "inputs.kwargs.k"),
    "key-with-newline": (("inputs", "kwargs", "dict", "a\nb\u2028c"), {"layout": "x\ny"}, "inputs.kwargs['a\\nb"),
}


@pytest.mark.parametrize("where, value, field", REFUSED.values(), ids=REFUSED.keys())
def test_values_that_could_be_code_are_refused_naming_the_field(honest, tmp_path, monkeypatch, where, value,
                                                                  field):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, changed(honest[0], where, value))
    result = export_cli("--export-script", str(path))
    assert result.exit_code == 2 and result.stdout == "", result.output
    line = result.stderr.rstrip("\n")
    assert "\n" not in line and line.isascii() and "Traceback" not in line, line
    assert line.startswith(f"{path}: ") and f": {field}" in line, line
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("where, value, field", [
    (("inputs", "input"), {"tensor": "nested", "dtype": "float32", "nested_layout": "jagged; " + PAYLOAD,
                           "components": []}, "inputs.input.nested_layout"),
    (("inputs", "input"), {"tensor": "nested", "dtype": "float32", "nested_layout": "jagged",
                           "components": PAYLOAD}, "inputs.input.components"),
    (("inputs", "input"), {"tensor": "sparse_coo", "dtype": "float32", "sizes": [PAYLOAD], "coalesced": True,
                           "indices": {}, "values": {}}, "inputs.input.sizes[0]"),
], ids=["nested_layout", "nested-components", "sparse-sizes"])
def test_nested_and_sparse_fields_are_checked_by_the_exporter_itself(honest, tmp_path, where, value, field):
    """The replay's decoder reads any nested_layout but 'jagged' as strided; the exporter writes names only."""
    with pytest.raises(CaseFileError, match=re.escape(f": {field}:")):
        export_script(write(tmp_path, changed(honest[0], where, value)))


@pytest.mark.parametrize("device", ["cpu'); " + PAYLOAD + "; ('", "cuda\n" + PAYLOAD, "CPU", ""])
def test_a_device_that_is_not_a_device_name_is_refused(honest, tmp_path, device):
    with pytest.raises(CaseFileError, match="--device: .* is not a device"):
        export_script(write(tmp_path, honest[0]), device)


# -- honest cases still export as before ------------------------------------------------------

@pytest.mark.slow
def test_an_honest_case_exports_a_script_that_runs(honest, tmp_path):
    data, script = honest
    result = run_script(script, tmp_path / "run")
    assert result.returncode == 0 and "not reproduced on cpu: results agree" in result.stdout, result.stderr
    on_device = export_cli("--export-script", str(write(tmp_path, data)), "--device", "cuda:1")
    assert on_device.exit_code == 0 and "else 'cuda:1'" in on_device.stdout


def every_kind_of_input() -> list[SampleInput]:
    x = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
    tensors = [x.to_sparse(), x.to_sparse_csr(), x.to_sparse_bsc((1, 1)), x.to("meta"), x.t(),
               torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged),
               torch.ones(1, 2, 2, 2).to(memory_format=torch.channels_last)]
    values = (torch.channels_last, torch.sparse_csr, torch.float64, torch.Size([2, -1]), slice(1, None, 2),
              Ellipsis, (1, (2,)), 1 + 2j, float("nan"), float("-inf"), 2**70, torch.device("cpu"), "mean", None,
              True, {"dim": -1})
    return [SampleInput(t, args=(t,)) for t in tensors] + [SampleInput(x, args=values)]


@pytest.mark.parametrize("prop, op", [("forward", "add"), ("layout", "add"), ("errors", "add"), ("out", "add"),
                                      ("backward", "add"), ("inplace", "add"), ("inplace", "nn.functional.elu"),
                                      ("forward", "__radd__"), ("forward", "div.floor_rounding")])
def test_honest_cases_of_every_property_and_input_kind_export(tmp_path, prop, op):
    """The exporter's vocabulary check accepts everything an honest case holds."""
    for i, sample in enumerate(every_kind_of_input() if prop == "forward" and op == "add" else [None]):
        script = export_script(write(tmp_path, honest_case(prop, op, sample), f"{i}.json"))
        compile(script, f"{i}.py", "exec")


@pytest.mark.slow
def test_an_in_place_variant_that_is_not_a_tensor_method_runs(tmp_path):
    """elu's in-place variant is a lambda: the script takes it from torch's OpInfo (the op_db import is slow)."""
    sample = SampleInput(torch.tensor([[1.0, -2.0], [3.0, 4.0]]))
    script = export_script(write(tmp_path, honest_case("inplace", "nn.functional.elu", sample)))
    assert "OP.inplace_variant(input" in script
    result = run_script(script, tmp_path / "run")
    assert result.returncode == 0 and "not reproduced" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("code, problem", [
    ("open('PWNED', 'w')", "the name 'open'"),
    ("STORAGES[0].numpy().tofile('PWNED')", "the attribute 'tofile'"),
    ("torch.save(STORAGES, 'PWNED')", "the attribute 'save'"),
    ("import os", "import ['os']"),
    ("from os import system", "import ['system']"),
    ("x = (" * 300 + ")" * 300, "not be valid Python"),
])
def test_the_rendered_script_is_checked_for_code_that_is_not_its_own(honest, code, problem):
    """Defense in depth, behind the checks of every value: what the template does not use is refused."""
    script, extra = honest[1], {"add", "float32"}  # torch.add, torch.float32: the case's op and dtype
    assert _vocabulary_problem(script, extra) is None
    assert problem in _vocabulary_problem(f"{script}\n{code}\n", extra)


# A custom suite (a manifest's custom_test_dirs): a scenario property and an OpInfo property the exporter
# has no script for. `torchcts replay --export-script` loads it from --manifest (or ./manifest.py).
CUSTOM_SUITE = '''
from torchcts.plan.registry import OpInfoItems, ScenarioItems, register_property


@register_property("export_corner", capability="inference", level=1, items=ScenarioItems(["corner"], ["float32"]))
def test_export_corner(cts):
    pass


@register_property("export_custom", capability="inference", level=1, items=OpInfoItems())
def test_export_custom(cts):
    pass
'''


@pytest.fixture
def custom_manifest(tmp_path, monkeypatch):
    """A manifest whose custom_test_dirs holds CUSTOM_SUITE; the registry is restored afterwards."""
    from torchcts.manifest.templates import render_template

    registry.load()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "test_export_custom.py").write_text(CUSTOM_SUITE)
    path = tmp_path / "manifest.py"
    path.write_text(render_template("minimal", device_name="cpu") + '\nmanifest["custom_test_dirs"] = ["suites"]\n')
    return path


def one_line_error(result) -> str:
    assert result.exit_code == 2 and result.stdout == "", result.output
    line = result.stderr.rstrip("\n")
    assert "\n" not in line and "Traceback" not in line, result.stderr
    return line


def test_a_scenario_case_is_refused_naming_the_property(honest, custom_manifest, tmp_path):
    """A scenario's check is suite code: nothing to export; the error says how to reproduce it instead."""
    case = changed(changed(changed(honest[0], ("property",), "export_corner"), ("op",), "corner"),
                   ("variant",), "scenario")
    line = one_line_error(export_cli("--export-script", str(write(tmp_path, case)), "--manifest",
                                     str(custom_manifest)))
    assert ": property: export_corner is a scenario property" in line and "torchcts replay FILE" in line, line


def test_a_property_the_exporter_cannot_recreate_is_refused(honest, custom_manifest, tmp_path, monkeypatch):
    """A custom OpInfo property (found through ./manifest.py) gets no guessed script."""
    monkeypatch.chdir(tmp_path)
    case = write(tmp_path, changed(honest[0], ("property",), "export_custom"))
    line = one_line_error(export_cli("--export-script", str(case)))
    assert ": property: export supports forward, backward, layout" in line and "export_custom is not exportable" in line


def test_a_property_no_suite_registers_is_refused(honest, tmp_path):
    line = one_line_error(export_cli("--export-script", str(write(tmp_path, changed(honest[0], ("property",),
                                                                                    "no_such_property")))))
    assert ": property: 'no_such_property'; known: " in line and "forward" in line, line
