"""The faulty device's own container decoders, one per format, for the `custom_quantized_decode` suite.

A manifest names them as `custom_container_decoders = {"nf4": "torchcts.testing.faulty.decoders:decode_nf4"}`
(`path(format)`; the selftest's manifest names all of them). Each keeps the decoder contract
(docs/quantized.md): it decodes on the device with the codec's own program (shifts, masks, a table
lookup, a multiply: device ops), then lets the seeded bugs acting at `DECODE_STEP` change the result.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from torchcts.containers import FORMATS
from torchcts.containers.codec import decode_container, program_arguments
from torchcts.testing.faulty import bugs, device
from torchcts.testing.faulty.bug_model import DECODE_STEP


def path(format_name: str) -> str:
    """The manifest path of the decoder for `format_name`."""
    return f"{__name__}:decode_{format_name}"


def _decoder(format_name: str) -> Callable[..., torch.Tensor]:
    spec = FORMATS[format_name]

    def decode(packed: torch.Tensor, scale: torch.Tensor, zero_point: Any, shape: Any, dtype: torch.dtype,
               device_: Any) -> torch.Tensor:
        device.note_step(DECODE_STEP)
        result = decode_container(packed, scale, zero_point, tuple(shape), dtype, **program_arguments(spec, device_))
        return bugs.after(DECODE_STEP, (format_name, packed, scale, zero_point, tuple(shape), dtype), {}, result)

    decode.__name__ = decode.__qualname__ = f"decode_{format_name}"
    decode.__doc__ = f"Decode a {format_name} container on the faulty device (docs/quantized.md: the contract)."
    return decode


for _name in FORMATS:
    globals()[f"decode_{_name}"] = _decoder(_name)
