"""Which aten overloads an item's device side dispatched: a `TorchDispatchMode` that records names.

`torchcts run --trace-dispatch` gives each item a `DispatchTrace`; the case context enters it around
the device side of every case (placing the case on the device, the device call, error parity) and
suspends it around CPU oracle calls, so the record's `dispatched` field lists what the backend was
asked to run, not what the oracle ran. Names are `str(OpOverload)` ("aten.add.Tensor").

What a mode sees: every op that reaches the Python dispatch key, which is below autograd and
CompositeImplicitAutograd (a `linear` call shows up as the `t`/`addmm` it decomposes into) and
above the backend's kernel, for any eager device (cpu, meta, a PrivateUse1 device such as
`faulty`, whose own `device_ops` trace sits one step lower and sees the same overloads). Ops run
with Python dispatch disabled (some factories copying host data) are not seen. Only the `aten`
namespace is kept: the coverage inventory is of aten overloads. Under torch.compile nothing is
traced: an active dispatch mode makes dynamo skip the frame and run it eagerly, which would no
longer test the compiled path (docs/coverage/evidence.md).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from torchcts.results.files import MAX_DISPATCHED


class _Recorder(TorchDispatchMode):
    """Adds the name of every aten overload it sees run on `device_type` to `names` while `on`; runs the op unchanged.

    On a device other than cpu an op counts when a tensor argument, or its `device` argument, is on that
    device: placing a case also runs host-side ops on the CPU original (`new_empty`, `detach`), which
    are not the backend's. On cpu, host and device are the same and every op counts."""

    def __init__(self, names: set[str], device_type: str):
        super().__init__()
        self.names, self.device_type = names, device_type
        self.seen: set[Any] = set()  # overloads already recorded: checked once, then skipped cheaply
        self.on = True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - torch's signature
        if self.on and func not in self.seen and getattr(func, "namespace", None) == "aten" \
                and len(self.names) < MAX_DISPATCHED and self._on_device(args, kwargs):
            self.seen.add(func)
            self.names.add(str(func))  # before the call: an overload that raises was still dispatched
        return func(*args, **(kwargs or {}))

    def _on_device(self, args: Any, kwargs: Any) -> bool:
        if self.device_type == "cpu":
            return True
        for leaf in tree_leaves((args, kwargs)):
            if isinstance(leaf, torch.Tensor):
                if leaf.device.type == self.device_type:
                    return True
            elif isinstance(leaf, (torch.device, str)) and _device_type(leaf) == self.device_type:
                return True
        return False


def _device_type(value: Any) -> str | None:
    try:
        return torch.device(value).type
    except (RuntimeError, TypeError, ValueError):  # a string argument that names no device (a reduction mode)
        return None


class DispatchTrace:
    """The overloads one item's device side dispatched, across all its cases (and shrinking)."""

    def __init__(self, device_type: str = "cpu") -> None:
        self.device_type = device_type
        self._names: set[str] = set()
        self._recorder: _Recorder | None = None  # the mode while `device_side` is entered

    @contextlib.contextmanager
    def device_side(self) -> Iterator[None]:
        """Record what runs inside; re-entering (a device call inside the placement path) records once."""
        if self._recorder is not None:
            with self._switched(True):
                yield
            return
        recorder = _Recorder(self._names, self.device_type)
        self._recorder = recorder
        try:
            with recorder:
                yield
        finally:
            self._recorder = None

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """Record nothing inside (a CPU oracle call made from within a device-side call)."""
        with self._switched(False):
            yield

    @contextlib.contextmanager
    def _switched(self, on: bool) -> Iterator[None]:
        recorder = self._recorder
        if recorder is None:
            yield
            return
        was, recorder.on = recorder.on, on
        try:
            yield
        finally:
            recorder.on = was

    def add(self, names: Any) -> None:
        """Merge names recorded elsewhere (a case's forked child); anything but a list of strings is ignored."""
        if isinstance(names, (list, tuple)):
            for name in names[:MAX_DISPATCHED]:
                if isinstance(name, str) and len(self._names) < MAX_DISPATCHED:
                    self._names.add(name)

    def names(self) -> list[str]:
        """The record's `dispatched` field: the sorted overload names."""
        return sorted(self._names)


def traced(trace: DispatchTrace | None, suspend: bool = False) -> contextlib.AbstractContextManager[None]:
    """`trace.device_side()` (or `trace.suspended()`), or nothing when the item is not traced."""
    if trace is None:
        return contextlib.nullcontext()
    return trace.suspended() if suspend else trace.device_side()
