"""The `faulty` device: a Python PrivateUse1 backend whose tensors keep their data on CPU.

Every device tensor is a `FaultyTensor`, a wrapper subclass that owns a CPU tensor (its data)
and reports exactly that tensor's sizes, strides, storage offset and dtype. Every op takes one
generic path: unwrap device tensors to their CPU data, run the same aten overload on CPU, let the
active seeded bugs perturb the result, and wrap CPU results back as device tensors. Views of the
data are CPU views of the same storage, so writes through a view reach the base; in-place and
`out=` overloads return the very tensors they mutated.

Ops reach the path two ways: `__torch_dispatch__` for ops with a device tensor argument, and a
boxed fallback on the PrivateUse1 dispatch key for factories (`torch.ones(2, device="faulty")`).

The device's trace of what ran is `trace`; what an overload's schema says it writes, `schema_effects`.

Needs torch >= 2.5 (`torch.library.Library.fallback`, `_setup_privateuseone_for_python_backend`).
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

from torch.nested._internal.nested_tensor import NestedTensor as _NestedTensor

from torchcts.testing.faulty import autocast, bugs, generators, memory, pinned, runtime, streams
from torchcts.testing.faulty.bug_model import CPU_OPERAND_STEP, PEER_COPY_STEP, SAVE_STEP, argument
from torchcts.testing.faulty.schema_effects import mutated_outputs, written_tensors
from torchcts.testing.faulty.trace import (note_overload, note_step, start_trace, take_trace,  # noqa: F401
                                          tracing)  # (re-exported: the run and fork read the trace here)

DEVICE_NAME = "faulty"

_registered = False
_registration_lock = threading.Lock()
_library: torch.library.Library | None = None


class FaultyTensor(torch.Tensor):
    """A tensor on the `faulty` device; `_data` is the CPU tensor holding its elements."""

    _data: torch.Tensor

    @staticmethod
    def __new__(cls, data: torch.Tensor, requires_grad: bool = False, index: int | None = None) -> "FaultyTensor":
        if data.is_nested:
            raise NotImplementedError("the faulty device does not hold strided nested tensors; "
                                      "jagged nested tensors work (their values move to the device)")
        strided = data.layout == torch.strided
        # Sparse layouts have no strides: the wrapper asks __torch_dispatch__ for its layout instead.
        layout_args = dict(strides=data.stride(), storage_offset=data.storage_offset()) if strided else {}
        device = torch.device(DEVICE_NAME, runtime.current() if index is None else index)
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls, data.size(), dtype=data.dtype, device=device, requires_grad=requires_grad,
            dispatch_layout=not strided, **layout_args,
        )
        # Lazy conjugate and negative views: the wrapper carries the bits (so torch's composites
        # see them, as on CPU) and keeps the raw data; `_to_cpu` puts the bits back.
        conj, neg = data.is_conj(), data.is_neg()
        if conj:
            data = data.conj()
        if neg:
            data = data._neg_view()
        torch._C._set_conj(wrapper, conj)
        torch._C._set_neg(wrapper, neg)
        wrapper._data = data
        memory.track(wrapper, data, wrapper.device.index)
        return wrapper

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # noqa: D105
        text = repr(self._data)
        suffix = f", device='{self.device}'"
        if self.requires_grad:
            suffix += ", requires_grad=True"
        return text[:-1] + suffix + ")" if text.endswith(")") else text + suffix

    def __reduce_ex__(self, protocol: Any) -> Any:
        """torch.save and pickle: the CPU data (its storage, offset and strides) and `rebuild_saved`. Views saved
        together keep sharing one storage, as a real device's storages do (torch's default for a wrapper
        subclass would keep only the metadata)."""
        note_step(SAVE_STEP)
        data = bugs.after(SAVE_STEP, (self._data,), {}, _to_cpu(self))
        return (rebuild_saved, (data, self.requires_grad))

    def tolist(self) -> Any:  # torch refuses tolist() on wrapper subclasses; jagged nested ops call it on offsets
        return _to_cpu(self).tolist()

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if any(issubclass(t, _NestedTensor) for t in types):  # a jagged nested tensor's own ops handle it first
            return NotImplemented
        if func is torch.ops.prim.layout.default:
            return args[0]._data.layout
        return run_on_cpu(func, args, kwargs or {})


def rebuild_saved(data: torch.Tensor, requires_grad: bool) -> torch.Tensor:
    """torch.load's rebuild of a saved device tensor: on the device again, or the CPU data itself where
    `map_location` sends the device to CPU. A safe global, so `weights_only=True` loads it."""
    location = torch.device(torch._utils._get_restore_location(f"{DEVICE_NAME}:0"))
    tensor = data if location.type == "cpu" else FaultyTensor(data)
    tensor.requires_grad_(requires_grad)
    return tensor


def _no_tag(storage: Any) -> None:
    return None  # the device's data lives in CPU storages, which CPU's tagger names


def _storage_stays_on_cpu(storage: Any, location: str) -> Any:
    """torch.load's placement of a storage sent to the device (`map_location="faulty"`): the device has no storages
    of its own, so the data stays in a CPU storage; `rebuild_saved` then wraps what the device saved. A tensor saved
    from CPU and loaded with map_location="faulty" therefore stays on CPU (agreement.EXPLAINED)."""
    if location == DEVICE_NAME or location.startswith(f"{DEVICE_NAME}:"):
        return storage
    return None


# Values pytree treats as leaves, and the containers whose mapping `_map_leaves` does itself: aten's arguments and
# results are these, so the generic path skips pytree's per-node type lookups (about a third of each op's cost).
_LEAF_TYPES = (torch.Tensor, int, float, bool, complex, str, type(None), torch.dtype, torch.device, torch.layout,
               torch.memory_format)


def _map_leaves(fn, value: Any) -> Any:
    """`tree_map(fn, value)`, faster for plain tuples, lists and dicts of plain values; pytree does the rest."""
    kind = type(value)
    if kind is tuple:
        return tuple(_map_leaves(fn, v) for v in value)
    if kind is list:
        return [_map_leaves(fn, v) for v in value]
    if kind is dict:
        return {key: _map_leaves(fn, v) for key, v in value.items()}
    if isinstance(value, _LEAF_TYPES):
        return fn(value)
    return tree_map(fn, value)  # a named tuple, a structseq, another registered node or leaf


def _to_cpu(value: Any) -> Any:
    if isinstance(value, FaultyTensor):
        data = value._data
        if value.is_conj():
            data = data.conj()
        if value.is_neg():
            data = data._neg_view()
        return data
    if isinstance(value, torch.device) and value.type == DEVICE_NAME:
        return torch.device("cpu")
    return value


def _targets_device(kwargs: dict) -> bool:
    """Whether results belong on the faulty device (not when an op asks for another device)."""
    device = kwargs.get("device")
    if device is None:
        return True
    return torch.device(device).type == DEVICE_NAME


def run_on_cpu(func, args: tuple, kwargs: dict) -> Any:
    """The generic path: run `func` on the CPU data of the device it is called on (its current stream, its
    generator, its memory), apply active bugs, wrap the results."""
    note_overload(func)
    on_device = _device_tensors(args, kwargs)
    index = _device_index(func, args, kwargs, on_device)
    if on_device and _is_pointwise(func):
        _refuse_cpu_operands(func, args, kwargs, index)
    _op.devices = (index, tuple(t.device.index for t in on_device))  # indices only: never keep tensors alive
    if func is _RECORD_STREAM:  # the allocator holds the block for the work queued on that stream (streams.block_freed)
        streams.record(args[0]._data.untyped_storage().data_ptr(), args[1])
        return None
    if _targets_device(kwargs):
        requested = memory.requested_bytes(func, args, kwargs)
        if requested:
            memory.check_request(index, requested)
    cpu_args, cpu_kwargs = _map_leaves(_to_cpu, args), _map_leaves(_to_cpu, kwargs)
    if func in _READS_REQUIRES_GRAD:
        cpu_args = tuple(_with_requires_grad(cpu, arg) for cpu, arg in zip(cpu_args, args))
    side = streams.op_stream(index) if streams.side_stream_current() else None
    if side is not None:
        side.flush()  # a stream's work runs in order: what it queued before lands first
        landing = _Landing(func, args, kwargs, cpu_args, cpu_kwargs)
    bugs.before(func, cpu_args, cpu_kwargs)
    given = argument(func, cpu_args, cpu_kwargs, "generator") if _is_random(func) else False
    if given is None:
        result = draw_on_device_generator(func, index, cpu_args, cpu_kwargs)
    else:
        if given is not False and generators.is_device_generator(given):
            cpu_args, cpu_kwargs = _with_generator(func, cpu_args, cpu_kwargs,
                                                   generators.cpu_generator_of(func, index, given))
        result = func(*cpu_args, **cpu_kwargs)
    if func is _EFFICIENT_ZEROS:
        result = torch.zeros(result.shape, dtype=result.dtype)
    result = bugs.after(func, cpu_args, cpu_kwargs, result)
    if side is not None:
        landing.defer(side, result)
    for tensor in written_tensors(func, args, kwargs):  # resized by the kernel: also those no return aliases
        if isinstance(tensor, FaultyTensor) and tensor._data.layout == torch.strided:
            _sync_metadata(tensor)
    mutated = mutated_outputs(func, args, kwargs)
    if mutated is not None:
        return mutated
    if not _targets_device(kwargs):
        return result
    return _map_leaves(lambda v: FaultyTensor(v, index=index) if isinstance(v, torch.Tensor)
                    and not isinstance(v, FaultyTensor) else v, result)


_op = threading.local()


def op_devices() -> tuple[int, frozenset[int]]:
    """For seeded bugs (which see CPU data only): the faulty device index the running op targets, and the indices of
    its device-tensor arguments (a copy from faulty:0 to faulty:1 gives (1, {0}); a factory (i, {}))."""
    index, sources = getattr(_op, "devices", (0, ()))
    return index, frozenset(sources)


def _device_tensors(args: tuple, kwargs: dict) -> list[FaultyTensor]:
    """The device tensors among an op's arguments, and in its lists of tensors (no deeper: aten takes no more)."""
    found = []
    for value in (*args, *kwargs.values()):
        if isinstance(value, FaultyTensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, FaultyTensor))
    return found


