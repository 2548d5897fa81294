"""Seeded bugs for the quantized container suites (properties/suites/quantized_containers.py, quantized_unpack.py).

Container plumbing moves packed bytes, scales and zero points; the ways real runtimes get that wrong:
- `quantized_containers` (transfers): a host -> device DMA of a byte view at an odd address that reads from
  the aligned address below; a pitched 2-D byte copy that ignores the row pitch; float8_e8m0fnu scales staged
  through float32 with a saturating conversion (the NaN byte 0xFF becomes 0xFE, 2**127); a clone of a
  column-major byte matrix that writes its bytes in row-major order under column-major strides; small
  non-blocking readbacks served from a staging buffer that synchronize does not flush; `view(dtype)` from a
  float8 dtype to a byte dtype done as a value conversion instead of a reinterpretation.
- `quantized_unpack` (device-side unpacking): a table gather specialised for 4-bit lookup tables (indices
  wrap at 16); an int32 right shift done in 16-bit halves (amounts >= 16 lose the high half); a byte -> int32
  widening that ignores the source's stride; a broadcast float32 multiply built finite-math-only (0 * NaN is 0);
  an int8 -> float32 conversion that reads the bytes as unsigned.
Each fires only under its condition (a dtype, a layout, a value, an amount), which the suites build and their
clean runs never meet unconditionally. Perturbations see the CPU data of the op's arguments and CPU's result.
"""

from __future__ import annotations

# imports inside functions: cycle: faulty.device imports faulty.bugs, which imports this module for its BUGS

import torch

from torchcts.testing.faulty.bug_model import Bug, argument

_FLOAT8 = (torch.float8_e8m0fnu, torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz,
           torch.float8_e5m2fnuz)
_SMALL_READBACK_BYTES = 8


def _from_device() -> bool:
    """Whether the running op reads a device tensor (a copy off the device; a host -> device copy reads none)."""
    from torchcts.testing.faulty.device import op_devices

    return bool(op_devices()[1])


def _overwrite(value: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """`value` (a fresh result) holding `source`'s elements in logical order, converted to its dtype."""
    value.copy_(source.reshape(value.shape).to(value.dtype))
    return value


# -- quantized_containers: transfers ------------------------------------------------------------------

def _odd_offset_bytes_to_device(func, args, kwargs) -> bool:
    src = args[0]
    return (not _from_device() and src.dtype == torch.uint8 and src.layout == torch.strided and src.numel() > 0
            and src.storage_offset() % 2 == 1)


def _read_aligned_below(func, args, kwargs, value):
    src = args[0]
    return _overwrite(value, src.as_strided(src.shape, src.stride(), src.storage_offset() - 1))


def _pitched_bytes_off_device(func, args, kwargs) -> bool:
    src = args[0]
    return (_from_device() and src.dtype == torch.uint8 and src.layout == torch.strided and src.dim() == 2
            and src.size(0) > 1 and src.size(1) > 0 and src.stride(1) == 1 and src.stride(0) > src.size(1))


def _pitch_as_width(func, args, kwargs, value):
    src = args[0]
    return _overwrite(value, src.as_strided((src.numel(),), (1,), src.storage_offset()))


def _e8m0_nan_copied(func, args, kwargs) -> bool:
    src = args[1] if str(func) == "aten.copy_.default" else args[0]
    return (isinstance(src, torch.Tensor) and src.dtype == torch.float8_e8m0fnu
            and bool((src.view(torch.uint8) == 0xFF).any()))


def _saturate_nan(func, args, kwargs, value):
    if value.dtype == torch.float8_e8m0fnu:
        bits = value.view(torch.uint8)
        bits.masked_fill_(bits == 0xFF, 0xFE)
    return value


def _column_major_byte_clone(func, args, kwargs) -> bool:
    src = args[0]
    return (src.dtype == torch.uint8 and src.layout == torch.strided and src.dim() == 2 and min(src.shape) > 1
            and src.stride() == (1, src.size(0)))


def _row_major_under_column_strides(func, args, kwargs, value):
    if value.stride() != (1, value.size(0)):  # the clone was asked for another layout: written right
        return value
    out = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype)
    torch.as_strided(out, (out.numel(),), (1,), 0).copy_(value.reshape(-1))
    return out


