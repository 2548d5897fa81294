"""The bounds of stored torch values: a tensor (its dtype, dimensions and the elements a program derives from its
sizes) and a dtype among named ones."""

from __future__ import annotations

# imports inside functions: torch (and torchcts.dtypes, which imports it) loads only when a value is checked or
# drawn; a suite declaring its bounds, and the docs table written from them, load no torch here
import math
from typing import Any

import attrs

from torchcts.cases.bounds.plain import Bound, brief


@attrs.frozen
class Tensors(Bound):
    """A CPU tensor spanning at most `max_elements` elements and of at most `max_dims` dimensions, of a dtype among
    `dtypes` (None: any). Its bytes are bounded by `--max-case-bytes` already; this bounds what a program derives
    from its sizes: the product of its sides with each side of 0 counted as 1, so a (20000, 0) tensor, which holds
    nothing, still spans 20000 (`mm` of it and a (0, 20000) one makes 4e8 elements). A nested tensor spans the sum
    of its components'."""

    max_elements: int = 2**20
    max_dims: int = 8
    dtypes: tuple[str, ...] | None = attrs.field(default=None, converter=lambda v: None if v is None else tuple(v))

    def problem(self, value: Any) -> str | None:
        import torch

        if not isinstance(value, torch.Tensor) or type(value).__module__.split(".")[0] != "torch":
            return f"expected a tensor, got {type(value).__name__}"
        if value.device.type != "cpu":  # the codec decodes meta tensors too; a program runs on CPU values
            return f"a tensor on the {brief(value.device.type)} device; a stored tensor is on cpu"
        if self.dtypes is not None:
            from torchcts import dtypes as dtype_names

            name = dtype_names.canonical_name(value.dtype)
            if name not in self.dtypes:
                return f"a {name} tensor; allowed: {', '.join(self.dtypes)}"
        if value.dim() > self.max_dims:
            return f"a tensor of {value.dim()} dimensions; allowed at most {self.max_dims}"
        try:
            shapes = [tuple(part.shape) for part in value.unbind()] if value.is_nested else [tuple(value.shape)]
            spans = [math.prod(max(int(side), 1) for side in shape) for shape in shapes]
        except Exception:  # noqa: BLE001 - a nested tensor whose components cannot be listed: refused, not trusted
            return "a nested tensor whose components cannot be read"
        span = sum(spans)
        if span > self.max_elements:
            if value.is_nested or all(side for shape in shapes for side in shape):
                return f"a tensor of {span} elements; allowed at most {self.max_elements}"
            return (f"a tensor of sizes {brief(list(value.shape))} spanning {span} elements (a side of 0 counted "
                    f"as 1); allowed at most {self.max_elements}")
        return None

    def strategy(self) -> Any:
        raise TypeError("Tensors has no strategy of its own: a suite draws its tensors with strategies.tensors")

    def describe(self) -> str:
        kinds = f" of {', '.join(self.dtypes)}" if self.dtypes is not None else ""
        return f"tensor{kinds} of at most {self.max_elements} elements, {self.max_dims} dimensions"

    def out_of_bounds(self) -> list[Any]:
        import torch

        values: list[Any] = [1, "tensor", torch.zeros(1, device="meta")]
        if self.max_dims >= 2:  # no element, one side past the bound
            values.append(torch.zeros(0, self.max_elements + 1))
        if self.dtypes is not None:
            values.append(torch.zeros(1, dtype=torch.complex128 if "complex128" not in self.dtypes else torch.int8))
        return values


@attrs.frozen
class Dtypes(Bound):
    """A torch dtype among the names given (canonical names, `float32`)."""

    names: tuple[str, ...] = attrs.field(converter=tuple)

    def problem(self, value: Any) -> str | None:
        from torchcts import dtypes as dtype_names

        if type(value).__name__ != "dtype" or dtype_names.canonical_name(value) not in self.names:
            return f"{brief(value)} is not a dtype among {', '.join(self.names)}"
        return None

    def strategy(self) -> Any:
        from hypothesis import strategies as st

        from torchcts import dtypes as dtype_names

        return st.sampled_from([dtype_names.lookup(name) for name in self.names])

    def describe(self) -> str:
        return f"dtype: {', '.join(self.names)}"

    def out_of_bounds(self) -> list[Any]:
        return ["float32", 1]
