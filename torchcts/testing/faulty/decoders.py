"""The faulty device's own container decoders, one per format, for the `custom_quantized_decode` suite.

A manifest names them as `custom_container_decoders = {"nf4": "torchcts.testing.faulty.decoders:decode_nf4"}`
(`path(format)`; the selftest's manifest names all of them). Each keeps the decoder contract
(docs/quantized.md): it decodes on the device with the codec's own program (shifts, masks, a table
lookup, a multiply: device ops), then lets the seeded bugs acting at `DECODE_STEP` change the result.
"""

from __future__ import annotations

import torch

from torchcts.containers import FORMATS
from torchcts.containers.reference_decoders import make_decoder
from torchcts.testing.faulty import bugs, device
from torchcts.testing.faulty.bug_model import DECODE_STEP


def path(format_name: str) -> str:
    """The manifest path of the decoder for `format_name`."""
    return f"{__name__}:decode_{format_name}"


def _seeded_bugs(arguments: tuple, result: torch.Tensor) -> torch.Tensor:
    """The decoded result as the active seeded bugs acting at DECODE_STEP leave it (they see the arguments)."""
    device.note_step(DECODE_STEP)
    return bugs.after(DECODE_STEP, arguments, {}, result)


for _name in FORMATS:
    globals()[f"decode_{_name}"] = make_decoder(
        _name, _seeded_bugs, doc=f"Decode a {_name} container on the faulty device (docs/quantized.md: the contract).")
