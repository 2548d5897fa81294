"""Exact, code-free JSON for case inputs: tensors, their storages, and plain arguments.

Dense tensors are written as views of storages: dtype, sizes, strides, storage offset and a
reference into a table of storages whose bytes are kept whole (base64), so NaN payloads, -0.0
and the bytes between strided elements survive, and tensors that shared a storage (an `out=`
aliasing its input) share it again when rebuilt. Sparse tensors keep their index and value
tensors, nested tensors their components. Numbers keep their exact value (floats as hex).
Decoding builds objects from this vocabulary only; nothing is imported or executed.
"""

from __future__ import annotations

import base64
from typing import Any

import torch

from torchcts import dtypes as dtype_names

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
        super().__init__(f"{field}: {message}")
        self.field = field


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
    """Rebuilds values from their encoding and a storage table (each storage is built once)."""

    def __init__(self, storages: Any, field: str = "storages"):
        if not isinstance(storages, list):
            raise CodecError(field, f"expected a list of storages, got {type(storages).__name__}")
        self._raw = storages
        self._built: dict[int, torch.Tensor] = {}

    def value(self, data: Any, field: str = "inputs") -> Any:
        if data is None or isinstance(data, (bool, str, int, float)):
            return data
        if isinstance(data, list):
            return [self.value(v, f"{field}[{i}]") for i, v in enumerate(data)]
        if not isinstance(data, dict) or not data:
            raise CodecError(field, f"unreadable value {data!r}")
        if "tensor" in data:
            return self.tensor(data, field)
        (kind, payload), = data.items() if len(data) == 1 else ((None, None),)
        try:
            if kind == "int":
                return int(payload)
            if kind == "float":
                return float.fromhex(payload)
            if kind == "complex":
                return complex(float.fromhex(payload[0]), float.fromhex(payload[1]))
            if kind == "dtype":
                return _dtype(payload, field)
            if kind == "device":
                return torch.device(payload)
            if kind == "memory_format":
                return _MEMORY_FORMATS[payload]
            if kind == "layout":
                return _TORCH_LAYOUTS[payload]
            if kind == "size":
                return torch.Size(int(v) for v in payload)
            if kind == "slice":
                return slice(*(self.value(v, f"{field}.slice") for v in payload))
            if kind == "ellipsis":
                return Ellipsis
            if kind == "tuple":
                return tuple(self.value(v, f"{field}[{i}]") for i, v in enumerate(payload))
            if kind == "dict":
                return {str(k): self.value(v, f"{field}.{k}") for k, v in payload.items()}
        except CodecError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
            raise CodecError(field, f"malformed {kind} value {payload!r}: {exc}") from None
        raise CodecError(field, f"unknown value kind in {sorted(data)}")

    def tensor(self, data: dict[str, Any], field: str) -> torch.Tensor:
        kind = data.get("tensor")
        try:
            dtype = _dtype(data["dtype"], f"{field}.dtype")
            if kind == "strided":
                t = self._strided(data, dtype, field)
            elif kind == "nested":
                components = [self.tensor(c, f"{field}.components[{i}]") for i, c in enumerate(data["components"])]
                layout = torch.jagged if data["nested_layout"] == "jagged" else torch.strided
                t = torch.nested.nested_tensor(components, layout=layout)
            elif kind == "sparse_coo":
                t = torch.sparse_coo_tensor(self.tensor(data["indices"], f"{field}.indices"),
                                            self.tensor(data["values"], f"{field}.values"), data["sizes"],
                                            is_coalesced=bool(data["coalesced"]), check_invariants=True)
            elif kind in _COMPRESSED:
                t = torch.sparse_compressed_tensor(
                    self.tensor(data["compressed_indices"], f"{field}.compressed_indices"),
                    self.tensor(data["plain_indices"], f"{field}.plain_indices"),
                    self.tensor(data["values"], f"{field}.values"), data["sizes"], layout=_LAYOUTS[kind],
                    check_invariants=True)
            else:
                raise CodecError(f"{field}.tensor", f"unknown tensor kind {kind!r}")
        except CodecError:
            raise
        except KeyError as exc:
            raise CodecError(f"{field}.{exc.args[0]}", "missing") from None
        except (TypeError, ValueError, RuntimeError) as exc:
            raise CodecError(field, f"cannot rebuild the tensor: {exc}") from None
        if data.get("requires_grad") and (t.is_floating_point() or t.is_complex()):
            t.requires_grad_(True)
        return t

    def _strided(self, data: dict[str, Any], dtype: torch.dtype, field: str) -> torch.Tensor:
        index = data["storage"]
        if not isinstance(index, int) or not 0 <= index < len(self._raw):
            raise CodecError(f"{field}.storage", f"no storage {index!r} (the case has {len(self._raw)})")
        base = self._storage(index, f"storages[{index}]")
        if base.dtype != dtype:
            raise CodecError(f"{field}.dtype", f"{data['dtype']} over a {base.dtype} storage")
        sizes, strides, offset = data["sizes"], data["strides"], data["storage_offset"]
        if len(sizes) != len(strides):
            raise CodecError(f"{field}.strides", f"{len(strides)} strides for {len(sizes)} sizes")
        reach = offset + sum((n - 1) * s for n, s in zip(sizes, strides)) + 1 if all(sizes) else 0
        if reach > base.numel():
            raise CodecError(f"{field}.storage_offset",
                             f"the view reaches element {reach - 1} of a storage of {base.numel()}")
        t = base.as_strided(sizes, strides, offset)
        if data.get("device") == "meta":
            t = t.to("meta")
        return t

    def _storage(self, index: int, field: str) -> torch.Tensor:
        if index not in self._built:
            raw = self._raw[index]
            if not isinstance(raw, dict):
                raise CodecError(field, "expected an object")
            try:
                dtype = _dtype(raw["dtype"], f"{field}.dtype")
                elements = int(raw["elements"])
                if raw["base64"] is None:
                    self._built[index] = torch.zeros(elements, dtype=dtype)
                    return self._built[index]
                data = bytearray(base64.b64decode(raw["base64"], validate=True))
            except KeyError as exc:
                raise CodecError(f"{field}.{exc.args[0]}", "missing") from None
            except (ValueError, TypeError) as exc:
                raise CodecError(f"{field}.base64", f"not base64: {exc}") from None
            itemsize = torch.empty(0, dtype=dtype).element_size()
            if len(data) != elements * itemsize:
                raise CodecError(f"{field}.base64",
                                 f"{len(data)} bytes for {elements} elements of {itemsize} bytes (truncated?)")
            flat = torch.frombuffer(data, dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
            self._built[index] = (flat.view(dtype) if dtype != torch.bool else flat.bool()).clone() if data \
                else torch.empty(0, dtype=dtype)
        return self._built[index]


def _dtype(name: Any, field: str) -> torch.dtype:
    dtype = dtype_names.lookup(name) if isinstance(name, str) else None
    if dtype is None:
        raise CodecError(field, f"unknown dtype {name!r}")
    return dtype

