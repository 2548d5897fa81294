"""Hostile corpus cases: loading is bounded, and an unreadable case is one line, never a traceback.

Issue 13, classes 2 and 3. A case over a limit (storage bytes, tensor bytes, file size, JSON
values, nesting) or malformed anywhere is that case's `error` naming the file, the field and the
limit; the rest of the replay runs, and `torchcts replay` exits 2.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
import threading

import pytest
import torch
from click.testing import CliRunner
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.codec import CodecError, Decoder
from torchcts.cases.files import CaseFileError, builtin_corpus, load_case, new_case
from torchcts.core.case_limits import DEFAULT_MAX_CASE_BYTES, CaseLimits, byte_count
from torchcts.cli.main import cli
from torchcts.cases.replay_items import UnreadableCase, replay_items, replayable
from torchcts.results.writer import read_records
from tests import warm_programs

GOOD = builtin_corpus() / "1a45b7bf807e21d3b062d838.json"  # errors::index_add; replays on cpu in well under a second


def abs_case(tensor: torch.Tensor) -> dict:
    """A forward::abs case file's JSON for one input tensor."""
    case = new_case(prop="forward", op="abs", variant="function", dtype="float32", device_type="cpu", backend=None,
                    sample=SampleInput(tensor), failure={"outcome": "failed", "message": "m"}, found={})
    return case.as_json()


BASE = abs_case(torch.tensor([1.0, -2.0, 3.0]))


def mutated(change) -> dict:
    data = copy.deepcopy(BASE)
    change(data)
    return data


def loaded(tmp_path, data, limits: CaseLimits = CaseLimits(), name: str = "case.json"):
    """Load and decode a case file as a replay does; the error message, or None when it loads."""
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    try:
        load_case(path, limits).sample(limits)
    except CaseFileError as exc:
        return str(exc)
    return None


def view(**fields):
    return lambda data: data["inputs"]["input"].update(fields)


def storage(**fields):
    return lambda data: data["storages"][0].update(fields)


def arg(value):
    return lambda data: data["inputs"].update(args=[value])


def tensor_input(value):
    return lambda data: data["inputs"].update(input=value)


def strided(sizes, strides, storage_index=0, dtype="float32"):
    return {"tensor": "strided", "dtype": dtype, "sizes": sizes, "strides": strides, "storage_offset": 0,
            "storage": storage_index, "requires_grad": False, "device": None}


# -- limits: oversized views, storages, sparse and nested sizes -------------------------------------

@pytest.mark.parametrize("change, expected", [
    # the 724-byte case of the issue: a stride-0 expansion counts at its full size
    (view(sizes=[250_000_000], strides=[0]),
     r"inputs\.input\.sizes: 250000000 elements x 4 bytes = 1\.0 GB exceeds --max-case-bytes 67108864"),
    (view(sizes=[100_000, 100_000, 100_000], strides=[0, 0, 0]), r"inputs\.input\.sizes: 10{15} elements"),
    (storage(base64=None, elements=500_000_000),
     r"storages\[0\]\.elements: 500000000 elements x 4 bytes = 2\.0 GB exceeds --max-case-bytes 67108864"),
    (storage(base64=None, elements=2**62), r"storages\[0\]\.elements: .* exceeds --max-case-bytes"),
    (tensor_input({"tensor": "sparse_coo", "dtype": "float32", "sizes": [10**9, 10**9], "coalesced": True,
                   "indices": strided([2, 0], [1, 1]), "values": strided([0], [1])}),
     r"inputs\.input\.sizes: 10{18} elements x 4 bytes .* exceeds --max-case-bytes"),
    (tensor_input({"tensor": "sparse_csr", "dtype": "float32", "sizes": [2**40, 2**40],
                   "compressed_indices": strided([1], [1]), "plain_indices": strided([0], [1]),
                   "values": strided([0], [1])}), r"inputs\.input\.sizes: .* exceeds --max-case-bytes"),
])
def test_a_case_over_the_byte_limit_is_refused_naming_field_and_limit(tmp_path, change, expected):
    message = loaded(tmp_path, mutated(change))
    assert message is not None and message.startswith(f"{tmp_path / 'case.json'}: ")
    assert re.search(expected, message), message


