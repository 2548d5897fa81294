"""The container formats a manifest may claim: each one's element code, packing, scale and zero point.

Every format decodes the same way (docs/quantized.md): the packed bytes are read as a stream of
`bits`-wide codes, code `c` stands for the element value `table[c]`, and element `i` of a tensor of
`n` elements with `g` scale entries belongs to group `i // (n // g)`:

    value[i] = (table[code[i]] - zero_point[group]) * scale[group]      (no zero point: 0)

computed in float32 and rounded once to the requested dtype. The formats differ in their table
(two's-complement integers, a float grid such as E2M1, a lookup table such as NF4), the bit order
inside a byte, whether they carry a zero point, how the scale is stored (a float tensor, or the bytes
of an E8M0 / E4M3 scale) and whether groups have a fixed size (the OCP MX formats: 32; NVFP4: 16).

Tables are built from their definitions (a minifloat's exponent, mantissa and bias), not typed in,
except the three published lookup tables (NF4, bitsandbytes' FP4, AF4 for blocks of 64).
"""

from __future__ import annotations

import math
from typing import Callable

import attrs

SCALE_KINDS = ("float", "e8m0", "e4m3")  # how a format stores its scale: see ContainerFormat.scale


def twos_complement(bits: int) -> tuple[float, ...]:
    """Code -> signed integer (two's complement of `bits` bits)."""
    return tuple(float(c - (1 << bits) if c >= 1 << (bits - 1) else c) for c in range(1 << bits))


def unsigned(bits: int) -> tuple[float, ...]:
    return tuple(float(c) for c in range(1 << bits))


def minifloat(exponent_bits: int, mantissa_bits: int, bias: int, specials: str) -> tuple[float, ...]:
    """Code -> value of a small float: sign, exponent, mantissa (subnormals where the exponent is 0).

    `specials`: "ieee" (all-ones exponent: infinities and NaNs), "fn" (no infinities; only the
    all-ones code of each sign is NaN), "fnuz" (no infinities; the negative-zero code 0x80 is the one
    NaN) or "finite" (every code is a number: FP4 and FP6)."""
    width = 1 + exponent_bits + mantissa_bits
    top = (1 << exponent_bits) - 1
    values = []
    for code in range(1 << width):
        sign = -1.0 if code >> (width - 1) else 1.0
        exponent = (code >> mantissa_bits) & top
        mantissa = code & ((1 << mantissa_bits) - 1)
        if specials == "ieee" and exponent == top:
            values.append(math.nan if mantissa else sign * math.inf)
            continue
        if specials == "fn" and exponent == top and mantissa == (1 << mantissa_bits) - 1:
            values.append(math.nan)
            continue
        if specials == "fnuz" and code == 1 << (width - 1):
            values.append(math.nan)
            continue
        if exponent == 0:
            magnitude = math.ldexp(mantissa / (1 << mantissa_bits), 1 - bias)
        else:
            magnitude = math.ldexp(1 + mantissa / (1 << mantissa_bits), exponent - bias)
        values.append(sign * magnitude)
    return tuple(values)


def e8m0() -> tuple[float, ...]:
    """OCP E8M0 (float8_e8m0fnu): code c is 2**(c - 127); 255 is NaN."""
    return tuple(math.nan if c == 255 else math.ldexp(1.0, c - 127) for c in range(256))


def ternary() -> tuple[float, ...]:
    """2-bit ternary: code = value + 1 (0 -> -1, 1 -> 0, 2 -> +1); code 3 is no value (NaN, never drawn)."""
    return (-1.0, 0.0, 1.0, math.nan)


def scaled(table: tuple[float, ...], factor: float) -> tuple[float, ...]:
    return tuple(v * factor for v in table)


# NF4 (QLoRA, bitsandbytes): quantiles of N(0, 1) normalised to [-1, 1], code 7 exactly 0.
NF4 = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0)
# bitsandbytes' FP4 as its dequantisation kernel reads it: sign bit 3, then a 3-bit magnitude code.
_FP4_BNB_MAGNITUDES = (0.0, 1 / 192, 2 / 3, 1.0, 1 / 3, 1 / 2, 1 / 6, 1 / 4)
FP4_BNB = _FP4_BNB_MAGNITUDES + tuple(-v for v in _FP4_BNB_MAGNITUDES)
# AF4 for blocks of 64 (Yoshida 2023, "NF4 isn't information theoretically optimal"), stored as bitsandbytes'
# get_4bit_type("af4") stores it: code 0 is +1.0, code 15 is -1.0.
AF4 = tuple(reversed((-1.0, -0.69441008, -0.51243739, -0.3736951, -0.25607552, -0.14982478, -0.04934812, 0.0,
                      0.04273164, 0.12934483, 0.21961274, 0.31675666, 0.42563882, 0.55496234, 0.72424863, 1.0)))


