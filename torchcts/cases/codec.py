"""Exact, code-free JSON for case inputs: tensors, their storages, and plain arguments.

Dense tensors are written as views of storages: dtype, sizes, strides, storage offset and a
reference into a table of storages whose bytes are kept whole (base64), so NaN payloads, -0.0
and the bytes between strided elements survive, and tensors that shared a storage (an `out=`
aliasing its input) share it again when rebuilt. Sparse tensors keep their index and value
tensors, nested tensors their components. Numbers keep their exact value (floats as hex).
Decoding builds objects from this vocabulary only; nothing is imported or executed, and what
a case may make the decoder allocate is bounded (`torchcts.core.case_limits`).
"""

from __future__ import annotations

import base64
import contextlib
import math
from typing import Any, Iterator

import torch

from torchcts import dtypes as dtype_names
from torchcts.core.case_limits import MAX_DIMS, CaseLimits, size_text

_LAYOUTS = {"sparse_coo": torch.sparse_coo, "sparse_csr": torch.sparse_csr, "sparse_csc": torch.sparse_csc,
            "sparse_bsr": torch.sparse_bsr, "sparse_bsc": torch.sparse_bsc}
_COMPRESSED = {"sparse_csr": ("crow_indices", "col_indices"), "sparse_csc": ("ccol_indices", "row_indices"),
               "sparse_bsr": ("crow_indices", "col_indices"), "sparse_bsc": ("ccol_indices", "row_indices")}
_MEMORY_FORMATS = {"contiguous_format": torch.contiguous_format, "channels_last": torch.channels_last,
                   "channels_last_3d": torch.channels_last_3d, "preserve_format": torch.preserve_format}
_TORCH_LAYOUTS = {"strided": torch.strided, **_LAYOUTS, "jagged": torch.jagged}


class CodecError(ValueError):
    """A value that cannot be encoded, or an encoded value that is malformed (`field` says where)."""

    def __init__(self, field: str, message: str):
        field = field if len(field) <= 80 else f"{field[:77]}..."  # deep or hostile keys make long paths
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


# -- encoding ----------------------------------------------------------------------------------