def _small_non_blocking_readback(func, args, kwargs) -> bool:
    src = args[0]
    return (_from_device() and bool(argument(func, args, kwargs, "non_blocking", False)) and src.numel() > 0
            and src.numel() * src.element_size() < _SMALL_READBACK_BYTES)


def _stale_staging_buffer(func, args, kwargs, value):
    return value.zero_()


def _float8_viewed_as_bytes(func, args, kwargs) -> bool:
    dtype = argument(func, args, kwargs, "dtype")
    return args[0].dtype in _FLOAT8 and dtype in (torch.uint8, torch.int8)


def _converted_not_reinterpreted(func, args, kwargs, value):
    info = torch.iinfo(value.dtype)
    return args[0].float().nan_to_num(0.0).clamp(info.min, info.max).to(value.dtype)


# -- quantized_unpack: device-side unpacking --------------------------------------------------------

def _large_table_gather(func, args, kwargs) -> bool:
    table, indices = args[0], args[1]
    return (table.dtype == torch.float32 and table.dim() == 1 and table.numel() > 16 and len(indices) == 1
            and indices[0] is not None and indices[0].dtype == torch.int64 and indices[0].numel() > 0
            and bool((indices[0] >= 16).any()))


def _wrap_at_16(func, args, kwargs, value):
    return args[0][args[1][0] % 16]


def _long_right_shift(func, args, kwargs) -> bool:
    amount = args[1]
    return (args[0].dtype == torch.int32 and isinstance(amount, torch.Tensor) and amount.numel() > 0
            and bool((amount >= 16).any()))


def _low_half_only(func, args, kwargs, value):
    return torch.where(args[1] >= 16, (args[0] & 0xFFFF) >> args[1], value)


def _strided_bytes_widened(func, args, kwargs) -> bool:
    src = args[0]
    dtype = argument(func, args, kwargs, "dtype")
    return (_from_device() and src.dtype == torch.uint8 and src.layout == torch.strided and src.numel() > 1
            and dtype in (torch.int32, torch.int64) and not src.is_contiguous() and 0 not in src.stride())


def _consecutive_bytes(func, args, kwargs, value):
    src = args[0]
    return _overwrite(value, src.as_strided((src.numel(),), (1,), src.storage_offset()))