# ops that take tensors of two devices by design: copies
_CROSS_DEVICE = frozenset({"copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to"})
_RECORD_STREAM = torch.ops.aten.record_stream.default


def _device_index(func, args: tuple, kwargs: dict, on_device: list[FaultyTensor]) -> int:
    """The faulty device an op runs on: its `device=` argument's, else its device tensors' (which must all be on one
    device, but for copies, as on CUDA), else the current device."""
    target = kwargs.get("device")
    if target is not None and torch.device(target).type == DEVICE_NAME:
        index = runtime.index_of(target)
        sources = {t.device.index for t in on_device} - {index}
        if sources:  # a copy from another of the device's devices (`to`): where its result lands
            note_step(PEER_COPY_STEP)
            return bugs.after(PEER_COPY_STEP, (func, index, min(sources)), {}, index)
        return index
    if not on_device:
        return runtime.current()
    first = on_device[0].device.index
    if any(t.device.index != first for t in on_device):
        if func._schema.name.split("::")[-1] not in _CROSS_DEVICE:
            found = sorted({t.device.index for t in on_device})
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{DEVICE_NAME}:{found[0]} and {DEVICE_NAME}:{found[1]}!")
        written = [t for t in written_tensors(func, args, kwargs) if isinstance(t, FaultyTensor)]
        return written[0].device.index if written else first
    return first


