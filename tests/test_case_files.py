"""Corpus case files: exact round trips of inputs, deduplication, and clear errors for bad files."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.codec import CodecError, Decoder, Encoder
from torchcts.cases.files import CaseFileError, load_case, new_case, write_case
from torchcts.strategies import fingerprint, nested_tensors, sparse_tensors, tensors


def round_trip(value):
    encoder = Encoder()
    data = json.loads(json.dumps({"value": encoder.value(value), "storages": encoder.storages}))
    return Decoder(data["storages"]).value(data["value"])


@settings(max_examples=60)
@given(st.sampled_from([torch.float32, torch.bfloat16, torch.int32, torch.bool, torch.complex64, torch.float16])
       .flatmap(lambda dtype: tensors(dtype, max_dims=4)))
def test_dense_tensors_round_trip_exactly(t):
    back = round_trip(t)
    assert (back.shape, back.stride(), back.storage_offset(), back.dtype) == \
        (t.shape, t.stride(), t.storage_offset(), t.dtype)
    assert fingerprint(back) == fingerprint(t)  # bit-exact over everything the view reaches


def test_nan_payloads_negative_zero_and_gaps_survive():
    bits = torch.tensor([0x7FC00001, 0x7F800001, -2147483648, 0x3F800000, 7], dtype=torch.int32)
    t = bits.view(torch.float32)[::2]  # NaN payload, -0.0, 1.0 as a strided view that skips elements
    back = round_trip(t)
    assert back.stride() == (2,)
    assert torch.equal(torch.as_strided(back, (5,), (1,), 0).view(torch.int32), bits)


def test_tensors_sharing_a_storage_share_it_again():
    x = torch.arange(6.0)
    a, b = round_trip([x, x[2:4]])
    assert a.untyped_storage()._cdata == b.untyped_storage()._cdata and b.storage_offset() == 2


@settings(max_examples=30)
@given(st.one_of(sparse_tensors(torch.float32), nested_tensors(torch.float32)))
def test_sparse_and_nested_tensors_round_trip(t):
    back = round_trip(t)
    assert back.layout == t.layout and back.is_nested == t.is_nested and back.dtype == t.dtype
    if t.is_nested:
        assert all(torch.equal(a, b) for a, b in zip(back.unbind(), t.unbind()))
    else:
        assert torch.equal(back.to_dense(), t.to_dense())


def test_plain_arguments_round_trip():
    values = [3, 2**62 + 1, 0.1, float("nan"), -0.0, float("-inf"), 1 + 2j, "mean", None, True, torch.bfloat16,
              torch.channels_last, (1, (2,)), [slice(1, None, 2), Ellipsis], {"dim": -1}, torch.Size([2, 3])]
    back = round_trip(values)
    assert repr(back) == repr(values)
    assert type(back[12]) is tuple and type(back[12][1]) is tuple


def test_values_with_no_exact_form_are_refused():
    with pytest.raises(CodecError, match="inputs.*function"):
        Encoder().value([lambda: 0])


def sample_case(**changes):
    sample = SampleInput(torch.tensor([1.0, -2.0]), args=(torch.tensor([3.0, 4.0]),), kwargs={"alpha": 2})
    fields = dict(prop="forward", op="add", variant="function", dtype="float32", device_type="faulty",
                  backend=None, sample=sample, failure={"message": "differs"}, found={"item_seed": 1})
    return new_case(**{**fields, **changes})


def test_same_failure_is_one_file(tmp_path):
    first, new = write_case(tmp_path, sample_case())
    again, new_again = write_case(tmp_path, sample_case(found={"item_seed": 2}))
    assert new and not new_again and first == again and len(list(tmp_path.iterdir())) == 1
    _, other = write_case(tmp_path, sample_case(prop="layout"))
    assert other  # another property is another case


def test_a_written_case_loads_back(tmp_path):
    path, _ = write_case(tmp_path, sample_case())
    case = load_case(path)
    assert (case.property, case.op, case.status) == ("forward", "add", "open")
    sample = case.sample()
    assert torch.equal(sample.input, torch.tensor([1.0, -2.0])) and sample.kwargs == {"alpha": 2}


@pytest.mark.parametrize("damage, field", [
    (lambda text: text[: len(text) // 2], r"\(file\)"),
    (lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "op"}), "op"),
    (lambda text: json.dumps({**json.loads(text), "status": "closed"}), "status"),
    (lambda text: json.dumps({**json.loads(text), "schema_version": 99}), "schema_version"),
])
def test_malformed_files_name_the_file_and_field(tmp_path, damage, field):
    path, _ = write_case(tmp_path, sample_case())
    path.write_text(damage(path.read_text()))
    with pytest.raises(CaseFileError, match=rf"{path.name}: {field}"):
        load_case(path)


def test_damaged_storages_are_named_when_rebuilt(tmp_path):
    path, _ = write_case(tmp_path, sample_case())
    data = json.loads(path.read_text())
    data["storages"][0]["base64"] = data["storages"][0]["base64"][:-4]
    path.write_text(json.dumps(data))
    with pytest.raises(CaseFileError, match=r"storages\[0\]\.base64"):
        load_case(path).sample()
    data["inputs"]["input"]["storage_offset"] = 5
    path.write_text(json.dumps(data))
    with pytest.raises(CaseFileError, match="storage"):
        load_case(path).sample()


def test_the_builtin_replay_takes_the_curated_cases_of_its_compile_backend(tmp_path, monkeypatch):
    """A curated case found under torch.compile(backend=B) is wrong only there: --builtin replays it only under B."""
    from torchcts.cases import files

    curated = [json.loads(path.read_text()) for path in sorted(files.builtin_corpus().glob("*.json"))]
    data = next(case for case in curated if case["backend"] is None)  # a curated case of an eager backend
    (tmp_path / "eager.json").write_text(json.dumps(data))
    (tmp_path / "inductor.json").write_text(json.dumps({**data, "backend": "inductor"}))
    monkeypatch.setattr(files, "builtin_corpus", lambda: tmp_path)
    assert [p.name for p in files.builtin_cases(None)] == ["eager.json"]
    assert [p.name for p in files.builtin_cases("inductor")] == ["inductor.json"]
    assert files.builtin_cases("aot_eager") == []