def _zero_times_non_finite(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Where (broadcast) a zero of one operand meets a NaN or an infinity of the other."""
    return ((a == 0) & ~b.isfinite()) | (~a.isfinite() & (b == 0))


def _broadcast_zero_meets_non_finite(func, args, kwargs) -> bool:
    a, b = args[0], args[1]
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    return (a.dtype == b.dtype == torch.float32 and a.shape != b.shape and a.numel() > 0 and b.numel() > 0
            and bool(_zero_times_non_finite(a, b).any()))


def _zero_absorbs(func, args, kwargs, value):
    return torch.where(_zero_times_non_finite(args[0], args[1]), torch.zeros_like(value), value)


def _negative_int8_to_float(func, args, kwargs) -> bool:
    src = args[0]
    return (_from_device() and src.dtype == torch.int8 and argument(func, args, kwargs, "dtype") == torch.float32
            and src.numel() > 0 and bool((src < 0).any()))


def _bytes_read_unsigned(func, args, kwargs, value):
    return _overwrite(value, args[0].view(torch.uint8))


BUGS = (
    Bug("h2d_odd_offset_reads_aligned_below", ("aten._to_copy.default",),
        "a host -> device copy of a uint8 view that starts at an odd storage offset",
        "the DMA reads from the aligned address below: every byte is its predecessor in the storage",
        _odd_offset_bytes_to_device, _read_aligned_below, suite="quantized_containers"),
    Bug("pitched_copy_ignores_row_padding", ("aten._to_copy.default",),
        "a copy off the device of a 2-D uint8 view of 2 or more rows whose row pitch (stride 0) exceeds its width",
        "the rows are read as if the pitch were the width: rows after the first come from the padding",
        _pitched_bytes_off_device, _pitch_as_width, suite="quantized_containers"),
    Bug("e8m0_copy_saturates_nan", ("aten._to_copy.default", "aten.copy_.default", "aten.clone.default"),
        "a copy (transfer, copy_, clone) of a float8_e8m0fnu tensor holding the NaN byte 0xFF",
        "staged through float32 with a saturating conversion: the NaN scale byte 0xFF arrives as 0xFE (2**127)",
        _e8m0_nan_copied, _saturate_nan, suite="quantized_containers"),
    Bug("column_major_clone_writes_row_major", ("aten.clone.default",),
        "clone (preserving its layout) of a 2-D uint8 tensor laid out column-major (strides (1, rows)), both sides > 1",
        "the bytes are written in row-major order under the column-major strides: the matrix reads transposed",
        _column_major_byte_clone, _row_major_under_column_strides, suite="quantized_containers"),
    Bug("small_non_blocking_readback_stale", ("aten._to_copy.default",),
        f"a non_blocking copy of a device tensor of fewer than {_SMALL_READBACK_BYTES} bytes (a scalar scale)",
        "served from a staging buffer that synchronize() does not flush: the copy reads as zeros",
        _small_non_blocking_readback, _stale_staging_buffer, suite="quantized_containers"),
    Bug("float8_view_as_bytes_converts", ("aten.view.dtype",),
        "view(torch.uint8 / torch.int8) of a float8 tensor (an E8M0 / E4M3 scale reinterpreted as bytes)",
        "the values are converted (saturated to the byte range) instead of reinterpreted: the bytes are lost",
        _float8_viewed_as_bytes, _converted_not_reinterpreted, suite="quantized_containers"),
    Bug("lut_gather_wraps_past_15", ("aten.index.Tensor",),
        "a gather from a 1-D float32 table of more than 16 entries at int64 indices of which one is 16 or more",
        "a gather specialised for 4-bit lookup tables: the indices wrap at 16 (6-bit, 8-bit and scale tables)",
        _large_table_gather, _wrap_at_16, suite="quantized_unpack"),
    Bug("rshift_by_16_keeps_low_half", ("aten.__rshift__.Tensor",),
        "an int32 tensor shifted right by a tensor of amounts of which one is 16 or more",
        "the shift works on 16-bit halves: amounts of 16 or more shift only the low half (6-bit words lose code 3)",
        _long_right_shift, _low_half_only, suite="quantized_unpack"),
    Bug("byte_widen_ignores_stride", ("aten._to_copy.default",),
        "a device uint8 tensor that is not contiguous (no zero strides, 2 or more elements) converted to int32/int64",
        "the conversion reads consecutive bytes from the first element, ignoring the strides",
        _strided_bytes_widened, _consecutive_bytes, suite="quantized_unpack"),
    Bug("broadcast_mul_zero_absorbs_nan", ("aten.mul.Tensor",),
        "a float32 multiply of two tensors of different shapes (a broadcast scale) where a zero meets a NaN or an "
        "infinity (a zero code in a block whose E8M0 scale is NaN)",
        "the broadcast kernel is built finite-math-only: x * 0 folds to 0, so 0 * NaN and 0 * inf give 0.0, not NaN",
        _broadcast_zero_meets_non_finite, _zero_absorbs, suite="quantized_unpack"),
    Bug("int8_to_float_reads_unsigned", ("aten._to_copy.default",),
        "a device int8 tensor holding a negative value converted to float32 (an int8 zero point)",
        "the bytes are read as unsigned: -3 becomes 253.0",
        _negative_int8_to_float, _bytes_read_unsigned, suite="quantized_unpack"),
)
