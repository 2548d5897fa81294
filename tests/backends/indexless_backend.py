"""`newdev`: a small Python PrivateUse1 backend whose tensors have no device index, a defect seen in real backends.

Its wrapper tensors are made with `device="newdev"` instead of `"newdev:0"`, so `tensor.device` is `newdev` and
`tensor.device.index` is None. Elementwise ops work; every structured multi-output op (max.dim, sort, topk,
aminmax, ...) fails with PyTorch's internal assert "structured kernels don't support multi-device outputs",
raised by the generated kernel before any kernel of this backend runs. TorchCTS finds the defect once at run
start (`torchcts.engine.device_findings`) and groups those items under it.

Kernels: allocation, copies, `as_strided`/`view`/`detach`/`alias`, `fill_`, `add`, `mul`, `abs`; no fallback.
PrivateUse1 can be registered once per process: import this only in a subprocess of its own.
"""

from __future__ import annotations

import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

DEVICE_NAME = "newdev"

_setup_privateuseone_for_python_backend(DEVICE_NAME)
_lib = torch.library.Library("aten", "IMPL")  # kept alive for the life of the process


class NewdevTensor(torch.Tensor):
    """A tensor on newdev; `_data` is the CPU tensor holding its elements."""

    _data: torch.Tensor

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        with torch._C._DisableTorchDispatch():  # on to the PrivateUse1 kernel (or its absence)
            return func(*args, **(kwargs or {}))


def wrap(data: torch.Tensor) -> NewdevTensor:
    """A device tensor whose elements are `data`; the defect: its device has no index."""
    tensor = torch.Tensor._make_wrapper_subclass(
        NewdevTensor, data.size(), strides=data.stride(), storage_offset=data.storage_offset(),
        dtype=data.dtype, device=DEVICE_NAME)  # the fix would be device=f"{DEVICE_NAME}:0"
    tensor._data = data
    return tensor


def unwrap(value):
    if isinstance(value, torch.Tensor) and value.device.type == DEVICE_NAME:
        if not isinstance(value, NewdevTensor):
            raise RuntimeError("newdev: a device tensor without data")
        return value._data
    return value


def kernel(overload: str):
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


@kernel("mul.Tensor")
def mul(self, other):
    return wrap(torch.mul(unwrap(self), unwrap(other)))


@kernel("abs")
def abs_(self):
    return wrap(torch.abs(unwrap(self)))
