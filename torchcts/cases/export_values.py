"""Python source for a case's values, for `torchcts replay --export-script` (`cases.export`).

A case file is untrusted data: `ValueWriter` writes an expression for an encoded value from checked
values only (integers by type, strings and floats as literals, dtypes, layouts and memory formats
by name from torch's own tables); anything else is a `CaseFileError` naming the file and the field.
"""

from __future__ import annotations

import math
import re
import reprlib
from typing import Any, NoReturn

from torchcts import dtypes as dtype_names
from torchcts.cases.codec import _MEMORY_FORMATS, _TORCH_LAYOUTS
from torchcts.cases.files import CaseFileError, CorpusCase

_INTEGER = re.compile(r"[-+]?[0-9]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")  # and a length that is a multiple of 4 (a group regex costs ~32 B/char)
_NESTED_LAYOUTS = tuple(name for name in ("jagged", "strided") if name in _TORCH_LAYOUTS)
_COMPRESSED_LAYOUTS = tuple(name for name in _TORCH_LAYOUTS if name.startswith(("sparse_c", "sparse_b")))
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxstring, _SHOW.maxother, _SHOW.maxlist, _SHOW.maxdict = 2, 40, 40, 4, 4


class ValueWriter:
    """Python source for case values, from checked values only; anything else fails naming the field."""

    def __init__(self, case: CorpusCase):
        self.case = case
        self.names: set[str] = set()  # attributes the code uses beyond the template's (from torch's tables)

    def fail(self, field: str, message: str) -> NoReturn:
        raise CaseFileError(self.case.path or self.case.short_id, field, message)

    def integer(self, value: Any, field: str, minimum: int | None = None) -> str:
        if type(value) is not int:  # bool is an int subclass; "3" and 3.0 are not integers here
            self.fail(field, f"expected an integer, got {show(value)}")
        if minimum is not None and value < minimum:
            self.fail(field, f"{value} is below {minimum}")
        return str(value)

    def integers(self, value: Any, field: str, minimum: int | None = None) -> str:
        if not isinstance(value, list):
            self.fail(field, f"expected a list of integers, got {show(value)}")
        return "[" + ", ".join(self.integer(v, f"{field}[{i}]", minimum) for i, v in enumerate(value)) + "]"

    def torch_name(self, value: Any, allowed: Any, field: str) -> str:
        """`torch.<value>` for a name in `allowed` (torch's own table of that kind)."""
        if not isinstance(value, str) or value not in allowed:
            self.fail(field, f"{show(value)}; allowed: {', '.join(allowed)}")
        self.names.add(value)
        return f"torch.{value}"

    def dtype(self, value: Any, field: str) -> Any:
        found = dtype_names.lookup(value) if isinstance(value, str) else None
        if found is None:
            self.fail(field, f"unknown dtype {show(value)}")
        self.names.add(dtype_names.canonical_name(found))
        return found

    def storage(self, raw: Any, index: int) -> str:
        field = f"storages[{index}]"
        if not isinstance(raw, dict):
            self.fail(field, f"expected an object, got {show(raw)}")
        dtype = self.dtype(raw.get("dtype"), f"{field}.dtype")
        elements = self.integer(raw.get("elements"), f"{field}.elements", 0)
        data = raw.get("base64")
        if data is None:
            return f"torch.zeros({elements}, dtype={dtype})"
        if not isinstance(data, str) or len(data) % 4 or not _BASE64.fullmatch(data):
            self.fail(f"{field}.base64", f"not base64: {show(data)}")
        return f"storage({dtype}, {elements}, {ascii(data)})"

    def value(self, data: Any, field: str) -> str:
        """An expression rebuilding an encoded value (tensors from `s`, the storages on the device)."""
        if data is None or isinstance(data, (bool, int)):
            return repr(data)
        if isinstance(data, float):
            return float_literal(data)
        if isinstance(data, str):
            return ascii(data)
        if isinstance(data, list):
            return "[" + ", ".join(self.value(v, f"{field}[{i}]") for i, v in enumerate(data)) + "]"
        if not isinstance(data, dict) or not data:
            self.fail(field, f"unreadable value {show(data)}")
        if "tensor" in data:
            return self.tensor(data, field)
        if len(data) != 1:
            self.fail(field, f"expected one value kind, got {show(sorted(map(str, data)))}")
        (kind, payload), = data.items()
        if kind == "int":
            return str(self._int(payload, field))
        if kind == "float":
            return float_literal(self._hex_float(payload, field))
        if kind == "complex":
            if not isinstance(payload, list) or len(payload) != 2:
                self.fail(field, f"expected [real, imag], got {show(payload)}")
            real, imag = (self._hex_float(v, f"{field}[{i}]") for i, v in enumerate(payload))
            return f"complex({float_literal(real)}, {float_literal(imag)})"
        if kind == "dtype":
            return str(self.dtype(payload, f"{field}.dtype"))
        if kind == "device":
            return "torch.device(device)"
        if kind == "memory_format":
            return self.torch_name(payload, tuple(_MEMORY_FORMATS), f"{field}.memory_format")
        if kind == "layout":
            return self.torch_name(payload, tuple(_TORCH_LAYOUTS), f"{field}.layout")
        if kind == "size":
            return f"torch.Size({self.integers(payload, f'{field}.size')})"
        if kind == "ellipsis":
            return "Ellipsis"
        if kind == "slice":
            if not (isinstance(payload, list) and 1 <= len(payload) <= 3):
                self.fail(f"{field}.slice", f"expected [start, stop, step], got {show(payload)}")
            return "slice(" + ", ".join(self.value(v, f"{field}.slice[{i}]") for i, v in enumerate(payload)) + ")"
        if kind == "tuple":
            if not isinstance(payload, list):
                self.fail(f"{field}.tuple", f"expected a list, got {show(payload)}")
            return "(" + "".join(self.value(v, f"{field}[{i}]") + ", " for i, v in enumerate(payload)) + ")"
        if kind == "dict" and isinstance(payload, dict) and all(isinstance(k, str) for k in payload):
            return "{" + ", ".join(f"{ascii(k)}: {self.value(v, _key(field, k))}" for k, v in payload.items()) + "}"
        if kind == "dict":
            self.fail(f"{field}.dict", f"expected an object, got {show(payload)}")
        self.fail(field, f"unknown value kind {show(kind)}")

    def tensor(self, data: dict[str, Any], field: str) -> str:
        kind = data.get("tensor")
        dtype = self.dtype(data.get("dtype"), f"{field}.dtype")
        grad = data.get("requires_grad")
        if grad is not None and type(grad) is not bool:
            self.fail(f"{field}.requires_grad", f"expected true or false, got {show(grad)}")
        if kind == "strided":
            index = data.get("storage")
            if type(index) is not int or not 0 <= index < len(self.case.storages):
                self.fail(f"{field}.storage", f"no storage {show(index)} (the case has {len(self.case.storages)})")
            view = (f"s[{index}].as_strided({self.integers(data.get('sizes'), f'{field}.sizes', 0)}, "
                    f"{self.integers(data.get('strides'), f'{field}.strides')}, "
                    f"{self.integer(data.get('storage_offset'), f'{field}.storage_offset', 0)})")
            differentiable = dtype.is_floating_point or dtype.is_complex
            return view + (".to('meta')" if data.get("device") == "meta" else "") + (
                ".requires_grad_()" if grad and differentiable else "")
        if kind == "nested":
            layout = self.torch_name(data.get("nested_layout"), _NESTED_LAYOUTS, f"{field}.nested_layout")
            components = data.get("components")
            if not isinstance(components, list):
                self.fail(f"{field}.components", f"expected a list of tensors, got {show(components)}")
            parts = ", ".join(self._tensor(c, f"{field}.components[{i}]") for i, c in enumerate(components))
            return f"torch.nested.nested_tensor([{parts}], layout={layout})"
        sizes = self.integers(data.get("sizes"), f"{field}.sizes", 0)
        if kind == "sparse_coo":
            return (f"torch.sparse_coo_tensor({self._tensor(data.get('indices'), f'{field}.indices')}, "
                    f"{self._tensor(data.get('values'), f'{field}.values')}, {sizes}, "
                    f"is_coalesced={bool(data.get('coalesced'))})")
        if kind in _COMPRESSED_LAYOUTS:
            self.names.add(kind)
            return (f"torch.sparse_compressed_tensor("
                    f"{self._tensor(data.get('compressed_indices'), f'{field}.compressed_indices')}, "
                    f"{self._tensor(data.get('plain_indices'), f'{field}.plain_indices')}, "
                    f"{self._tensor(data.get('values'), f'{field}.values')}, {sizes}, layout=torch.{kind})")
        self.fail(f"{field}.tensor", f"unknown tensor kind {show(kind)}")

    def _tensor(self, data: Any, field: str) -> str:
        if not isinstance(data, dict) or "tensor" not in data:
            self.fail(field, f"expected a tensor, got {show(data)}")
        return self.tensor(data, field)

    def _int(self, payload: Any, field: str) -> int:
        if type(payload) is int:
            return payload
        try:
            if isinstance(payload, str) and _INTEGER.fullmatch(payload):
                return int(payload)
        except ValueError:  # more digits than Python converts
            pass
        self.fail(f"{field}.int", f"expected decimal digits, got {show(payload)}")

    def _hex_float(self, payload: Any, field: str) -> float:
        try:
            if isinstance(payload, str):
                return float.fromhex(payload)
        except (ValueError, OverflowError):
            pass
        self.fail(field, f"expected a hex float (like '0x1.8p+1'), got {show(payload)}")


def float_literal(value: float) -> str:
    """A literal for `value`, NaN and infinities included."""
    return repr(value) if math.isfinite(value) else f"float({str(value)!r})"


def show(value: Any) -> str:
    """A short one-line ASCII rendering of a case value for an error message."""
    return _SHOW.repr(value).encode("ascii", "backslashreplace").decode("ascii")


def _key(field: str, key: str) -> str:
    return f"{field}.{key}" if key.isidentifier() and key.isascii() else f"{field}[{show(key)}]"
