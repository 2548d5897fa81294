"""The CPU codec of packed containers: codes into bytes, and bytes back into values, with torch ops only.

`decode_container` is written as a scenario program (torch only, one function, the packed bytes
first), so the very code that is the oracle on CPU is also what "device-side unpacking" runs on a
device (shifts, masks, a table lookup, a multiply), and what an exported reproduction script holds.
`pack_codes` is plain Python on integers, independent of it, so each checks the other in the tests.
"""

from __future__ import annotations

from typing import Any, Sequence

import attrs
import torch

from torchcts.containers.formats import ContainerFormat, get


def _word(bits: int) -> tuple[int, int]:
    """(codes per word, bytes per word): a 6-bit format packs 4 codes into 3 bytes, the others into one byte."""
    return (4, 3) if bits == 6 else (8 // bits, 1)


def pack_codes(codes: Sequence[int], bits: int, msb_first: bool = False) -> torch.Tensor:
    """The uint8 bytes holding `codes` (each in 0 .. 2**bits - 1) in the format's bit order; the last byte
    (3-byte word for 6 bits) padded with zero bits."""
    per_word, word_bytes = _word(bits)
    mask = (1 << bits) - 1
    out = bytearray()
    for start in range(0, len(codes), per_word):
        word = 0
        for k, code in enumerate(codes[start:start + per_word]):
            if not 0 <= int(code) <= mask:
                raise ValueError(f"code {code} does not fit in {bits} bits")
            word |= int(code) << ((per_word - 1 - k) * bits if msb_first else k * bits)
        out += word.to_bytes(word_bytes, "big" if msb_first else "little")
    return torch.tensor(list(out), dtype=torch.uint8)


def decode_container(input, scale, zero_point, shape, dtype, table, scale_table, bits, msb_first):
    """Decode packed codes (`input`: uint8 bytes, any layout) into a tensor of `shape` and `dtype`.

    Codes are read from the bytes in the format's bit order; code c stands for `table[c]` (float32);
    element i belongs to scale group i // (numel // scale.numel()); a zero point (same shape as the
    scale) is subtracted before scaling; `scale_table` (or None) maps scale bytes (E8M0, E4M3) to
    values. Computed in float32, rounded once to `dtype`."""
    count = 1
    for side in shape:
        count *= side
    per_word, word_bytes = (4, 3) if bits == 6 else (8 // bits, 1)
    words = -(-count // per_word)
    data = input.reshape(-1)
    if data.numel() < words * word_bytes:
        raise ValueError(f"{count} codes of {bits} bits need {words * word_bytes} bytes, got {data.numel()}")
    data = data[:words * word_bytes].to(torch.int32).reshape(words, word_bytes)
    word = torch.zeros(words, dtype=torch.int32, device=input.device)
    for j in range(word_bytes):
        word = word | (data[:, j] << (8 * (word_bytes - 1 - j) if msb_first else 8 * j))
    shifts = torch.tensor([(per_word - 1 - k) * bits if msb_first else k * bits for k in range(per_word)],
                          dtype=torch.int32, device=input.device)
    codes = ((word.unsqueeze(1) >> shifts) & ((1 << bits) - 1)).reshape(-1)[:count]
    values = table[codes.long()]
    groups = scale.numel()
    if groups == 0 or count % groups:
        raise ValueError(f"{groups} scale entries do not split {count} elements into equal groups")
    scales = scale.reshape(-1)
    scales = scales.to(torch.float32) if scale_table is None else scale_table[scales.view(torch.uint8).long()]
    values = values.reshape(groups, count // groups)
    if zero_point is not None:
        values = values - zero_point.reshape(-1, 1).to(torch.float32)
    return (values * scales.reshape(-1, 1)).reshape(shape).to(dtype)


@attrs.frozen(eq=False)
class Container:
    """One packed tensor: its format, packed bytes (uint8), scale, zero point (or None) and logical shape."""

    format: str
    packed: torch.Tensor
    scale: torch.Tensor
    zero_point: torch.Tensor | None
    shape: tuple[int, ...]

    @property
    def spec(self) -> ContainerFormat:
        return get(self.format)

    def describe(self) -> str:
        zero = f", zero point {self.zero_point.dtype}" if self.zero_point is not None else ""
        return (f"{self.format} {list(self.shape)}: {self.packed.numel()} bytes (strides {self.packed.stride()}, "
                f"offset {self.packed.storage_offset()}), scale {list(self.scale.shape)} {self.scale.dtype}{zero}")


def program_arguments(spec: ContainerFormat, device: Any = "cpu") -> dict[str, Any]:
    """`decode_container`'s format arguments (its tables as float32 tensors on `device`, bits, bit order)."""
    scale_table = spec.scale_table()
    return {
        "table": torch.tensor(spec.table, dtype=torch.float32, device=device),
        "scale_table": None if scale_table is None else torch.tensor(scale_table, dtype=torch.float32, device=device),
        "bits": spec.bits,
        "msb_first": spec.msb_first,
    }


def decode(container: Container, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The CPU codec's decode of a container (its tensors copied to CPU first)."""
    cpu = (lambda t: None if t is None else t.cpu())
    return decode_container(cpu(container.packed), cpu(container.scale), cpu(container.zero_point),
                            tuple(container.shape), dtype, **program_arguments(container.spec))
