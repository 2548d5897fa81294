"""Decoders that keep the decoder contract with the CPU codec's own program: one per format, on any device.

`custom_container_decoders = {"nf4": "torchcts.containers.reference_decoders:decode_nf4"}` makes a
manifest's `custom_quantized_decode` claim run against the codec itself: on CPU, the validation of
the suite's machinery (it must pass); on a device, device-side unpacking through the decoder path.
A backend ships its own module of the same shape (docs/quantized.md: "An example decoder").
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from torchcts.containers.codec import decode_container, program_arguments
from torchcts.containers.formats import FORMATS


def path(format_name: str) -> str:
    """The manifest path of the reference decoder for `format_name`."""
    return f"{__name__}:decode_{format_name}"


def make_decoder(format_name: str, finish: Callable[[tuple, torch.Tensor], torch.Tensor] | None = None,
                 doc: str = "") -> Callable[..., torch.Tensor]:
    """A contract-keeping decoder of `format_name` named `decode_<format>`: the codec's program on the tensors'
    device; `finish(arguments, result)` (or None) may replace the result (the faulty device's seeded bugs)."""
    spec = FORMATS[format_name]

    def decode(packed: torch.Tensor, scale: torch.Tensor, zero_point: Any, shape: Any, dtype: torch.dtype,
               device: Any) -> torch.Tensor:
        result = decode_container(packed, scale, zero_point, tuple(shape), dtype, **program_arguments(spec, device))
        if finish is None:
            return result
        return finish((format_name, packed, scale, zero_point, tuple(shape), dtype), result)

    decode.__name__ = decode.__qualname__ = f"decode_{format_name}"
    decode.__doc__ = doc or f"Decode a {format_name} container with the CPU codec's program, on the tensors' device."
    return decode


for _name in FORMATS:
    globals()[f"decode_{_name}"] = make_decoder(_name)