_tags: dict[Any, tuple[bool, bool]] = {}  # overload -> (draws random numbers, is elementwise), from torch's tags


def _tagged(func) -> tuple[bool, bool]:
    found = _tags.get(func)
    if found is None:
        found = _tags[func] = (torch.Tag.nondeterministic_seeded in func.tags, torch.Tag.pointwise in func.tags)
    return found


def _is_random(func) -> bool:
    """Whether `func` draws random numbers (torch tags such overloads), cached per overload."""
    return _tagged(func)[0]


def _is_pointwise(func) -> bool:
    """Whether `func` is elementwise (torch tags such overloads; CUDA runs them through TensorIterator)."""
    return _tagged(func)[1]


def _with_generator(func, args: tuple, kwargs: dict, generator: torch.Generator) -> tuple[tuple, dict]:
    """The call's arguments with `generator` as its generator argument (keyword-only in aten; placed where given)."""
    if "generator" in kwargs:
        return args, {**kwargs, "generator": generator}
    position = next(i for i, arg in enumerate(func._schema.arguments) if arg.name == "generator")
    return (*args[:position], generator, *args[position + 1:]), kwargs


def _refuse_cpu_operands(func, args: tuple, kwargs: dict, index: int) -> None:
    """An elementwise op given a device tensor and a CPU tensor of one or more dimensions raises, as CUDA's
    TensorIterator does (a 0-dim CPU tensor is a scalar: allowed). A seeded bug may let it through (CPU_OPERAND_STEP)."""
    for value in (*args, *kwargs.values()):
        if (type(value) is torch.Tensor and value.dim() > 0 and value.device.type == "cpu"
                and _step_refuses(func, index)):
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{DEVICE_NAME}:{index} and cpu!")