def test_tensors_are_summed_across_the_case(tmp_path):
    """Each view is under the limit, together they are not: the message says which one crossed it."""
    limits = CaseLimits(max_case_bytes=4096)
    quarter = strided([700], [0])  # 2800 bytes of float32 from one element
    data = mutated(lambda d: d["inputs"].update(input=quarter, args=[quarter]))
    message = loaded(tmp_path, data, limits)
    assert "inputs.input.sizes: 700 elements x 4 bytes = 2.8 kB brings the case's tensors to 5.6 kB, " \
           "over --max-case-bytes 4096" in message  # args are decoded first


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_nested_components_count_and_many_components_stay_bounded(tmp_path):
    component = strided([1], [1])
    nested = {"tensor": "nested", "dtype": "float32", "nested_layout": "strided", "requires_grad": False,
              "components": [component] * 5000}
    assert loaded(tmp_path, mutated(tensor_input(nested))) is None  # 5,000 small components: fine
    big = dict(nested, components=[strided([600], [0])] * 4)
    message = loaded(tmp_path, mutated(tensor_input(big)), CaseLimits(max_case_bytes=8192))
    assert "inputs.input.components" in message and "over --max-case-bytes 8192" in message


def test_the_limit_is_a_bound_not_a_guess(tmp_path):
    """Exactly at the limit loads; one element more does not; --max-case-bytes raises it."""
    limit = 4 * 1000
    at_limit = mutated(view(sizes=[1000], strides=[0]))
    assert loaded(tmp_path, at_limit, CaseLimits(max_case_bytes=limit)) is None
    over = mutated(view(sizes=[1001], strides=[0]))
    assert "exceeds --max-case-bytes 4000" in loaded(tmp_path, over, CaseLimits(max_case_bytes=limit))
    assert loaded(tmp_path, over, CaseLimits(max_case_bytes="1M")) is None


# -- malformed fields: every one named, no torch error or Python exception escapes -----------------

