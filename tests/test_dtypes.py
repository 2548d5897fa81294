"""Dtype names: every spelling resolves to one canonical dtype; unclaimable dtypes stay out."""

import torch

from torchcts import dtypes


def test_lookup_accepts_dtypes_names_aliases_and_torch_prefix():
    assert dtypes.lookup(torch.float16) is torch.float16
    assert dtypes.lookup("float16") is torch.float16
    assert dtypes.lookup("half") is torch.float16
    assert dtypes.lookup("torch.half") is torch.float16
    assert dtypes.lookup("float31") is None
    assert dtypes.lookup("Tensor") is None
    assert dtypes.lookup(16) is None


def test_canonical_names_round_trip():
    for dtype in dtypes.CLAIMABLE_DTYPES:
        assert dtypes.lookup(dtypes.canonical_name(dtype)) is dtype


def test_claimable_dtypes_exclude_quantized_and_bit_packed():
    assert torch.float32 in dtypes.CLAIMABLE_DTYPES
    assert torch.bool in dtypes.CLAIMABLE_DTYPES
    for excluded in (torch.qint8, torch.quint8, torch.bits8, torch.uint4):
        assert excluded not in dtypes.CLAIMABLE_DTYPES
    assert set(dtypes.FLOAT8_DTYPES) <= set(dtypes.CLAIMABLE_DTYPES)
    assert torch.float8_e4m3fn in dtypes.FLOAT8_DTYPES


def test_spellings_include_aliases():
    assert {"float", "half", "double", "long", "cfloat", "float32"} <= set(dtypes.spellings())
    assert "qint8" not in dtypes.spellings()
