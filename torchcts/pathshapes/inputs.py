"""Building a case's operands (each described by a `TensorSpec`): deterministic values seeded from the case id and
draw number.

Values are drawn on CPU with a generator seeded by sha256(case id, draw), so every run of a case on
every machine sees the same operands. The device copy is made with the same strides (a channels_last
or transposed operand stays one on the device), then filled from the CPU tensor.
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

import attrs
import torch

if TYPE_CHECKING:
    from torchcts.pathshapes.corpus import Case

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                                  "float64": torch.float64, "int64": torch.int64, "int32": torch.int32}


@attrs.frozen
class TensorSpec:
    """How to build one operand: shape, dtype, memory layout and value distribution (`high` for indices)."""

    shape: tuple[int, ...]
    dtype: str
    layout: str = "contiguous"
    values: str = "normal"
    high: int | None = None

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.torch_dtype.itemsize


def draw_seed(case_id: str, draw: int) -> int:
    """The 63-bit seed of draw `draw` of case `case_id`."""
    digest = hashlib.sha256(f"path-shapes:{case_id}:{draw}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def build_arguments(case: Case, device: str, generator: torch.Generator | None) -> tuple[list[Any], dict[str, Any]]:
    """The case's positional and keyword arguments on `device`: values from `generator` (None: uninitialised,
    for meta)."""
    def convert(value: Any) -> Any:
        if isinstance(value, TensorSpec):
            return make_tensor(value, device, generator)
        if isinstance(value, tuple):
            return [convert(v) for v in value]
        return value

    return [convert(a) for a in case.args], {k: convert(v) for k, v in case.kwargs}


def make_tensor(spec: TensorSpec, device: str, generator: torch.Generator | None) -> torch.Tensor:
    """One operand, laid out as the spec says, on `device`."""
    dtype = spec.torch_dtype
    stored = list(spec.shape)
    if spec.layout == "transposed":  # stored as the transpose of the last two dimensions
        stored[-1], stored[-2] = stored[-2], stored[-1]
    if generator is None:
        base = torch.empty(stored, dtype=dtype, device=device)
    else:
        base = _values(spec, stored, generator)
    if spec.layout == "transposed":
        base = base.transpose(-1, -2)
    elif spec.layout == "channels_last":
        base = base.contiguous(memory_format=torch.channels_last)
    if generator is None or device == "cpu":
        return base
    out = torch.empty_strided(base.shape, base.stride(), dtype=dtype, device=device)
    out.copy_(base)
    return out


def _values(spec: TensorSpec, shape: list[int], generator: torch.Generator) -> torch.Tensor:
    dtype = spec.torch_dtype
    if spec.values == "index":
        return torch.randint(0, spec.high or 1, shape, generator=generator, dtype=dtype)
    if spec.values == "normal":
        return torch.randn(shape, generator=generator, dtype=torch.float32).to(dtype)
    low, high = (0.5, 2.0) if spec.values == "positive" else (-1.0, 1.0)
    return (torch.rand(shape, generator=generator, dtype=torch.float32) * (high - low) + low).to(dtype)
