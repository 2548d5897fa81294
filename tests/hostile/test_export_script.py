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

from torchcts.case_files import CaseFileError, new_case, save_case
from torchcts.cli import cli
from torchcts.export_script import _inert, export_script

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


def honest_case(prop: str = "forward", op: str = "add", sample: SampleInput | None = None,
                description: str = "") -> dict:
    """A valid case (as its JSON) for `op`, with a view at an offset among its inputs."""
    if sample is None:
        x = torch.arange(8.0).view(2, 4)[:, 1:3]
        sample = SampleInput(x, args=(torch.tensor([[1.0, 2.0]]),), kwargs={"alpha": 2})
    case = new_case(prop=prop, op=op, variant="function", dtype="float32", device_type="cpu", backend=None,
                    sample=sample, failure={"message": "differs"}, found={"torch": torch.__version__},
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
    """Run `python repro.py cpu` in an empty `folder`; fails if it leaves any file behind."""
    folder.mkdir()
    path = folder / "repro.py"
    path.write_text(script)
    result = subprocess.run([sys.executable, str(path), "cpu"], cwd=folder, capture_output=True, text=True,
                            timeout=300)
    assert sorted(p.name for p in folder.iterdir()) == ["repro.py"], result.stdout + result.stderr
    return result


def export_cli(*args: str) -> object:
    return CliRunner().invoke(cli, ["replay", *args])


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    """(the honest case's JSON, its exported script)."""
    data = honest_case()
    return data, export_script(write(tmp_path_factory.mktemp("honest"), data))


# -- values that are data: exported, and inert ------------------------------------------------

INERT = {
    **{f"description-{name}": (("description",), text) for name, text in BREAKOUTS.items()},
    "failure.message": (("failure", "message"), EVERYTHING),
    "failure.message-not-text": (("failure", "message"), {"a": [EVERYTHING]}),
    "failure.outcome": (("failure", "outcome"), EVERYTHING),
    "found.torch": (("found", "torch"), EVERYTHING),
    "found.date": (("found", "date"), EVERYTHING),
    "fingerprint": (("fingerprint",), '"""\\\n' + PAYLOAD),
    "variant": (("variant",), EVERYTHING),
    "kwargs-key": (("inputs", "kwargs", "dict", EVERYTHING), 1),
    "string-argument": (("inputs", "args", 1), EVERYTHING),
    "slice-of-strings": (("inputs", "args", 1), {"slice": [EVERYTHING, None, EVERYTHING]}),
    "nested-lists": (("inputs", "args", 1), json.loads("[" * 90 + json.dumps(EVERYTHING) + "]" * 90)),
}


@pytest.mark.parametrize("where, value", INERT.values(), ids=INERT.keys())
def test_text_from_the_case_is_exported_as_data(honest, tmp_path, where, value):
    data, honest_script = honest
    script = export_script(write(tmp_path, changed(data, where, value)))
    assert script.isascii() and "\x00" not in script
    assert vocabulary(script) <= vocabulary(honest_script)  # no name, attribute or import of its own
    assert "PWNED" not in code_without_strings(script)  # the payload is only ever a string
    result = run_script(script, tmp_path / "run")
    plain = where[0] in ("description", "failure", "found", "fingerprint", "variant")
    assert result.returncode == (0 if plain else 1), result.stdout + result.stderr
    if plain:
        assert "not reproduced on cpu" in result.stdout


def test_the_docstring_says_the_description_exactly(tmp_path):
    description = '"\'"\'"""\\ first\nsecond \\N{BULLET} \u00e9\u2028x'
    script = export_script(write(tmp_path, honest_case(description=description)))
    assert f"\n{description.splitlines()[0]}\n{description.splitlines()[1]}\n" in ast.get_docstring(script)


def test_error_fields_of_an_errors_case_stay_out_of_the_script(tmp_path):
    data = honest_case("errors")
    data["inputs"].update(error_type=PAYLOAD, error_regex=EVERYTHING)
    script = export_script(write(tmp_path, data))
    assert "PWNED" not in script
    assert "CPU accepts this input" in run_script(script, tmp_path / "run").stdout


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
    result = export_cli("--export-script", str(write(tmp_path, honest[0])), "--device", device)
    assert result.exit_code == 2 and "--device" in result.stderr and result.stderr.count("\n") == 1, result.output


# -- honest cases still export as before ------------------------------------------------------

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


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("prop, op", [("forward", "add"), ("layout", "add"), ("errors", "add"), ("out", "add"),
                                      ("backward", "add"), ("inplace", "add"), ("inplace", "nn.functional.elu"),
                                      ("forward", "__radd__"), ("forward", "div.floor_rounding")])
def test_honest_cases_of_every_property_and_input_kind_export(tmp_path, prop, op):
    """The exporter's vocabulary check accepts everything an honest case holds."""
    for i, sample in enumerate(every_kind_of_input() if prop == "forward" and op == "add" else [None]):
        script = export_script(write(tmp_path, honest_case(prop, op, sample), f"{i}.json"))
        compile(script, f"{i}.py", "exec")


@pytest.mark.parametrize("prop, op", [("inplace", "nn.functional.elu"), ("forward", "__radd__")])
def test_scripts_for_ops_without_a_tensor_method_run(tmp_path, prop, op):
    """An in-place variant that is a lambda, and an op without torch.<name>, come from torch's OpInfo."""
    sample = SampleInput(torch.tensor([[1.0, -2.0], [3.0, 4.0]]), args=(2.0,) if op == "__radd__" else ())
    script = export_script(write(tmp_path, honest_case(prop, op, sample)))
    result = run_script(script, tmp_path / "run")
    assert result.returncode == 0 and "not reproduced" in result.stdout, result.stdout + result.stderr
