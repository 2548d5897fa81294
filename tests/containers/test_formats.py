"""The container format registry: every name a manifest may claim is defined, and each table is the format's."""

from __future__ import annotations

import math

import pytest
import torch

from torchcts.containers import FORMATS, get
from torchcts.containers.formats import E2M1, E2M3, E3M2, minifloat
from torchcts.manifest import vocabulary as vocab

TORCH_FLOAT8 = {"fp8_e4m3fn": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
                "fp8_e4m3fnuz": torch.float8_e4m3fnuz, "fp8_e5m2fnuz": torch.float8_e5m2fnuz,
                "e8m0fnu": torch.float8_e8m0fnu, "mxfp8_e4m3": torch.float8_e4m3fn, "mxfp8_e5m2": torch.float8_e5m2}


def same(a, b) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_the_registry_defines_exactly_the_formats_a_manifest_may_claim():
    assert list(FORMATS) == list(vocab.CONTAINER_FORMATS)


@pytest.mark.parametrize("name", sorted(TORCH_FLOAT8))
def test_byte_formats_decode_every_code_as_torchs_float8_dtype_does(name):
    decoded = torch.arange(256, dtype=torch.uint8).view(TORCH_FLOAT8[name]).float().tolist()
    assert all(same(a, b) for a, b in zip(FORMATS[name].table, decoded))


def test_small_floats_have_the_ocp_grids():
    assert E2M1[:8] == (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
    assert E2M1[8:] == tuple(-v for v in E2M1[:8])
    assert max(E3M2) == 28.0 and min(v for v in E3M2 if v > 0) == 0.0625
    assert max(E2M3) == 7.5 and min(v for v in E2M3 if v > 0) == 0.125
    assert not any(math.isnan(v) or math.isinf(v) for v in E2M1 + E2M3 + E3M2)  # FP4/FP6 have no specials


def test_ieee_minifloat_specials():
    table = minifloat(5, 2, 15, "ieee")
    assert table[0x7C] == math.inf and table[0xFC] == -math.inf and math.isnan(table[0x7D])


def test_integer_formats_and_zero_points():
    assert FORMATS["int4_symmetric"].table[8] == -8.0 and FORMATS["int4_symmetric"].table[7] == 7.0
    assert FORMATS["uint4"].zero_point_range == (0, 15)
    assert FORMATS["int8_asymmetric"].zero_point_range == (-128, 127)
    assert FORMATS["int4_asymmetric_msb_first"].msb_first and not FORMATS["int4_asymmetric"].msb_first
    assert FORMATS["mxint8"].table[1] == 2.0 ** -6 and FORMATS["mxint8"].table[0x80] == -2.0
    assert FORMATS["int2_ternary"].codes == (0, 1, 2)


def test_lookup_tables():
    assert FORMATS["nf4"].table[7] == 0.0 and FORMATS["nf4"].table[0] == -1.0 and FORMATS["nf4"].table[15] == 1.0
    assert FORMATS["af4"].table[0] == 1.0 and FORMATS["af4"].table[15] == -1.0
    assert FORMATS["fp4_bnb"].table[3] == 1.0 and FORMATS["fp4_bnb"].table[11] == -1.0


@pytest.mark.parametrize("name, count, expected", [("uint4", 5, 3), ("int2_ternary", 5, 2), ("fp6_e3m2", 5, 6),
                                                   ("fp6_e3m2", 4, 3), ("int8_symmetric", 5, 5)])
def test_packed_sizes(name, count, expected):
    assert FORMATS[name].packed_bytes(count) == expected


def test_scale_tables_and_blocks():
    assert FORMATS["mxfp4"].block == 32 and FORMATS["nvfp4"].block == 16 and FORMATS["nf4"].block is None
    e8m0 = FORMATS["mxfp4"].scale_table()
    assert e8m0[127] == 1.0 and math.isnan(e8m0[255]) and FORMATS["nf4"].scale_table() is None
    assert FORMATS["nvfp4"].scale_table()[0x38] == 1.0


def test_unknown_format_names_the_known_ones():
    with pytest.raises(KeyError, match="known: int2_ternary"):
        get("nf5")


def test_docs_quantized_holds_the_formats_table():
    from pathlib import Path

    from torchcts.containers.formats import render_table

    page = (Path(__file__).resolve().parents[2] / "docs" / "quantized.md").read_text()
    assert render_table() in page
