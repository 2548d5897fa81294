"""A manifest value as plain data: what validation reads, with none of the manifest's own objects left.

A manifest is code, and so are the objects it builds: a dict subclass whose `items` raises, a str
subclass whose `__str__` exits, a float subclass, a list that contains itself, a 10**5000. `to_plain`
reads such a value once, through each object's own interface (`items()`, iteration), and returns
builtin data: dict, list, tuple, str, int, float, bool, None and torch.dtype, exact types only.
Anything else becomes an `Opaque` that keeps only its type name and a short repr, so a bad value is
still reported with what it was. A read that raises is a problem at its key path, not a traceback.

The plain value crosses from the process that ran the manifest as JSON (`to_json`, `from_json`):
no pickle, so nothing the manifest made can run code in the process that validates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from torchcts import dtypes
from torchcts.manifest.problems import KeyPath, safe_repr, type_name

MAX_DEPTH = 32  # a manifest nests 4 levels; deeper is a value that contains itself
MAX_VALUES = 1_000_000
MAX_TEXT_CHARS = 16 * 2**20  # characters of all strings (and digits of huge ints) together
OPAQUE_REPR_CHARS = 200
ROOT = ("manifest",)  # the key path of problems with the value itself
SAFE_JSON_INT = 2**53  # larger ints travel as hex: JSON readers and Python's int-to-str limit differ


class Opaque:
    """A value of a type no manifest key accepts, kept as its type name and repr for messages.

    An unreadable value (its `items()` raised, it nests too deep) is an Opaque with a `problem`,
    which `to_plain` reports again wherever the value is read: in the child that ran the manifest
    and in the process that validates it."""

    __slots__ = ("type_name", "text", "problem")

    def __init__(self, type_name: str, text: str, problem: str | None = None):
        self.type_name, self.text, self.problem = type_name, text, problem

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def value_type(value: object) -> str:
    """The type name of a plain value, the original's for an `Opaque`."""
    return value.type_name if isinstance(value, Opaque) else type_name(value)


class TooLarge(Exception):
    """The value is larger than any manifest needs (a limit is named in the message)."""


def to_plain(value: object) -> tuple[object, list[tuple[KeyPath, str]]]:
    """`value` as plain data, and a (key path, message) for every part that could not be read.

    A part that cannot be read is an `Opaque` in the result. A value over the size limits gives a
    single problem, at `ROOT` like every problem with the value itself."""
    reader = _Reader()
    try:
        plain = reader.read(value, (), 0)
    except TooLarge as exc:
        return Opaque("object", "<too large>", str(exc)), [(ROOT, str(exc))]
    return plain, [(path or ROOT, message) for path, message in reader.problems]