def _step_refuses(func, index: int) -> bool:
    note_step(CPU_OPERAND_STEP)
    return bool(bugs.after(CPU_OPERAND_STEP, (func, index), {}, True))


def draw_on_device_generator(func, index: int, cpu_args: tuple, cpu_kwargs: dict) -> Any:
    """Run a random op given no generator on the device's generator (lent to CPU's default generator's state)."""
    generator = runtime.generator_for(func, index)
    kept = torch.default_generator.get_state()
    torch.default_generator.set_state(generator.get_state())
    try:
        return func(*cpu_args, **cpu_kwargs)
    finally:
        generator.set_state(torch.default_generator.get_state())
        torch.default_generator.set_state(kept)


class _Landing:
    """An op run on a side stream (`streams`): its effects are taken back at once and landed when the stream
    is flushed. Written tensors keep their old values until then; new results read as the sentinel."""

    def __init__(self, func, args: tuple, kwargs: dict, cpu_args: tuple, cpu_kwargs: dict):
        self.blocking_to_host = not argument(func, args, kwargs, "non_blocking", False) and (
            not _targets_device(kwargs) or any(isinstance(t, torch.Tensor) and not isinstance(t, FaultyTensor)
                                               for t in written_tensors(func, args, kwargs)))
        self.written = [t for t in written_tensors(func, cpu_args, cpu_kwargs)
                        if isinstance(t, torch.Tensor) and t.layout == torch.strided]
        self.before = [t.clone() for t in self.written]
        self.inputs = {leaf.untyped_storage().data_ptr() for leaf in tree_leaves((cpu_args, cpu_kwargs))
                       if isinstance(leaf, torch.Tensor) and leaf.layout == torch.strided}

    def defer(self, stream: Any, result: Any) -> None:
        if self.blocking_to_host or streams.is_synchronous():  # a blocking copy to CPU waits for the stream: now
            return
        reads = frozenset(self.inputs)
        for target, old in zip(self.written, self.before):
            if target.shape == old.shape:
                value = target.clone()
                stream.defer(_landing(target, value), reads, value)
                target.copy_(old)
        for leaf in tree_leaves(result):
            if (isinstance(leaf, torch.Tensor) and leaf.layout == torch.strided and leaf.numel()
                    and leaf.untyped_storage().data_ptr() not in self.inputs):
                value = leaf.clone()
                stream.defer(_landing(leaf, value), reads, value)
                leaf.copy_(streams.sentinel_of(leaf))


def _landing(target: torch.Tensor, value: torch.Tensor) -> Any:
    def land() -> None:
        target.copy_(value)

    return land


# autograd's zero gradients: on CPU a ZeroTensor without storage, which the device's kernels (below the ZeroTensor
# key) would read as data and crash on; the device makes dense zeros, as a backend without a ZeroTensor kernel does
_EFFICIENT_ZEROS = torch.ops.aten._efficientzerotensor.default

# CPU kernels that branch on their inputs' requires_grad: the device's CPU data never requires grad, so they would
# leave out what their backward reads (_sparse_mm_reduce_impl's arg_out for amax/amin: its backward then indexes
# an empty tensor and crashes the process)
_READS_REQUIRES_GRAD = frozenset({torch.ops.aten._sparse_mm_reduce_impl.default})


def _with_requires_grad(cpu: Any, arg: Any) -> Any:
    """`cpu` (the CPU data of `arg`) as an alias that requires grad where `arg` does (no graph is recorded here:
    the device's kernels run below autograd)."""
    if isinstance(arg, FaultyTensor) and arg.requires_grad and not cpu.requires_grad:
        return cpu.detach().requires_grad_(True)
    return cpu


