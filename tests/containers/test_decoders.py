"""`torchcts.containers.decoders`: loading a manifest's decoder entry and checking what a decoder returns; every way
an entry or its result breaks the contract is a DecoderError naming the format and the path."""

from __future__ import annotations

import itertools

import pytest
import torch

from torchcts.containers import Container, decode, pack_codes, reference_decoders
from torchcts.containers.decoders import DecoderError, check_result, entry, load

_counter = itertools.count()


def _module(tmp_path, monkeypatch, source: str) -> str:
    """A fresh importable module holding `source`; its name."""
    name = f"decoder_module_{next(_counter)}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_the_reference_decoder_loads_and_decodes_as_the_codec():
    container = Container("int4_symmetric", pack_codes([1, 15, 7], 4), torch.tensor(0.5), None, (3,))
    decoder = load("int4_symmetric", reference_decoders.path("int4_symmetric"))
    result = decoder(container.packed, container.scale, None, [3], torch.float32, torch.device("cpu"))
    assert result.tolist() == decode(container).tolist() == [0.5, -0.5, 3.5]


def test_a_dotted_attribute_is_walked(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "class Decoders:\n    @staticmethod\n    def nf4(*args):\n        return 1\n")
    assert load("nf4", f"{name}:Decoders.nf4")() == 1


@pytest.mark.parametrize("path", ["no_colon", ":decode", "module:", ""])
def test_a_path_not_of_the_module_function_form_is_refused(path):
    with pytest.raises(DecoderError, match="not a 'module:function' path") as raised:
        load("uint4", path)
    assert str(raised.value).startswith(entry("uint4", path))


@pytest.mark.parametrize("source, said", [
    ("raise ImportError('libvendor.so: cannot open shared object file')\n",
     "does not import: ImportError: libvendor.so: cannot open shared object file"),
    ("1 / 0\n", "does not import: ZeroDivisionError: division by zero"),
    ("def broken(:\n", "does not import: SyntaxError"),
])
def test_a_module_that_does_not_import_is_named_with_why(tmp_path, monkeypatch, source, said):
    name = _module(tmp_path, monkeypatch, source)
    with pytest.raises(DecoderError) as raised:
        load("nf4", f"{name}:decode")
    message = str(raised.value)
    assert message.startswith(f"custom_container_decoders['nf4'] = '{name}:decode': module '{name}'"), message
    assert said in message, message


def test_a_missing_module_is_named():
    with pytest.raises(DecoderError, match="module 'torchcts_no_such_vendor' does not import: ModuleNotFoundError"):
        load("nf4", "torchcts_no_such_vendor:decode")


def test_a_missing_attribute_names_how_far_the_path_was_found(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "class Decoders:\n    pass\n")
    with pytest.raises(DecoderError, match=rf"{name}:Decoders has no attribute 'nf4'$"):
        load("nf4", f"{name}:Decoders.nf4")
    with pytest.raises(DecoderError, match=rf"{name} has no attribute 'decoders'$"):
        load("nf4", f"{name}:decoders.nf4")


def test_an_attribute_that_is_not_callable_is_refused(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, "decode = {'nf4': 'table'}\n")
    with pytest.raises(DecoderError, match=rf"{name}:decode is a dict, not a callable$"):
        load("nf4", f"{name}:decode")


# -- check_result -----------------------------------------------------------------------------------

CPU = torch.device("cpu")


def test_a_result_that_keeps_the_contract_is_returned_as_it_is():
    result = torch.zeros(2, 3, dtype=torch.bfloat16)
    assert check_result("nf4", "m:f", result, (2, 3), torch.bfloat16, CPU) is result
    strided = torch.zeros(3, 2).t()  # any strides: the contract asks for a dense tensor, not a contiguous one
    assert check_result("nf4", "m:f", strided, (2, 3), torch.float32, CPU) is strided


@pytest.mark.parametrize("result, said", [
    ([0.0, 1.0], "returned a list, not a tensor"),
    (None, "returned a NoneType, not a tensor"),
    (torch.zeros(2, 3).to_sparse(), "returned a torch.sparse_coo tensor, not a dense one"),
    (torch.zeros(3, 2), "returned shape [3, 2] for shape [2, 3]"),
    (torch.zeros(6), "returned shape [6] for shape [2, 3]"),
    (torch.zeros(2, 3, dtype=torch.float64), "returned torch.float64 when asked for torch.float32"),
    (torch.zeros(2, 3, device="meta"), "returned a tensor on meta, not on cpu"),
])
def test_a_result_that_breaks_the_contract_is_named(result, said):
    with pytest.raises(DecoderError) as raised:
        check_result("uint4", "vendor.quant:decode_uint4", result, (2, 3), torch.float32, CPU)
    assert str(raised.value) == f"custom_container_decoders['uint4'] = 'vendor.quant:decode_uint4': {said}"


def test_a_result_on_another_index_of_the_device_is_refused():
    from torchcts.testing import faulty  # noqa: F401 - registers the device (two devices by default)

    on_second = torch.zeros(2, device="faulty:1")
    with pytest.raises(DecoderError, match="returned a tensor on faulty:1, not on faulty:0"):
        check_result("nf4", "m:f", on_second, (2,), torch.float32, torch.device("faulty:0"))
    assert check_result("nf4", "m:f", on_second, (2,), torch.float32, torch.device("faulty")) is on_second