class _Reader:
    def __init__(self) -> None:
        self.problems: list[tuple[KeyPath, str]] = []
        self.values = 0
        self.text = 0

    def read(self, value: object, path: KeyPath, depth: int) -> object:
        self.values += 1
        if self.values > MAX_VALUES:
            raise TooLarge(f"holds more than {MAX_VALUES:,} values; no manifest needs that many")
        try:
            return self._read(value, path, depth)
        except (TooLarge, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - the manifest's own methods may raise anything
            return self._unreadable(value, path, f"cannot be read: {_doing(exc)}")

    def _unreadable(self, value: object, path: KeyPath, problem: str) -> Opaque:
        self.problems.append((path, problem))
        return Opaque(type_name(value), "<unreadable>", problem)

    def _read(self, value: object, path: KeyPath, depth: int) -> object:
        if value is None or value is True or value is False or isinstance(value, torch.dtype):
            return value
        if isinstance(value, str):
            text = str.__str__(value)  # the characters themselves, whatever a subclass's __str__ does
            return self._count_text(text, len(text))
        if isinstance(value, int):
            number = int.__int__(value)
            if abs(number) >= SAFE_JSON_INT:
                self._count_text(number, int.bit_length(number) // 4)
            return number
        if isinstance(value, float):
            return float.__float__(value)
        if isinstance(value, (Mapping, list, tuple)) and depth >= MAX_DEPTH:
            return self._unreadable(value, path, f"nested more than {MAX_DEPTH} levels deep (does a dict or list "
                                                 "contain itself?)")
        if isinstance(value, Mapping):
            items = _call(value, "items", lambda: list(value.items()))
            result: dict[object, object] = {}
            for key, item in items:
                plain_key = self._key(self.read(key, path + (_label(key),), depth + 1))
                result[plain_key] = self.read(item, path + (key_label(plain_key),), depth + 1)
            return result
        if isinstance(value, (list, tuple)):
            elements = _call(value, "iterating it", lambda: list(value))
            plain = [self.read(item, path + (index,), depth + 1) for index, item in enumerate(elements)]
            return plain if isinstance(value, list) else tuple(plain)
        if isinstance(value, Opaque):
            if value.problem is not None:
                self.problems.append((path, value.problem))
            return value
        return Opaque(type_name(value), safe_repr(value, OPAQUE_REPR_CHARS))

    def _count_text(self, value: Any, chars: int) -> Any:
        self.text += chars
        if self.text > MAX_TEXT_CHARS:
            raise TooLarge(f"holds more than {MAX_TEXT_CHARS // 2**20} MiB of text; no manifest needs that much")
        return value

    @staticmethod
    def _key(key: object) -> object:
        """A plain key that can be a dict key (a custom mapping may yield a list as a key)."""
        try:
            hash(key)
            return key
        except TypeError:
            return Opaque(type_name(key), safe_repr(key, OPAQUE_REPR_CHARS))


def key_label(key: object) -> object:
    """A plain dict key as it appears in a key path (dtypes by name, as validation names them)."""
    return dtypes.canonical_name(key) if isinstance(key, torch.dtype) else key


def _label(key: object) -> object:
    """A key as shown in a key path before it is read (reading it is what may fail)."""
    return key if type(key) in (str, int, bool) or key is None else Opaque(type_name(key), "<key>")


def _call(value: object, what: str, read: Any) -> Any:
    try:
        return read()
    except (TooLarge, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001
        raise _ReadError(f"{what}{'()' if what.isidentifier() else ''} raised {_doing(exc)}") from None


class _ReadError(Exception):
    def __str__(self) -> str:
        return self.args[0]


def _doing(exc: BaseException) -> str:
    """'RuntimeError: boom' for an exception a user object raised, safely and on one line."""
    if isinstance(exc, _ReadError):
        return str(exc)
    return f"{type(exc).__name__}: {exception_text(exc)}" if exception_text(exc) else type(exc).__name__


def exception_text(exc: BaseException, limit: int = 300) -> str:
    """`str(exc)` on one line, cut to `limit`; an exception whose `__str__` raises is not a second crash."""
    try:
        text = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001
        return "<its message cannot be printed>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- JSON ----------------------------------------------------------------------------------------
# Scalars are JSON scalars; everything else is a one-key object: {"dict": [[k, v], ...]},
# {"list": [...]}, {"tuple": [...]}, {"int": "0x..."}, {"dtype": "float32"}, {"opaque": [type, repr]}.


def to_json(value: object) -> Any:
    """A plain value as JSON-ready data (see the tags above)."""
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        return value if abs(value) < SAFE_JSON_INT else {"int": hex(value)}
    if isinstance(value, torch.dtype):
        return {"dtype": dtypes.canonical_name(value)}
    if isinstance(value, dict):
        return {"dict": [[to_json(k), to_json(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return {"list": [to_json(v) for v in value]}
    if isinstance(value, tuple):
        return {"tuple": [to_json(v) for v in value]}
    if isinstance(value, Opaque):
        return {"opaque": [value.type_name, value.text] + ([value.problem] if value.problem is not None else [])}
    raise TypeError(f"not a plain value: {type_name(value)}")


def from_json(data: Any) -> object:
    """The plain value `to_json` encoded; `ValueError` for anything it would not have written."""
    if data is None or isinstance(data, (bool, str, float, int)):
        return data
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError("malformed plain value")
    (tag, body), = data.items()
    if tag == "int" and isinstance(body, str):
        return int(body, 16)
    if tag == "dtype" and isinstance(body, str):
        dtype = dtypes.lookup(body)
        return dtype if dtype is not None else Opaque("torch.dtype", f"torch.{body}")
    if tag == "opaque" and isinstance(body, list) and len(body) in (2, 3) and all(isinstance(b, str) for b in body):
        return Opaque(*body)
    if tag in ("list", "tuple") and isinstance(body, list):
        items = [from_json(v) for v in body]
        return items if tag == "list" else tuple(items)
    if tag == "dict" and isinstance(body, list) and all(isinstance(p, list) and len(p) == 2 for p in body):
        return {_Reader._key(from_json(k)): from_json(v) for k, v in body}
    raise ValueError("malformed plain value")