def _check_table(instance: "ContainerFormat", _: attrs.Attribute, value: tuple[float, ...]) -> None:
    if len(value) != 1 << instance.bits:
        raise ValueError(f"{instance.name}: a {instance.bits}-bit format needs {1 << instance.bits} table entries")


@attrs.frozen
class ContainerFormat:
    """One packed format: how its bytes hold codes, what a code means, how it is scaled (docs/quantized.md)."""

    name: str
    bits: int = attrs.field(validator=attrs.validators.in_((2, 4, 6, 8)))
    table: tuple[float, ...] = attrs.field(validator=_check_table, repr=False)
    layout: str  # the byte layout in words, for docs/quantized.md
    msb_first: bool = False  # codes fill a byte from its high bits (a 4-bit format: element 0 in the high nibble)
    zero_point: bool = False  # asymmetric: a zero-point tensor, same shape as the scale, of element values
    scale: str = attrs.field(default="float", validator=attrs.validators.in_(SCALE_KINDS))
    block: int | None = None  # the fixed number of elements per scale entry; None: any divisor (per tensor, ...)
    valid_codes: tuple[int, ...] | None = None  # codes that stand for values (None: all)

    @property
    def codes(self) -> tuple[int, ...]:
        return self.valid_codes if self.valid_codes is not None else tuple(range(1 << self.bits))

    @property
    def zero_point_range(self) -> tuple[int, int]:
        """The zero points a container may carry: the element range of an integer format."""
        finite = [v for v in self.table if math.isfinite(v)]
        return int(min(finite)), int(max(finite))

    def packed_bytes(self, count: int) -> int:
        """Bytes that hold `count` codes (the last byte or 3-byte word padded with zero bits)."""
        if self.bits == 6:
            return 3 * -(-count // 4)
        return -(-count * self.bits // 8)

    def scale_table(self) -> tuple[float, ...] | None:
        """Scale byte -> scale value for formats whose scale is stored as E8M0 or E4M3 bytes; None for float scales."""
        return SCALE_TABLES.get(self.scale)


SCALE_TABLES: dict[str, tuple[float, ...]] = {"e8m0": e8m0(), "e4m3": minifloat(4, 3, 7, "fn")}
E2M1 = minifloat(2, 1, 1, "finite")
E3M2 = minifloat(3, 2, 3, "finite")
E2M3 = minifloat(2, 3, 1, "finite")
_INT4 = "two's complement 4-bit codes (-8..7)"
_UINT4 = "unsigned 4-bit codes (0..15)"
_LOW = "two per byte, element 2i in the low nibble (bits 0-3), 2i+1 in the high nibble; an odd count pads bits 4-7"
_HIGH = "two per byte, element 2i in the high nibble (bits 4-7), 2i+1 in the low nibble; an odd count pads bits 0-3"
_SIX = ("four per 3 bytes: bytes b0 b1 b2 read as the little-endian word b0 | b1<<8 | b2<<16, element 4i+k in bits "
        "6k..6k+5; the last word zero-padded")
_BYTE = "one per byte"
_MX = "blocks of 32 elements, one E8M0 scale byte per block (uint8 or float8_e8m0fnu)"


def _formats() -> tuple[ContainerFormat, ...]:
    four: Callable[..., ContainerFormat] = lambda name, table, text, **kw: ContainerFormat(name, 4, table, text, **kw)
    return (
        ContainerFormat("int2_ternary", 2, ternary(), "ternary codes (value + 1: 0 -> -1, 1 -> 0, 2 -> +1; 3 is no "
                        "value), four per byte, element 4i+k in bits 2k..2k+1; float scale", valid_codes=(0, 1, 2)),
        four("int4_symmetric", twos_complement(4), f"{_INT4}, {_LOW}; float scale"),
        four("int4_symmetric_msb_first", twos_complement(4), f"{_INT4}, {_HIGH}; float scale", msb_first=True),
        four("int4_asymmetric", twos_complement(4), f"{_INT4}, {_LOW}; float scale, integer zero point",
             zero_point=True),
        four("int4_asymmetric_msb_first", twos_complement(4), f"{_INT4}, {_HIGH}; float scale, integer zero point",
             zero_point=True, msb_first=True),
        four("uint4", unsigned(4), f"{_UINT4}, {_LOW}; float scale, integer zero point", zero_point=True),
        four("uint4_msb_first", unsigned(4), f"{_UINT4}, {_HIGH}; float scale, integer zero point", zero_point=True,
             msb_first=True),
        four("nf4", NF4, f"NF4 table indices, {_LOW}; float scale (a block's absmax)"),
        four("fp4_e2m1", E2M1, f"E2M1 codes (sign, 2 exponent bits, 1 mantissa bit; bias 1), {_LOW}; float scale"),
        four("fp4_bnb", FP4_BNB, f"bitsandbytes FP4 codes (sign bit 3, magnitude table), {_LOW}; float scale"),
        four("af4", AF4, f"AF4 (blocks of 64) table indices, code 0 = +1.0, {_LOW}; float scale"),
        four("mxfp4", E2M1, f"E2M1 codes, {_LOW}; {_MX}", scale="e8m0", block=32),
        four("nvfp4", E2M1, f"E2M1 codes, {_LOW}; blocks of 16 elements, one E4M3 scale byte per block "
             "(uint8 or float8_e4m3fn)", scale="e4m3", block=16),
        ContainerFormat("fp6_e3m2", 6, E3M2, f"E3M2 codes (bias 3, no inf/NaN), {_SIX}; float scale"),
        ContainerFormat("fp6_e2m3", 6, E2M3, f"E2M3 codes (bias 1, no inf/NaN), {_SIX}; float scale"),
        ContainerFormat("mxfp6_e3m2", 6, E3M2, f"E3M2 codes, {_SIX}; {_MX}", scale="e8m0", block=32),
        ContainerFormat("mxfp6_e2m3", 6, E2M3, f"E2M3 codes, {_SIX}; {_MX}", scale="e8m0", block=32),
        ContainerFormat("fp8_e4m3fn", 8, minifloat(4, 3, 7, "fn"), f"float8_e4m3fn bytes, {_BYTE}; float scale"),
        ContainerFormat("fp8_e5m2", 8, minifloat(5, 2, 15, "ieee"), f"float8_e5m2 bytes, {_BYTE}; float scale"),
        ContainerFormat("fp8_e4m3fnuz", 8, minifloat(4, 3, 8, "fnuz"), f"float8_e4m3fnuz bytes, {_BYTE}; float scale"),
        ContainerFormat("fp8_e5m2fnuz", 8, minifloat(5, 2, 16, "fnuz"), f"float8_e5m2fnuz bytes, {_BYTE}; float scale"),
        ContainerFormat("int8_symmetric", 8, twos_complement(8), f"int8 bytes, {_BYTE}; float scale"),
        ContainerFormat("int8_asymmetric", 8, twos_complement(8), f"int8 bytes, {_BYTE}; float scale, integer zero "
                        "point", zero_point=True),
        ContainerFormat("uint8", 8, unsigned(8), f"uint8 bytes, {_BYTE}; float scale, integer zero point",
                        zero_point=True),
        ContainerFormat("e8m0fnu", 8, e8m0(), f"E8M0 bytes (2**(c-127), 255 NaN), {_BYTE}; float scale"),
        ContainerFormat("mxfp8_e4m3", 8, minifloat(4, 3, 7, "fn"), f"float8_e4m3fn bytes, {_BYTE}; {_MX}",
                        scale="e8m0", block=32),
        ContainerFormat("mxfp8_e5m2", 8, minifloat(5, 2, 15, "ieee"), f"float8_e5m2 bytes, {_BYTE}; {_MX}",
                        scale="e8m0", block=32),
        ContainerFormat("mxint8", 8, scaled(twos_complement(8), 2.0 ** -6), "int8 bytes read as fixed point "
                        f"(code * 2**-6), {_BYTE}; {_MX}", scale="e8m0", block=32),
    )


FORMATS: dict[str, ContainerFormat] = {f.name: f for f in _formats()}


def get(name: str) -> ContainerFormat:
    """The format called `name`; KeyError naming the known ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise KeyError(f"unknown container format {name!r}; known: {', '.join(FORMATS)}") from None


def render_table() -> str:
    """The formats table of docs/quantized.md (a test keeps the page equal to it)."""
    lines = ["| format | bits | zero point | scale | group | byte layout |", "| --- | --- | --- | --- | --- | --- |"]
    scales = {"float": "float32 / float16 / bfloat16", "e8m0": "E8M0 bytes", "e4m3": "E4M3 bytes"}
    for spec in FORMATS.values():
        group = f"{spec.block} elements" if spec.block else "any divisor"
        lines.append(f"| `{spec.name}` | {spec.bits} | {'yes' if spec.zero_point else 'no'} | {scales[spec.scale]} "
                     f"| {group} | {spec.layout} |")
    return "\n".join(lines) + "\n"