@pytest.mark.parametrize("change, field", [
    (view(sizes=[-3]), r"inputs\.input\.sizes\[0\]: expected an integer from 0"),
    (view(strides=[-1]), r"inputs\.input\.strides\[0\]"),
    (view(storage_offset=-1), r"inputs\.input\.storage_offset"),
    (view(storage_offset=2**70), r"inputs\.input\.storage_offset"),
    (view(sizes=[3.0]), r"inputs\.input\.sizes\[0\]: .* got 3\.0"),
    (view(sizes=[True]), r"inputs\.input\.sizes\[0\]: .* got True"),
    (view(sizes=["3"]), r"inputs\.input\.sizes\[0\]: .* got '3'"),
    (view(sizes=3), r"inputs\.input\.sizes: expected a list"),
    (view(sizes=[1] * 65, strides=[1] * 65), r"inputs\.input\.sizes: 65 entries; a tensor has at most 64"),
    (view(storage=True), r"inputs\.input\.storage: no storage True"),
    (view(storage=-1), r"inputs\.input\.storage: no storage -1"),
    (view(sizes=[4]), r"inputs\.input\.storage_offset: the view reaches element 3 of a storage of 3"),
    (storage(elements="3"), r"storages\[0\]\.elements: .* got '3'"),
    (storage(elements=2.5), r"storages\[0\]\.elements"),
    (storage(base64=7), r"storages\[0\]\.base64: a int for 3 elements"),
    (storage(base64="A" * 10**6), r"storages\[0\]\.base64: 1000000 characters for 3 elements"),
    (storage(base64="!!!!!!!!!!!!!!!!"), r"storages\[0\]\.base64: not base64"),
    (arg({"int": "9" * 100_000}), r"inputs\.args\[0\]: malformed int value .*\(100002 characters\).*4300 digits"),
    (arg({"int": 5.5}), r"inputs\.args\[0\]: malformed int value"),
    (arg({"float": "0x1." + "f" * 10}), None),  # a long hex float is a float
    (arg({"float": "x" * 100_000}), r"inputs\.args\[0\]: malformed float value"),
    (arg({"complex": []}), r"inputs\.args\[0\]: malformed complex value \[\]"),
    (arg({"size": [10**30]}), r"inputs\.args\[0\]\.size\[0\]: expected a 64-bit integer"),
    (arg({"size": [2.5]}), r"inputs\.args\[0\]\.size\[0\]"),
    (arg({"slice": [1, 2, 3, 4]}), r"inputs\.args\[0\]: malformed slice value"),
    (arg({"device": 0}), r"inputs\.args\[0\]: malformed device value"),
    (arg({"tuple": 5}), r"inputs\.args\[0\]: malformed tuple value"),
    (arg({f"k{i}": i for i in range(100_000)}), r"inputs\.args\[0\]: unknown value kind in \['k0'"),
    (tensor_input({"tensor": "nested", "dtype": "float32", "nested_layout": "strided", "components": 5}),
     r"inputs\.input\.components: expected a list"),
    (tensor_input({"tensor": "nested", "dtype": "float32", "nested_layout": "strided",
                   "components": [{"tensor": "nested", "dtype": "float32", "nested_layout": "strided",
                                   "components": []}]}), r"inputs\.input: cannot rebuild the tensor"),
    (tensor_input({"tensor": "sparse_coo", "dtype": "float32", "sizes": [2], "coalesced": True,
                   "indices": {**strided([1, 1], [1, 1]), "storage_offset": 2}, "values": strided([1], [1])}),
     r"inputs\.input: cannot rebuild the tensor: size is inconsistent"),  # index 3 of 2: torch's check
])
def test_malformed_fields_are_named_in_one_short_line(tmp_path, change, field):
    message = loaded(tmp_path, mutated(change))
    if field is None:
        assert message is None
        return
    assert message is not None and re.search(field, message), message
    assert "\n" not in message and len(message) < 600, message


def test_names_and_values_from_the_file_cannot_break_the_line(tmp_path):
    data = mutated(lambda d: d["inputs"].update(kwargs={"dict": {"a\nb\x1b[31m": {"zz": 1}}},
                                                args=[{"device": "\x1b[2Jcuda\nX"}]))
    message = loaded(tmp_path, data, name="bad\nname.json")
    assert "\n" not in message and "\x1b" not in message and "bad\\nname.json" in message


# -- the file itself: size, JSON values, nesting, not a file -----------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("[" * 100_000, r"\(file\): JSON nested deeper than 100 levels"),
    ('{"a":' * 100_000, r"\(file\): JSON nested deeper than 100 levels"),
    ("[" * 150 + "]" * 150, r": (\[0\])+\.\.\.: JSON nested deeper than 100 levels"),  # parses, then measured
    ("[" + "[]," * 100_000 + "[]]", r"\(file\): up to 300005 JSON values; a case may have at most 262144 "
                                    r"\(--max-case-bytes 67108864 / 256\)"),
    ('{"x": ' + "9" * 5000 + "}", r"\(file\): not JSON .*4300 digits"),
    (b'{"a": "\xff"}', r"\(file\): not UTF-8 text"),
    ("", r"\(file\): not JSON"),
])
def test_hostile_json_files_are_refused_before_they_cost_anything(tmp_path, text, expected):
    path = tmp_path / "case.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(CaseFileError, match=expected):
        load_case(path)


def test_deep_args_nesting_names_the_field(tmp_path):
    deep = 0
    for _ in range(60):  # 120 JSON levels below `args`
        deep = {"tuple": [deep]}
    message = loaded(tmp_path, mutated(arg(deep)))
    assert message.split(": ")[1].startswith("inputs.args[0].tuple[0]") and "nested deeper than 100" in message


def test_the_decoder_bounds_nesting_without_json():
    """Values built in Python (no parser in front) cannot overflow the stack either."""
    deep: object = [1]
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(CodecError, match=r"inputs(\[0\])+.*\.\.\.: values nested deeper than 100 levels"):
        Decoder([]).value(deep)