def _sync_metadata(wrapper: FaultyTensor) -> None:
    """Make the device tensor report its data's (possibly resized) sizes, strides and offset."""
    data = wrapper._data
    if (wrapper.shape, wrapper.stride(), wrapper.storage_offset()) == (data.shape, data.stride(), data.storage_offset()):
        return
    with torch._C._DisableTorchDispatch():
        meta_in_tls = torch._C._meta_in_tls_dispatch_include()
        torch._C._set_meta_in_tls_dispatch_include(True)  # change the wrapper's metadata only
        try:
            torch.ops.aten.set_.source_Storage_storage_offset(
                wrapper, wrapper.untyped_storage(), data.storage_offset(), data.size(), data.stride())
        finally:
            torch._C._set_meta_in_tls_dispatch_include(meta_in_tls)


# Ops that torch calls with Python dispatch switched off (torch.tensor(..., device=...) copies
# its data that way), where the boxed Python fallback cannot run: they get kernels of their own.
_EXPLICIT_KERNELS = ("copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "empty_strided",
                     "empty.memory_format", "resize_", "as_strided", "view")
_libraries: list[torch.library.Library] = []


def _resolve(name: str):
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


def _kernel_for(overload):
    def kernel(*args, **kwargs):
        return run_on_cpu(overload, args, kwargs)

    return kernel


def _factory_fallback(op, *args, **kwargs):
    """PrivateUse1 fallback: ops that reach the device key without a FaultyTensor (factories)."""
    return run_on_cpu(op, args, kwargs)


def register() -> None:
    """Rename PrivateUse1 to `faulty` and install the device module and the generic path (once)."""
    global _registered, _library
    with _registration_lock:
        if _registered:
            return
        current = torch._C._get_privateuse1_backend_name()
        if current not in ("privateuseone", DEVICE_NAME):
            from torchcts.manifest.privateuse1 import cause  # names the package whose entry point took it

            raise RuntimeError(f"PrivateUse1 is already taken by the {current!r} backend; the faulty device needs it: "
                               f"{cause(current)}")
        if current == "privateuseone":
            _set_up_privateuse1()
        _library = torch.library.Library("_", "IMPL")
        _library.fallback(_factory_fallback, "PrivateUse1")
        _aten_library = torch.library.Library("aten", "IMPL")
        for name in _EXPLICIT_KERNELS:
            overload = _resolve(name)
            _aten_library.impl(name, _kernel_for(overload), "PrivateUse1")
        _libraries.append(_aten_library)
        autocast.register()
        pinned.register()
        torch.serialization.add_safe_globals([rebuild_saved])
        torch.serialization.register_package(5, _no_tag, _storage_stays_on_cpu)
        _import_what_the_first_op_imports()
        _registered = True


def _set_up_privateuse1() -> None:
    """torch's set-up of a Python PrivateUse1 backend (`_setup_privateuseone_for_python_backend`, in its order), with
    the device's compiled hooks (its generators: `generators`) in place of torch's Python ones where they load: torch
    takes one hooks object per process."""
    from torch.utils.backend_registration import _DummyDeviceGuard, _DummyPrivateUse1Hook

    torch.utils.rename_privateuse1_backend(DEVICE_NAME)
    torch.utils.generate_methods_for_privateuse1_backend()
    torch._register_device_module(DEVICE_NAME, runtime.MODULE)
    if not generators.install(runtime.generator):
        torch._C._acc.register_python_privateuseone_hook(_DummyPrivateUse1Hook())
    torch._C._acc.register_python_privateuseone_device_guard(_DummyDeviceGuard())


def _import_what_the_first_op_imports() -> None:
    """Import `torch.distributed.tensor` now: torch's dispatch of a tensor subclass imports it at the first op
    (0.4-0.7 s of CPU, torch 2.13), and a run forks its probes and isolated items before or between its own ops, so
    each child imported it again. Imported at registration, every child inherits it."""
    try:
        import torch.distributed.tensor  # noqa: F401
    except ImportError:  # a torch built without distributed: its dispatch has no DTensor to ask about either
        pass


def is_registered() -> bool:
    return _registered