class Encoder:
    """Encodes values that may share storages; `storages` is the table they refer to.

    A storage is kept from its first element up to the last one any encoded view reaches."""

    def __init__(self) -> None:
        self._bases: list[torch.Tensor] = []  # each storage as a 1-d tensor of its views' dtype
        self._reach: list[int] = []
        self._index: dict[tuple[int, torch.dtype], int] = {}

    @property
    def storages(self) -> list[dict[str, Any]]:
        table = []
        for base, reach in zip(self._bases, self._reach):
            data = None if base.device.type == "meta" else base64.b64encode(_bytes_of(base[:reach])).decode("ascii")
            table.append({"dtype": dtype_names.canonical_name(base.dtype), "elements": reach, "base64": data})
        return table

    def value(self, value: Any, field: str = "inputs") -> Any:
        if isinstance(value, torch.Tensor):
            return self.tensor(value, field)
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return {"int": str(value)} if abs(value) > 2**53 else value
        if isinstance(value, float):
            return {"float": value.hex()}
        if isinstance(value, complex):
            return {"complex": [value.real.hex(), value.imag.hex()]}
        if isinstance(value, torch.dtype):
            return {"dtype": dtype_names.canonical_name(value)}
        if isinstance(value, torch.device):
            return {"device": str(value)}
        if isinstance(value, torch.memory_format):
            return {"memory_format": next(k for k, v in _MEMORY_FORMATS.items() if v == value)}
        if isinstance(value, torch.layout):
            return {"layout": next(k for k, v in _TORCH_LAYOUTS.items() if v == value)}
        if isinstance(value, torch.Size):
            return {"size": list(value)}
        if isinstance(value, slice):
            return {"slice": [self.value(value.start, field), self.value(value.stop, field),
                              self.value(value.step, field)]}
        if value is Ellipsis:
            return {"ellipsis": True}
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return {"tuple": [self.value(v, f"{field}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.value(v, f"{field}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return {"dict": {k: self.value(v, f"{field}.{k}") for k, v in value.items()}}
        raise CodecError(field, f"{type(value).__name__} values cannot be stored in a corpus case")

    def tensor(self, t: torch.Tensor, field: str) -> dict[str, Any]:
        t = t.detach()
        if t.device.type not in ("cpu", "meta"):
            t = t.cpu()
        head = {"dtype": dtype_names.canonical_name(t.dtype), "requires_grad": bool(t.requires_grad)}
        if t.is_nested:  # a nested tensor's sizes are its components'
            return {"tensor": "nested", **head, "nested_layout": "jagged" if t.layout == torch.jagged
                    else "strided", "components": [self.tensor(c, f"{field}.components[{i}]")
                                                   for i, c in enumerate(t.unbind())]}
        head["sizes"] = list(t.shape)
        if t.layout == torch.sparse_coo:
            return {"tensor": "sparse_coo", **head, "coalesced": t.is_coalesced(),
                    "indices": self.tensor(t._indices(), f"{field}.indices"),
                    "values": self.tensor(t._values(), f"{field}.values")}
        for name, layout in _LAYOUTS.items():
            if t.layout == layout:
                compressed, plain = _COMPRESSED[name]
                return {"tensor": name, **head,
                        "compressed_indices": self.tensor(getattr(t, compressed)(), f"{field}.{compressed}"),
                        "plain_indices": self.tensor(getattr(t, plain)(), f"{field}.{plain}"),
                        "values": self.tensor(t.values(), f"{field}.values")}
        if t.layout != torch.strided:
            raise CodecError(field, f"tensors of layout {t.layout} cannot be stored in a corpus case")
        return {"tensor": "strided", **head, "strides": list(t.stride()), "storage_offset": t.storage_offset(),
                "storage": self._storage(t), "device": "meta" if t.device.type == "meta" else None}

    def _storage(self, t: torch.Tensor) -> int:
        storage = t.untyped_storage()
        key = (storage._cdata, t.dtype)
        if key not in self._index:
            elements = storage.nbytes() // t.element_size()
            self._index[key] = len(self._bases)
            self._bases.append(torch.empty(0, dtype=t.dtype, device=t.device).set_(storage, 0, (elements,), (1,)))
            self._reach.append(0)
        index = self._index[key]
        if t.numel():
            reach = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1
            self._reach[index] = max(self._reach[index], reach)
        return index


def _bytes_of(flat: torch.Tensor) -> bytes:
    return flat.contiguous().view(torch.uint8).numpy().tobytes() if flat.numel() else b""


# -- decoding ----------------------------------------------------------------------------------

class Decoder:
    """Rebuilds values from their encoding and a storage table (each storage is built once).

    Bounded by `limits` (`torchcts.core.case_limits`): the storages built and the tensors built each
    stay within `max_case_bytes`, values nest at most `max_depth` levels, and sizes, strides,
    offsets and counts are checked to be plain integers in range before torch sees them."""

    def __init__(self, storages: Any, field: str = "storages", limits: CaseLimits = CaseLimits()):
        if not isinstance(storages, list):
            raise CodecError(field, f"expected a list of storages, got {type(storages).__name__}")
        self._raw = storages
        self._built: dict[int, torch.Tensor] = {}
        self._limits = limits
        self._used = {"storages": 0, "tensors": 0}  # bytes charged so far, per budget
        self._depth = 0

    def value(self, data: Any, field: str = "inputs") -> Any:
        with self._nesting(field):
            return self._value(data, field)

    def tensor(self, data: Any, field: str) -> torch.Tensor:
        with self._nesting(field):
            return self._tensor(data, field)

    @contextlib.contextmanager
    def _nesting(self, field: str) -> Iterator[None]:
        """Decoding recurses once per level: bound the levels (a deep `args` must not overflow the stack)."""
        if self._depth >= self._limits.max_depth:
            raise CodecError(field, f"values nested deeper than {self._limits.max_depth} levels")
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def _value(self, data: Any, field: str) -> Any:
        if data is None or isinstance(data, (bool, str, int, float)):
            return data
        if isinstance(data, list):
            return [self.value(v, f"{field}[{i}]") for i, v in enumerate(data)]
        if not isinstance(data, dict) or not data:
            raise CodecError(field, f"unreadable value {brief(data)}")
        if "tensor" in data:
            return self.tensor(data, field)
        (kind, payload), = data.items() if len(data) == 1 else ((None, None),)
        try:
            if kind == "int":
                if not isinstance(payload, str):
                    raise TypeError("expected a string of digits")
                return int(payload)  # Python refuses more than 4300 digits (ValueError)
            if kind == "float":
                return float.fromhex(payload)
            if kind == "complex":
                real, imag = payload
                return complex(float.fromhex(real), float.fromhex(imag))
            if kind == "dtype":
                return _dtype(payload, field)
            if kind == "device":
                if not isinstance(payload, str):
                    raise TypeError("expected a device name")
                return torch.device(payload)
            if kind == "memory_format":
                return _MEMORY_FORMATS[payload]
            if kind == "layout":
                return _TORCH_LAYOUTS[payload]
            if kind == "size":
                return torch.Size(_integers(payload, f"{field}.size", low=-2**63))
            if kind == "slice":
                start, stop, step = payload
                return slice(*(self.value(v, f"{field}.slice[{i}]") for i, v in enumerate((start, stop, step))))
            if kind == "ellipsis":
                return Ellipsis
            if kind == "tuple":
                if not isinstance(payload, list):
                    raise TypeError("expected a list")
                return tuple(self.value(v, f"{field}[{i}]") for i, v in enumerate(payload))
            if kind == "dict":
                return {str(k): self.value(v, f"{field}.{k}") for k, v in payload.items()}
        except CodecError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError, OverflowError) as exc:
            raise CodecError(field, f"malformed {kind} value {brief(payload)}: {_first_line(exc)}") from None
        raise CodecError(field, f"unknown value kind in {brief(sorted(map(str, data))[:5])}")

    def _tensor(self, data: Any, field: str) -> torch.Tensor:
        if not isinstance(data, dict):
            raise CodecError(field, f"expected an encoded tensor (an object), got {brief(data)}")
        kind = data.get("tensor")
        try:
            dtype = _dtype(data["dtype"], f"{field}.dtype")
            if kind == "strided":
                t = self._strided(data, dtype, field)
            elif kind == "nested":
                t = self._nested(data, dtype, field)
            elif kind == "sparse_coo":
                sizes = self._dense_sizes(data, dtype, field)
                t = torch.sparse_coo_tensor(self.tensor(data["indices"], f"{field}.indices"),
                                            self.tensor(data["values"], f"{field}.values"), sizes,
                                            is_coalesced=bool(data["coalesced"]), check_invariants=True)
            elif kind in _COMPRESSED:
                sizes = self._dense_sizes(data, dtype, field)
                t = torch.sparse_compressed_tensor(
                    self.tensor(data["compressed_indices"], f"{field}.compressed_indices"),
                    self.tensor(data["plain_indices"], f"{field}.plain_indices"),
                    self.tensor(data["values"], f"{field}.values"), sizes, layout=_LAYOUTS[kind],
                    check_invariants=True)
            else:
                raise CodecError(f"{field}.tensor", f"unknown tensor kind {brief(kind)}")
        except CodecError:
            raise
        except KeyError as exc:
            raise CodecError(f"{field}.{exc.args[0]}", "missing") from None
        except (TypeError, ValueError, RuntimeError, OverflowError, IndexError) as exc:
            raise CodecError(field, f"cannot rebuild the tensor: {_first_line(exc)}") from None
        if data.get("requires_grad") and (t.is_floating_point() or t.is_complex()):
            t.requires_grad_(True)
        return t

    def _strided(self, data: dict[str, Any], dtype: torch.dtype, field: str) -> torch.Tensor:
        index = data["storage"]
        if type(index) is not int or not 0 <= index < len(self._raw):
            raise CodecError(f"{field}.storage", f"no storage {brief(index)} (the case has {len(self._raw)})")
        sizes = _integers(data["sizes"], f"{field}.sizes", most=MAX_DIMS)
        strides = _integers(data["strides"], f"{field}.strides", most=MAX_DIMS)
        offset = _integer(data["storage_offset"], f"{field}.storage_offset")
        if len(sizes) != len(strides):
            raise CodecError(f"{field}.strides", f"{len(strides)} strides for {len(sizes)} sizes")
        self._charge("tensors", f"{field}.sizes", math.prod(sizes), dtype)  # a stride-0 view counts in full
        base = self._storage(index, f"storages[{index}]")
        if base.dtype != dtype:
            raise CodecError(f"{field}.dtype", f"{data['dtype']} over a {base.dtype} storage")
        reach = offset + sum((n - 1) * s for n, s in zip(sizes, strides)) + 1 if all(sizes) else 0
        if reach > base.numel():
            raise CodecError(f"{field}.storage_offset",
                             f"the view reaches element {reach - 1} of a storage of {base.numel()}")
        t = base.as_strided(sizes, strides, offset)
        if data.get("device") == "meta":
            t = t.to("meta")
        return t

    def _nested(self, data: dict[str, Any], dtype: torch.dtype, field: str) -> torch.Tensor:
        if not isinstance(data["components"], list):
            raise CodecError(f"{field}.components", f"expected a list, got {brief(data['components'])}")
        components = [self.tensor(c, f"{field}.components[{i}]") for i, c in enumerate(data["components"])]
        self._charge("tensors", f"{field}.components", sum(c.numel() for c in components), dtype)  # the copy
        layout = torch.jagged if data["nested_layout"] == "jagged" else torch.strided
        return torch.nested.nested_tensor(components, layout=layout)

    def _dense_sizes(self, data: dict[str, Any], dtype: torch.dtype, field: str) -> list[int]:
        """A sparse tensor's sizes, charged at its dense size (comparing it may densify it)."""
        sizes = _integers(data["sizes"], f"{field}.sizes", most=MAX_DIMS)
        self._charge("tensors", f"{field}.sizes", math.prod(sizes), dtype)
        return sizes

    def _charge(self, budget: str, field: str, elements: int, dtype: torch.dtype) -> None:
        """Count `elements` of `dtype` against the case's storage or tensor bytes; over the limit, refuse."""
        nbytes = elements * dtype.itemsize
        total = self._used[budget] + nbytes
        if total > self._limits.max_case_bytes:
            what = f"{elements} elements x {dtype.itemsize} bytes = {size_text(nbytes)}"
            if nbytes > self._limits.max_case_bytes:
                raise CodecError(field, f"{what} exceeds {self._limits.option()}")
            raise CodecError(field, f"{what} brings the case's {budget} to {size_text(total)}, over "
                                    f"{self._limits.option()}")
        self._used[budget] = total

    def _storage(self, index: int, field: str) -> torch.Tensor:
        if index not in self._built:
            raw = self._raw[index]
            if not isinstance(raw, dict):
                raise CodecError(field, "expected an object")
            try:
                dtype = _dtype(raw["dtype"], f"{field}.dtype")
                elements = _integer(raw["elements"], f"{field}.elements")
                text = raw["base64"]
            except KeyError as exc:
                raise CodecError(f"{field}.{exc.args[0]}", "missing") from None
            self._charge("storages", f"{field}.elements", elements, dtype)
            if text is None:
                self._built[index] = torch.zeros(elements, dtype=dtype)
                return self._built[index]
            itemsize = dtype.itemsize
            if not isinstance(text, str) or len(text) > 4 * ((elements * itemsize + 2) // 3):
                length = f"{len(text)} characters" if isinstance(text, str) else f"a {type(text).__name__}"
                raise CodecError(f"{field}.base64", f"{length} for {elements} elements of {itemsize} bytes")
            try:
                data = bytearray(base64.b64decode(text, validate=True))
            except ValueError as exc:
                raise CodecError(f"{field}.base64", f"not base64: {exc}") from None
            if len(data) != elements * itemsize:
                raise CodecError(f"{field}.base64",
                                 f"{len(data)} bytes for {elements} elements of {itemsize} bytes (truncated?)")
            flat = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
            self._built[index] = (flat.view(dtype) if dtype != torch.bool else flat.bool()).clone() if data \
                else torch.empty(0, dtype=dtype)
        return self._built[index]


def _integers(values: Any, field: str, low: int = 0, most: int | None = None) -> list[int]:
    """`values` as a list of plain integers (not bools, floats or strings) from `low` to 2**63 - 1."""
    if not isinstance(values, list):
        raise CodecError(field, f"expected a list of integers, got {brief(values)}")
    if most is not None and len(values) > most:
        raise CodecError(field, f"{len(values)} entries; a tensor has at most {most} dimensions")
    return [_integer(v, f"{field}[{i}]", low) for i, v in enumerate(values)]


def _integer(value: Any, field: str, low: int = 0) -> int:
    if type(value) is not int or not low <= value < 2**63:
        allowed = "a 64-bit integer" if low < 0 else f"an integer from {low} to 2**63 - 1"
        raise CodecError(field, f"expected {allowed}, got {brief(value)}")
    return value


def brief(value: Any) -> str:
    """A value for an error message: its repr, cut short (a hostile case may hold megabytes)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}... ({len(text)} characters)"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


def _dtype(name: Any, field: str) -> torch.dtype:
    dtype = dtype_names.lookup(name) if isinstance(name, str) else None
    if dtype is None:
        raise CodecError(field, f"unknown dtype {brief(name)}")
    return dtype
