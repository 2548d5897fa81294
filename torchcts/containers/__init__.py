"""Packed quantized containers: the formats a manifest may claim, their byte layouts, and the CPU codec.

A container is a tensor stored as packed codes (a uint8 tensor), a scale tensor and, for
asymmetric formats, a zero-point tensor, plus the logical shape it decodes to. `formats` holds the
registry (one `ContainerFormat` per name a manifest's `supported_container_formats` may use),
`codec` packs codes and decodes containers with torch ops only (the same program runs on CPU, as the
oracle, and on a device, as device-side unpacking), `decoders` loads a backend's own decoders
(`custom_container_decoders`). docs/quantized.md documents every format's bytes.
"""

from torchcts.containers.codec import Container, decode, decode_container, pack_codes
from torchcts.containers.formats import FORMATS, ContainerFormat, get

__all__ = ["FORMATS", "Container", "ContainerFormat", "decode", "decode_container", "get", "pack_codes"]
