"""`tiny`: a small Python PrivateUse1 backend, written the way a backend team starts one.

Importing this module renames PrivateUse1 to "tiny" and registers a handful of aten kernels with
`torch.library`; every other op raises the dispatcher's own NotImplementedError ("Could not run
'aten::X' with arguments from the 'tiny' backend ..."). There is deliberately no catch-all
fallback: the tests use it as the normal state of a backend in development (a few kernels, many
missing, one real bug).

Data model: a device tensor is a `TinyTensor`, a wrapper whose sizes, strides and storage offset
are those of the CPU tensor holding its elements (`_data`); views are CPU views of the same data,
so writes through a view reach its base. The wrapper's `__torch_dispatch__` only forwards each op,
unchanged, to the dispatcher below it: the PrivateUse1 kernels registered here, or the error.
A C++ composite that makes an alias itself (`_unsafe_view`, reached by reshaping a non-contiguous
tensor) yields a device tensor without data, which `unwrap` refuses with a RuntimeError: another
gap of a first draft, left in (the smoke template meets it in 5 items).

The deliberate bug: `neg` processes elements in blocks of 4 and forgets the tail, so the last
`numel % 4` elements come back unchanged (`torch.tensor([1.0], device="tiny").neg()` is 1.0).

PrivateUse1 can be registered once per process: import this only in a subprocess of its own.
"""

from __future__ import annotations

import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

DEVICE_NAME = "tiny"

_setup_privateuseone_for_python_backend(DEVICE_NAME)
_lib = torch.library.Library("aten", "IMPL")  # kept alive for the life of the process


class TinyTensor(torch.Tensor):
    """A tensor on the tiny device; `_data` is the CPU tensor holding its elements."""

    _data: torch.Tensor

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        with torch._C._DisableTorchDispatch():  # on to the PrivateUse1 kernel (or its absence)
            return func(*args, **(kwargs or {}))

    def __repr__(self, *, tensor_contents=None) -> str:  # noqa: D105
        return f"TinyTensor({self._data.tolist()!r}, dtype={self.dtype})"


def wrap(data: torch.Tensor) -> TinyTensor:
    """A device tensor whose elements are CPU tensor `data` (same sizes, strides and offset)."""
    tensor = torch.Tensor._make_wrapper_subclass(
        TinyTensor, data.size(), strides=data.stride(), storage_offset=data.storage_offset(),
        dtype=data.dtype, device=torch.device(DEVICE_NAME, 0))
    tensor._data = data
    return tensor


def unwrap(value):
    """The CPU data of a device tensor; anything else unchanged."""
    if isinstance(value, torch.Tensor) and value.device.type == DEVICE_NAME:
        if not isinstance(value, TinyTensor):
            raise RuntimeError("tiny: a device tensor without data (made by a kernel tiny does not implement)")
        return value._data
    return value


def kernel(overload: str):
    """Register the decorated function as the PrivateUse1 kernel of aten `overload`."""
    def register(fn):
        _lib.impl(overload, fn, "PrivateUse1")
        return fn
    return register


@kernel("empty.memory_format")
def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return wrap(torch.empty(size, dtype=dtype, memory_format=memory_format or torch.contiguous_format))


@kernel("empty_strided")
def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap(torch.empty_strided(size, stride, dtype=dtype))


@kernel("_copy_from")
def copy_from(src, dst, non_blocking=False):
    if dst.device.type == DEVICE_NAME:
        unwrap(dst).copy_(unwrap(src))
    else:
        dst.copy_(unwrap(src))
    return dst


@kernel("as_strided")
def as_strided(self, size, stride, storage_offset=None):
    return wrap(unwrap(self).as_strided(size, stride, storage_offset))


@kernel("view")
def view(self, size):
    return wrap(unwrap(self).view(size))


@kernel("detach")
def detach(self):
    return wrap(unwrap(self))


@kernel("alias")
def alias(self):
    return wrap(unwrap(self))


@kernel("fill_.Scalar")
def fill_(self, value):
    unwrap(self).fill_(value)
    return self


@kernel("add.Tensor")
def add(self, other, alpha=1):
    return wrap(torch.add(unwrap(self), unwrap(other), alpha=alpha))


@kernel("sub.Tensor")
def sub(self, other, alpha=1):
    return wrap(torch.sub(unwrap(self), unwrap(other), alpha=alpha))


@kernel("mul.Tensor")
def mul(self, other):
    return wrap(torch.mul(unwrap(self), unwrap(other)))


@kernel("abs")
def abs_(self):
    return wrap(torch.abs(unwrap(self)))


@kernel("neg")
def neg(self):
    data = unwrap(self)
    flat = data.reshape(-1)
    out = flat.clone()
    body = flat.numel() - flat.numel() % 4  # blocks of 4 elements...
    out[:body] = -flat[:body]  # ...and no loop over the tail: the deliberate bug
    return wrap(out.view(data.shape))
