"""The CPU codec: packing and decoding agree with a plain-Python reading of the byte layouts in docs/quantized.md."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, strategies as st

from torchcts.containers import FORMATS, Container, decode, decode_container, pack_codes
from torchcts.containers.codec import program_arguments


def test_nibble_orders():
    assert pack_codes([1, 2, 3], 4).tolist() == [0x21, 0x03]
    assert pack_codes([1, 2, 3], 4, msb_first=True).tolist() == [0x12, 0x30]
    assert pack_codes([1, 2, 3, 0, 2], 2).tolist() == [0b00111001, 0b10]


def test_six_bit_words_are_little_endian():
    packed = pack_codes([1, 2, 3, 4, 5], 6)
    word = packed[0].item() | packed[1].item() << 8 | packed[2].item() << 16
    assert [(word >> 6 * k) & 63 for k in range(4)] == [1, 2, 3, 4] and packed[3].item() == 5
    assert packed.numel() == 6


def test_codes_out_of_range_are_refused():
    with pytest.raises(ValueError, match="does not fit in 4 bits"):
        pack_codes([16], 4)


@pytest.mark.parametrize("name", list(FORMATS))
@given(data=st.data())
def test_decode_reads_back_every_packed_code(name, data):
    spec = FORMATS[name]
    codes = data.draw(st.lists(st.sampled_from(spec.codes), min_size=1, max_size=40))
    packed = pack_codes(codes, spec.bits, spec.msb_first)
    identity = torch.arange(1 << spec.bits, dtype=torch.float32)
    got = decode_container(packed, torch.ones(()), None, (len(codes),), torch.float32, identity, None, spec.bits,
                           spec.msb_first)
    assert got.tolist() == codes


def reference_value(spec, code, scale, zero_point):
    """One element by the written definition: (table[code] - zero point) * scale, in float32."""
    element = torch.tensor(spec.table[code], dtype=torch.float32)
    return ((element - zero_point) * torch.tensor(scale, dtype=torch.float32)).item()


def test_asymmetric_per_channel_groups():
    spec = FORMATS["uint4"]
    codes = [0, 15, 3, 7, 8, 1]  # shape (2, 3): rows are the groups
    zero_points = torch.tensor([8, 1], dtype=torch.uint8)
    container = Container("uint4", pack_codes(codes, 4), torch.tensor([0.5, 2.0]), zero_points, (2, 3))
    got = decode(container).flatten().tolist()
    expected = [reference_value(spec, c, [0.5, 2.0][i // 3], [8, 1][i // 3]) for i, c in enumerate(codes)]
    assert got == expected == [-4.0, 3.5, -2.5, 12.0, 14.0, 0.0]


def test_mx_scales_are_e8m0_bytes_in_either_dtype():
    codes = [2] * 32 + [7] * 32  # E2M1 1.0 and 6.0, two blocks
    packed = pack_codes(codes, 4)
    for scale in (torch.tensor([127, 130], dtype=torch.uint8), torch.tensor([1.0, 8.0]).to(torch.float8_e8m0fnu)):
        got = decode(Container("mxfp4", packed, scale, None, (64,)))
        assert got[:32].eq(1.0).all() and got[32:].eq(48.0).all()
    nan_scale = decode(Container("mxfp4", packed, torch.tensor([255, 127], dtype=torch.uint8), None, (64,)))
    assert nan_scale[:32].isnan().all() and nan_scale[32:].eq(6.0).all()


def test_decoding_rounds_once_to_the_dtype():
    container = Container("int8_symmetric", pack_codes([3], 8), torch.tensor(0.1), None, (1,))
    exact = 3 * torch.tensor(0.1, dtype=torch.float32)
    assert decode(container, torch.bfloat16).item() == exact.to(torch.bfloat16).item()
    assert decode(container, torch.float16).dtype == torch.float16


def test_a_strided_window_decodes_as_its_bytes():
    packed = pack_codes([1, 2, 3, 4], 4)
    buffer = torch.full((9,), 0xA5, dtype=torch.uint8)
    window = buffer[3::3][:2]
    window.copy_(packed)
    container = Container("uint4", window, torch.tensor(1.0), torch.tensor(0, dtype=torch.int32), (4,))
    assert decode(container).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_bad_containers_are_refused():
    args = program_arguments(FORMATS["int8_symmetric"])
    with pytest.raises(ValueError, match="need 4 bytes, got 2"):
        decode_container(torch.zeros(2, dtype=torch.uint8), torch.ones(()), None, (4,), torch.float32, **args)
    with pytest.raises(ValueError, match="3 scale entries do not split 4"):
        decode_container(torch.zeros(4, dtype=torch.uint8), torch.ones(3), None, (4,), torch.float32, **args)


def test_special_codes_decode_to_specials():
    codes = [0x7F, 0xFF, 0x7C]
    got = decode(Container("fp8_e5m2", pack_codes(codes, 8), torch.tensor(2.0), None, (3,)))
    assert math.isnan(got[0]) and math.isnan(got[1]) and got[2].item() == math.inf


def _doc_example_decoder():
    """The example decoder of docs/quantized.md, executed as written."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "quantized.md").read_text()
    start = page.index("def decode_uint4")
    source = "import torch\n\n\n" + page[start:page.index("```", start)]
    namespace: dict = {}
    exec(compile(source, "docs/quantized.md", "exec"), namespace)  # noqa: S102 - our own documentation
    return namespace["decode_uint4"]


@given(data=st.data())
def test_the_documented_example_decoder_agrees_with_the_codec(data):
    from torchcts.strategies.containers import containers

    decoder = _doc_example_decoder()
    container = data.draw(containers("uint4", layouts=("contiguous", "window")))
    for dtype in (torch.float32, torch.bfloat16):
        got = decoder(container.packed, container.scale, container.zero_point, container.shape, dtype,
                      torch.device("cpu"))
        assert torch.equal(got, decode(container, dtype))