def test_a_file_over_the_size_limit_is_not_read(tmp_path):
    path = tmp_path / "case.json"
    path.write_text(json.dumps(dict(BASE, description="x" * (2**20 + 10_000))))
    with pytest.raises(CaseFileError, match=r"\(file\): 1\.1 MB; a case file may have at most 1056768 bytes "
                                            r"\(2 x --max-case-bytes 4096 \+ 1 MiB\)"):
        load_case(path, CaseLimits(max_case_bytes=4096))
    assert load_case(path).fingerprint == BASE["fingerprint"]


def test_a_fifo_or_device_named_json_does_not_block(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    results = []
    reader = threading.Thread(target=lambda: results.extend(replay_items([tmp_path])), daemon=True)
    reader.start()
    reader.join(timeout=120)  # a safety net only: a blocking open would never return
    assert not reader.is_alive()
    assert [(item.path.split("/")[-1], item.problem) for item in results] == [
        ("fifo.json", ("(file)", "not a regular file")), ("zero.json", ("(file)", "not a regular file"))]


# -- replay items: checked up front, one line each ----------------------------------------------------

def test_replay_items_check_every_file_before_anything_runs(tmp_path):
    (tmp_path / "good.json").write_text(GOOD.read_text())
    (tmp_path / "garbage.json").write_text("not json")
    (tmp_path / "huge.json").write_text(json.dumps(mutated(view(sizes=[250_000_000], strides=[0]))))
    (tmp_path / "sizes.json").write_text(json.dumps(mutated(view(sizes="x"))))  # loads, fails only when decoded
    (tmp_path / "variant.json").write_text(json.dumps(dict(BASE, variant="x\x1b[2J")))  # it would name the item
    (tmp_path / "folder.json").mkdir()  # not a case file: skipped
    items = {item.path.split("/")[-1]: item for item in replay_items([tmp_path])}
    assert sorted(items) == ["garbage.json", "good.json", "huge.json", "sizes.json", "variant.json"]
    assert items["variant.json"].problem == ("variant", "'x\\x1b[2J'; forward cases are 'function'")
    assert items["good.json"].problem is None and items["good.json"].property == "errors"
    assert items["huge.json"].problem[0] == "inputs.input.sizes"
    assert items["sizes.json"].problem == ("inputs.input.sizes", "expected a list of integers, got 'x'")
    with pytest.raises(UnreadableCase) as raised:
        replayable(items["garbage.json"])
    assert isinstance(raised.value, CaseFileError)  # an error record; the plugin shows it as one line (pytrace=False)
    assert str(raised.value).startswith(f"{tmp_path / 'garbage.json'}: (file): not JSON")
    assert replay_items([tmp_path], CaseLimits(max_case_bytes="1G"))[2].problem is None  # huge.json, admitted


def test_byte_counts_and_the_documented_default():
    assert byte_count("64M") == DEFAULT_MAX_CASE_BYTES == CaseLimits().max_case_bytes
    assert (byte_count("1g"), byte_count("512K"), byte_count(" 4096 ")) == (2**30, 2**19, 4096)
    for bad in ("0", "-1", "1.5G", "lots", "", True):
        with pytest.raises(ValueError, match="positive number of bytes"):
            byte_count(bad)
    help_text = " ".join(CliRunner().invoke(cli, ["replay", "--help"]).output.split())
    assert "default 64M" in help_text and "--max-case-bytes N" in help_text


def test_replay_rejects_a_bad_limit_in_one_line(tmp_path):
    result = CliRunner().invoke(cli, ["replay", str(tmp_path), "--device", "cpu", "--max-case-bytes", "-5"])
    assert result.exit_code == 2 and "--max-case-bytes" in result.output and "Traceback" not in result.output


# -- end to end: a folder of good, garbage and oversized cases ---------------------------------------

def hostile_folder(tmp_path):
    """A corpus folder: one good case and five bad files; (the folder, what each bad file's line says)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "good.json").write_text(GOOD.read_text())
    (folder / "garbage.json").write_text("\x00\x01 garbage")
    (folder / "bomb.json").write_text("[" * 20_000)  # few enough values that its depth is what refuses it
    (folder / "expand.json").write_text(json.dumps(mutated(view(sizes=[250_000_000], strides=[0]))))
    (folder / "null.json").write_text(json.dumps(mutated(storage(base64=None, elements=500_000_000))))
    deep = '{"tuple": [' * 500 + "0" + "]}" * 500  # 1,000 levels: too deep for Python's json to write
    (folder / "deep.json").write_text(json.dumps(mutated(arg("DEEP"))).replace('"DEEP"', deep))
    return folder, {"garbage.json": "(file): not JSON", "bomb.json": "(file): JSON nested deeper than 100",
                    "expand.json": "inputs.input.sizes: 250000000 elements x 4 bytes = 1.0 GB exceeds --max-case-bytes",
                    "null.json": "storages[0].elements: 500000000 elements x 4 bytes = 2.0 GB exceeds --max-case-bytes",
                    "deep.json": "(file): JSON nested deeper than 100 levels"}


@pytest.mark.slow
def test_replay_runs_the_good_case_and_lists_each_bad_file_once(tmp_path):
    folder, expected = hostile_folder(tmp_path)
    result = warm_programs.run([sys.executable, "-m", "torchcts", "replay", str(folder), "--device", "cpu",
                             "--results-dir", str(tmp_path / "results"), "--max-case-bytes", "1M"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-3000:]
    assert "Traceback" not in output and "INTERNALERROR" not in output
    lines = [line for line in result.stdout.splitlines() if line.startswith("unreadable")]
    assert len(lines) == len(expected), lines
    for name, message in expected.items():
        assert [line for line in lines if f"{folder / name}: {message}" in line], (name, lines)
    assert [line for line in lines if line.endswith("exceeds --max-case-bytes 1048576")]
    assert [line for line in result.stdout.splitlines() if line.startswith("now passing")]
    assert f"{len(expected) + 1} cases, 0 still failing, 0 regressions, {len(expected)} unreadable" in result.stdout
    records = read_records(next((tmp_path / "results").glob("*/run.json")).parent)
    bad = {r["case"]["path"].split("/")[-1]: r for r in records if r["case"]["unreadable"]}
    assert sorted(bad) == sorted(expected) and all(r["outcome"] == "error" for r in bad.values())
    assert bad["expand.json"]["case"]["unreadable"].startswith("inputs.input.sizes: ")


@pytest.mark.slow
def test_pytest_front_end_records_unreadable_files_without_tracebacks(tmp_path):
    folder, expected = hostile_folder(tmp_path)
    (folder / "medium.json").write_text(json.dumps(mutated(view(sizes=[1000], strides=[0]))))  # 4 kB of view
    expected["medium.json"] = "inputs.input.sizes: 1000 elements x 4 bytes = 4.0 kB exceeds --max-case-bytes 1024"
    result = warm_programs.run([sys.executable, "-m", "pytest", "--pyargs", "torchcts.properties", "-p",
                             "no:cacheprovider", "--replay", str(folder), "--device", "cpu", "--results-dir",
                             str(tmp_path / "results"), "--max-case-bytes", "1K"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]  # the unreadable files are errors
    assert "Traceback" not in output and "INTERNALERROR" not in output, output[-3000:]
    assert not re.search(r"\.py:\d+", output), output[-3000:]  # no source location of a traceback entry
    records = read_records(next((tmp_path / "results").glob("*/run.json")).parent)
    by_name = {r["case"]["path"].split("/")[-1]: r for r in records}
    assert by_name["good.json"]["outcome"] == "passed"
    for name, message in expected.items():
        record = by_name[name]
        assert record["outcome"] == "error" and record["case"]["unreadable"] in message + record["case"]["unreadable"]
        assert record["error"].startswith(f"UnreadableCase: {folder / name}: {message}"), record["error"]
        assert f"{folder / name}: {message}" in output  # pytest's one line for the item
