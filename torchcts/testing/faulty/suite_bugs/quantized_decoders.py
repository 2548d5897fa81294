"""Seeded bugs for the quantized decoders suite (properties/suites/quantized_decoders.py).

The faulty device's container decoders (torchcts/testing/faulty/decoders.py) decode with the CPU
codec's own program, then hand the result to the bugs acting at `DECODE_STEP`, which see
(format, packed, scale, zero_point, shape, dtype) on the device. Each bug below is a mistake real
dequantization kernels make, confined to one format family or one input condition, and redoes the
decode on CPU copies with the mistake in it (`_redecode`):
- a nibble order swapped (uint4 read high nibble first, as the msb-first variant is);
- a typo in a lookup table (NF4's code 12);
- an E8M0 scale decoded with bias 128 (MXFP4), or its NaN byte 255 read as the number 2**128
  (8-bit MX formats);
- per-group zero points collapsed to the first group's;
- bfloat16 output rounded through float16 (overflow to inf past 65504, underflow below 2**-24);
- a float32 result returned when bfloat16 was asked for (a contract violation: `error`);
- FP6's 3-byte words read big-endian;
- a packed view at an odd storage offset read from its storage's first byte.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts.containers import decode_container, get
from torchcts.containers.codec import program_arguments
from torchcts.containers.formats import NF4, e8m0
from torchcts.testing.faulty.bug_model import DECODE_STEP, Bug

SUITE = "quantized_decoders"
NF4_TYPO_CODE = 12  # its entry 0.44070982933044434 typed as 0.4470...: digits swapped
MX8 = ("mxfp8_e4m3", "mxfp8_e5m2", "mxint8")
FP6 = ("fp6_e3m2", "fp6_e2m3")
INT8 = ("int8_symmetric", "int8_asymmetric", "uint8")


def _cpu(t: Any) -> Any:
    return None if t is None else t.cpu()


def _redecode(args: tuple, result: torch.Tensor, *, packed: Any = None, zero_point: Any = "same",
              dtype: torch.dtype | None = None, **changes: Any) -> torch.Tensor:
    """The decode of the step's container on CPU with some of the program's arguments changed, on the result's
    device (`packed`: other CPU bytes; `changes`: table, scale_table, bits, msb_first)."""
    format_name, packed_, scale, zero_point_, shape, dtype_ = args
    arguments = {**program_arguments(get(format_name)), **changes}
    out = decode_container(_cpu(packed_) if packed is None else packed, _cpu(scale),
                           _cpu(zero_point_) if zero_point == "same" else zero_point, tuple(shape),
                           dtype or dtype_, **arguments)
    return out.to(result.device)


def _codes(args: tuple) -> torch.Tensor:
    format_name, packed, _, _, shape, _ = args
    spec = get(format_name)
    identity = torch.arange(1 << spec.bits, dtype=torch.float32)
    return decode_container(_cpu(packed), torch.ones(()), None, tuple(shape), torch.float32, identity, None,
                            spec.bits, spec.msb_first).to(torch.int64)


# -- uint4 read high nibble first -------------------------------------------------------------------

def _uint4(func, args, kwargs) -> bool:
    return args[0] == "uint4"


def _high_nibble_first(func, args, kwargs, result):
    return _redecode(args, result, msb_first=True)


# -- NF4 table typo ---------------------------------------------------------------------------------

def _nf4_with_code_12(func, args, kwargs) -> bool:
    return args[0] == "nf4" and bool((_codes(args) == NF4_TYPO_CODE).any())


def _nf4_typo(func, args, kwargs, result):
    table = list(NF4)
    table[NF4_TYPO_CODE] = 0.4470098293  # 0.4407... with two digits swapped
    return _redecode(args, result, table=torch.tensor(table, dtype=torch.float32))


# -- MX scales --------------------------------------------------------------------------------------

def _mxfp4(func, args, kwargs) -> bool:
    return args[0] == "mxfp4"


def _bias_128(func, args, kwargs, result):
    table = [v / 2 for v in e8m0()]  # 2**(c - 128): every scale halved
    return _redecode(args, result, scale_table=torch.tensor(table, dtype=torch.float32))


def _mx8_with_nan_scale(func, args, kwargs) -> bool:
    return args[0] in MX8 and bool((_cpu(args[2]).view(torch.uint8) == 255).any())


def _nan_scale_as_number(func, args, kwargs, result):
    table = list(e8m0())
    table[255] = 2.0 ** 128  # the exponent formula applied to the NaN byte (inf in float32)
    return _redecode(args, result, scale_table=torch.tensor(table, dtype=torch.float32))


# -- per-group zero points --------------------------------------------------------------------------

def _several_zero_points(func, args, kwargs) -> bool:
    return args[3] is not None and args[3].numel() > 1


def _first_zero_point(func, args, kwargs, result):
    zero_point = _cpu(args[3])
    return _redecode(args, result, zero_point=torch.full_like(zero_point, zero_point.reshape(-1)[0].item()))


# -- bfloat16 output through float16 ---------------------------------------------------------------

def _int8_to_bfloat16(func, args, kwargs) -> bool:
    return args[0] in INT8 and args[5] == torch.bfloat16


def _through_float16(func, args, kwargs, result):
    return _redecode(args, result, dtype=torch.float32).to(torch.float16).to(torch.bfloat16)


# -- float32 returned for bfloat16 -------------------------------------------------------------------

def _e2m1_to_bfloat16(func, args, kwargs) -> bool:
    return args[0] == "fp4_e2m1" and args[5] == torch.bfloat16


def _float32_result(func, args, kwargs, result):
    return _redecode(args, result, dtype=torch.float32)


# -- FP6 words big-endian ---------------------------------------------------------------------------

def _fp6(func, args, kwargs) -> bool:
    return args[0] in FP6


def _big_endian_words(func, args, kwargs, result):
    packed = _cpu(args[1]).reshape(-1)
    whole = packed[:packed.numel() // 3 * 3]
    return _redecode(args, result, packed=whole.reshape(-1, 3).flip(1).reshape(-1))


# -- an odd storage offset dropped ------------------------------------------------------------------

def _odd_offset(func, args, kwargs) -> bool:
    packed = args[1]
    return packed.storage_offset() % 2 == 1


def _from_storage_start(func, args, kwargs, result):
    packed = args[1]
    return _redecode(args, result, packed=torch.as_strided(packed, (packed.numel(),), (1,), 0).cpu())


BUGS = (
    Bug("decode_uint4_high_nibble_first", (DECODE_STEP,), "a uint4 container is decoded",
        "element 2i is read from the high nibble and 2i+1 from the low one (uint4_msb_first's order)",
        _uint4, _high_nibble_first, suite=SUITE),
    Bug("decode_nf4_table_typo", (DECODE_STEP,), f"an nf4 container holding code {NF4_TYPO_CODE} is decoded",
        f"code {NF4_TYPO_CODE} decodes to 0.4470098... instead of 0.4407098... (two digits of the table swapped)",
        _nf4_with_code_12, _nf4_typo, suite=SUITE),
    Bug("decode_mxfp4_scale_bias_128", (DECODE_STEP,), "an mxfp4 container is decoded",
        "its E8M0 scale bytes are read with bias 128 (2**(b - 128)): every value halved",
        _mxfp4, _bias_128, suite=SUITE),
    Bug("decode_mx8_nan_scale_as_number", (DECODE_STEP,),
        "an 8-bit MX container (mxfp8_e4m3, mxfp8_e5m2, mxint8) with a scale byte 255 is decoded",
        "the NaN scale byte 255 is read as 2**128 (inf in float32): its block decodes to infinities, not NaN",
        _mx8_with_nan_scale, _nan_scale_as_number, suite=SUITE),
    Bug("decode_first_group_zero_point", (DECODE_STEP,), "a container with more than one zero point is decoded",
        "every group is shifted by the first group's zero point", _several_zero_points, _first_zero_point,
        suite=SUITE),
    Bug("decode_bfloat16_through_float16", (DECODE_STEP,),
        "an 8-bit integer container (int8_symmetric, int8_asymmetric, uint8) is decoded to bfloat16",
        "the float32 values are rounded to float16 first: inf past 65504, 0 below 2**-24",
        _int8_to_bfloat16, _through_float16, suite=SUITE),
    Bug("decode_fp4_e2m1_float32_result", (DECODE_STEP,), "an fp4_e2m1 container is decoded to bfloat16",
        "the decoder returns its float32 values (the contract asks for a bfloat16 tensor: `error`)",
        _e2m1_to_bfloat16, _float32_result, suite=SUITE),
    Bug("decode_fp6_words_big_endian", (DECODE_STEP,), "an fp6_e3m2 or fp6_e2m3 container is decoded",
        "each 3-byte word is read big-endian (b0 << 16 | b1 << 8 | b2)", _fp6, _big_endian_words, suite=SUITE),
    Bug("decode_odd_offset_from_storage_start", (DECODE_STEP,),
        "the packed bytes are a view at an odd storage offset",
        "the bytes are read from the storage's first byte (the offset dropped)", _odd_offset, _from_storage_start,
        suite=SUITE),
)
