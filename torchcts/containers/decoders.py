"""A backend's own container decoders (`custom_container_decoders`): loading them and checking what they return.

The manifest names one decoder per format as `"module:function"` (the function part may be dotted:
`"vendor.quant:Decoders.nf4"`). A decoder is called as

    decoder(packed, scale, zero_point, shape, dtype, device) -> torch.Tensor

with the container's tensors on the device (docs/quantized.md: the contract) and must return a
tensor of `shape` and `dtype` on `device`. Every way a decoder can break the contract is a
`DecoderError` whose message names the format and the path, so a report says which entry to fix.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import torch

from torchcts import interrupts
from torchcts.backend_exits import ProcessEndRequested


class DecoderError(Exception):
    """A decoder entry that cannot be used or broke the contract: the message names the entry."""


def entry(format_name: str, path: str) -> str:
    return f"custom_container_decoders[{format_name!r}] = {path!r}"


def load(format_name: str, path: str) -> Callable[..., Any]:
    """The callable `path` names; DecoderError when its module does not import, it is missing or not callable."""
    where = entry(format_name, path)
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise DecoderError(f"{where}: not a 'module:function' path")
    try:
        found: Any = importlib.import_module(module_name)
    except BaseException as exc:  # noqa: BLE001 - a backend module may raise anything while importing
        if interrupts.from_signal(exc) or isinstance(exc, ProcessEndRequested):
            raise  # the user's Ctrl-C; os._exit while importing: the item is `crashed`, naming where
        raise DecoderError(f"{where}: module {module_name!r} does not import: {type(exc).__name__}: {exc}") from exc
    walked = module_name
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise DecoderError(f"{where}: {walked} has no attribute {part!r}")
        found = getattr(found, part)
        walked += f"{'.' if walked != module_name else ':'}{part}"
    if not callable(found):
        raise DecoderError(f"{where}: {path} is a {type(found).__name__}, not a callable")
    return found


def check_result(format_name: str, path: str, result: Any, shape: tuple[int, ...], dtype: torch.dtype,
                 device: torch.device) -> torch.Tensor:
    """`result` when it keeps the contract (a dense tensor of `shape` and `dtype` on `device`); else DecoderError."""
    where = entry(format_name, path)
    if not isinstance(result, torch.Tensor):
        raise DecoderError(f"{where}: returned a {type(result).__name__}, not a tensor")
    if result.layout != torch.strided:
        raise DecoderError(f"{where}: returned a {result.layout} tensor, not a dense one")
    if tuple(result.shape) != tuple(shape):
        raise DecoderError(f"{where}: returned shape {list(result.shape)} for shape {list(shape)}")
    if result.dtype != dtype:
        raise DecoderError(f"{where}: returned {result.dtype} when asked for {dtype}")
    wanted = torch.device(device)
    if result.device.type != wanted.type or (wanted.index is not None and result.device.index != wanted.index):
        raise DecoderError(f"{where}: returned a tensor on {result.device}, not on {device}")
    return result
