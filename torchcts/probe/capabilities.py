"""The per-capability probes: each declared capability's cheapest check, one small function each.

`CAPABILITY_PROBES` maps every capability of the manifest vocabulary to its probe. A probe gets a
`ProbeEnv` (the device, a small float dtype the manifest claims, the step runner, the manifest),
runs a few steps on a handful of elements, and compares with the CPU where there is a value to
compare (loosely: a probe asks "does it work at all", the properties ask "is it exact"). It
raises `StepFailed` at the first wrong step, or `NoProbe` when it has nothing to say here (no
custom decoders declared). A test keeps the table and the vocabulary equal.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any, Callable, Iterator

import attrs
import torch

from torchcts.probe.result import NoProbe, StepFailed, Steps, difference

HUGE_ALLOCATION_BYTES = 2**60  # 1 EiB: more than any device has, so allocating it must raise


@attrs.frozen
class ProbeEnv:
    device: str
    dtype: torch.dtype  # the float dtype value checks use
    steps: Steps
    manifest: Any = None

    @property
    def device_type(self) -> str:
        return torch.device(self.device).type

    def values(self, *items: float, dtype: torch.dtype | None = None) -> torch.Tensor:
        return torch.tensor(items or (0.5, 1.0, 1.5, 2.0), dtype=dtype or self.dtype)

    def to_device(self, tensor: torch.Tensor, step: str = "copy to device") -> torch.Tensor:
        return self.steps.run(step, lambda: tensor.to(self.device))

    def agree(self, step: str, fn: Callable[..., Any], *cpu_inputs: torch.Tensor) -> Any:
        """Run `fn` on the CPU inputs and on device copies of them; fail `step` unless the results are close.
        The device result."""
        expected = self.steps.run(f"{step} on CPU", lambda: fn(*cpu_inputs))
        device_inputs = [self.to_device(t) for t in cpu_inputs]
        got = self.steps.run(step, lambda: fn(*device_inputs))
        self.close(step, got, expected)
        return got

    def close(self, step: str, got: Any, expected: torch.Tensor) -> None:
        """Fail `step` unless device result `got` is close to `expected` (NaN matches NaN, -0.0 only -0.0)."""
        got = self.steps.run(step, lambda: got.detach().cpu())
        if got.shape != expected.shape:
            raise StepFailed(step, f"got shape {tuple(got.shape)}, expected {tuple(expected.shape)}")
        wide = torch.complex128 if expected.is_complex() or got.is_complex() else torch.float64
        a, b = got.to(wide), expected.detach().to(wide)
        loose = 1e-2 if torch.finfo(self.dtype).bits <= 16 else 1e-4
        zeros = b == 0
        signs_agree = wide == torch.complex128 or torch.equal(torch.signbit(a[zeros]), torch.signbit(b[zeros]))
        if not (signs_agree and torch.allclose(a, b, rtol=loose, atol=loose, equal_nan=True)):
            raise StepFailed(step, difference(a, b) or "values differ")


# -- forward, autograd, compile ----------------------------------------------------------------


def _inference(env: ProbeEnv) -> None:
    env.agree("add", torch.add, env.values(), env.values(4, 3, 2, 1))


def _gradient(create_graph: bool = False) -> Callable[[torch.Tensor], torch.Tensor]:
    """x -> d(x * x * x)/dx by autograd (6x for the second derivative with `create_graph`)."""
    def grad(x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        y = x * x * x
        (first,) = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=create_graph)
        if not create_graph:
            return first
        (second,) = torch.autograd.grad(first, x, torch.ones_like(first))
        return second
    return grad


def _training(env: ProbeEnv) -> None:
    env.agree("backward", _gradient(), env.values())


def _double_backward(env: ProbeEnv) -> None:
    env.agree("double backward", _gradient(create_graph=True), env.values())


def _gradcheck(env: ProbeEnv) -> None:
    x = env.to_device(env.values(dtype=torch.float64)).requires_grad_()
    ok = env.steps.run("gradcheck (float64)", lambda: torch.autograd.gradcheck(lambda t: t * t, (x,)))
    env.steps.expect("gradcheck (float64)", ok is True, "gradcheck returned False")


def _gradient_checkpointing(env: ProbeEnv) -> None:
    from torch.utils.checkpoint import checkpoint

    def grad(x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        y = checkpoint(lambda t: t * t * t, x, use_reentrant=False)
        (first,) = torch.autograd.grad(y, x, torch.ones_like(y))
        return first

    env.agree("backward through checkpoint", grad, env.values())


def _compile(env: ProbeEnv) -> None:
    compiled = env.steps.run("torch.compile", lambda: torch.compile(lambda t: t * 2 + 1, backend="eager",
                                                                       dynamic=False))
    env.agree("compiled call (backend eager)", compiled, env.values())


def _autocast(env: ProbeEnv) -> None:
    x = env.to_device(env.values())
    region = env.steps.run("enter torch.autocast", lambda: torch.autocast(device_type=env.device_type))
    with region:
        got = env.steps.run("add under autocast", lambda: x + x)
    env.close("add under autocast", got, env.values() * 2)


def _module_hooks(env: ProbeEnv) -> None:
    calls = {"forward": 0, "backward": 0}

    class Scale(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(env.values(3, 3, 3, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.weight

    module = env.steps.run("module to device", lambda: Scale().to(env.device))
    module.register_forward_hook(lambda *_: calls.__setitem__("forward", calls["forward"] + 1))
    module.register_full_backward_hook(lambda *_: calls.__setitem__("backward", calls["backward"] + 1))
    x = env.to_device(env.values()).requires_grad_()
    out = env.steps.run("forward", lambda: module(x))
    env.close("forward", out, env.values() * 3)
    env.steps.run("backward", lambda: out.backward(torch.ones_like(out)))
    env.steps.expect("hooks", calls == {"forward": 1, "backward": 1}, f"hooks ran {calls}, expected once each")


def _fused_optimizer(env: ProbeEnv) -> None:
    def step(p: torch.Tensor) -> torch.Tensor:
        parameter = torch.nn.Parameter(p.clone())
        parameter.grad = torch.ones_like(parameter)
        torch.optim.SGD([parameter], lr=0.5, fused=True).step()
        return parameter.detach()

    env.agree("SGD(fused=True).step()", step, env.values())


# -- random numbers --------------------------------------------------------------------------


@contextlib.contextmanager
def _rng_kept(env: ProbeEnv) -> Iterator[None]:
    """Leave the CPU generator (and the device's, where its module can say) as they were: a probe run in
    the run's own process must not move the draws that follow."""
    cpu = torch.get_rng_state()
    module = getattr(torch, env.device_type, None) if env.device_type != "cpu" else None
    try:
        device = module.get_rng_state() if hasattr(module, "get_rng_state") else None
    except Exception:  # noqa: BLE001 - a device without generator state: nothing to keep
        device = None
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if device is not None:
            module.set_rng_state(device)


def _rng(env: ProbeEnv) -> None:
    def draw() -> torch.Tensor:
        torch.manual_seed(1234)
        return torch.rand(8, device=env.device)

    with _rng_kept(env):
        first = env.steps.run("manual_seed + rand", draw)
        second = env.steps.run("manual_seed + rand", draw)
        env.steps.same("the same seed draws the same values", second, first.cpu())


def _device_generator(env: ProbeEnv) -> None:
    generator = env.steps.run("torch.Generator(device)", lambda: torch.Generator(device=env.device))

    def draw() -> torch.Tensor:
        generator.manual_seed(1234)
        return torch.rand(8, device=env.device, generator=generator)

    first = env.steps.run("rand with the generator", draw)
    env.steps.same("the same seed draws the same values", env.steps.run("rand with the generator", draw), first.cpu())


def _rng_distributions(env: ProbeEnv) -> None:
    with _rng_kept(env):
        normal = env.steps.run("normal_", lambda: torch.empty(64, device=env.device).normal_().cpu())
        uniform = env.steps.run("uniform_", lambda: torch.empty(64, device=env.device).uniform_().cpu())
    env.steps.expect("normal_", bool(normal.isfinite().all()) and normal.std() > 0, "not finite, varying values")
    env.steps.expect("uniform_", bool(((uniform >= 0) & (uniform < 1)).all()), "values outside [0, 1)")


# -- layouts, containers, dtypes -------------------------------------------------------------


def _channels_last(env: ProbeEnv) -> None:
    cpu = torch.arange(12, dtype=env.dtype).reshape(1, 3, 2, 2).contiguous(memory_format=torch.channels_last)
    on_device = env.steps.run("copy to device (channels_last)", lambda: cpu.to(env.device))
    env.steps.expect("copy to device (channels_last)", on_device.stride() == cpu.stride(),
                     f"strides {on_device.stride()}, expected {cpu.stride()}")
    env.steps.same("copy to CPU", on_device, cpu)


def _sparse(env: ProbeEnv) -> None:
    cpu = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), env.values(1, 2), (2, 2))
    on_device = env.steps.run("sparse COO tensor to device", lambda: cpu.to(env.device))
    env.steps.same("to_dense on CPU", env.steps.run("copy to CPU", lambda: on_device.cpu().to_dense()), cpu.to_dense())


def _nested(env: ProbeEnv) -> None:
    parts = [env.values(1, 2), env.values(3, 4, 5)]
    nested = env.steps.run("nested_tensor on device", lambda: torch.nested.nested_tensor(parts, device=env.device))
    back = env.steps.run("unbind", lambda: [t.cpu() for t in nested.unbind()])
    for got, expected in zip(back, parts):
        env.steps.same("unbind", got, expected)


def _foreach(env: ProbeEnv) -> None:
    cpu = [env.values(), env.values(4, 3, 2, 1)]
    on_device = [env.to_device(t) for t in cpu]
    got = env.steps.run("_foreach_add", lambda: torch._foreach_add(on_device, 1.0))
    for result, expected in zip(got, torch._foreach_add(cpu, 1.0)):
        env.close("_foreach_add", result, expected)


def _fp8(env: ProbeEnv) -> None:
    cpu = torch.tensor([0.5, 1.0, -2.0, 448.0]).to(torch.float8_e4m3fn)
    on_device = env.to_device(cpu)
    env.steps.same("copy to CPU (float8_e4m3fn)", on_device, cpu)
    env.close("cast to float32", env.steps.run("cast to float32", lambda: on_device.to(torch.float32)),
              cpu.to(torch.float32))


def _probe_container(spec_name: str) -> Any:
    """A small container of `spec_name` on CPU: codes 0, 1, 2, ... over one block (or 6 elements), scale 0.5
    (E8M0 126, E4M3 0x30), zero point 1."""
    from torchcts.containers import FORMATS, Container, pack_codes

    spec = FORMATS[spec_name]
    count = spec.block or 6
    codes = [spec.codes[i % len(spec.codes)] for i in range(count)]
    if spec.scale == "float":
        scale = torch.tensor(0.5)
    else:
        scale = torch.tensor([126 if spec.scale == "e8m0" else 0x30], dtype=torch.uint8)
    zero_point = torch.tensor(1, dtype=torch.int32) if spec.zero_point else None
    return Container(spec_name, pack_codes(codes, spec.bits, spec.msb_first), scale, zero_point, (count,))


def _quantized_container_plumbing(env: ProbeEnv) -> None:
    from torchcts.containers import decode
    from torchcts.containers.codec import decode_container, program_arguments

    container = _probe_container("uint4")
    packed = env.to_device(container.packed, "copy packed uint4 bytes to device")
    env.steps.same("copy packed bytes to CPU", packed, container.packed)
    env.steps.same("slice copied to CPU", env.steps.run("slice", lambda: packed[1:3]), container.packed[1:3])
    scale, zero_point = env.to_device(container.scale), env.to_device(container.zero_point)
    unpacked = env.steps.run("unpack uint4 on the device", lambda: decode_container(
        packed, scale, zero_point, container.shape, torch.float32, **program_arguments(container.spec, env.device)))
    env.steps.same("unpacked on the device, copied to CPU", unpacked, decode(container))


def _native_quantization(env: ProbeEnv) -> None:
    def round_trip(x: torch.Tensor) -> torch.Tensor:
        return torch.quantize_per_tensor(x.float(), 0.5, 0, torch.quint8).dequantize()

    env.agree("quantize_per_tensor + dequantize", round_trip, env.values())


def _custom_quantized_decode(env: ProbeEnv) -> None:
    from torchcts.containers import decode
    from torchcts.containers.decoders import DecoderError, check_result, load

    decoders = dict(getattr(env.manifest, "custom_container_decoders", {}) or {})
    if not decoders:
        raise NoProbe("the manifest names no custom_container_decoders to import")
    for fmt, target in sorted(decoders.items()):
        step = f"decoder {target} ({fmt})"
        container = _probe_container(fmt)

        def call() -> torch.Tensor:
            try:
                decoder = load(fmt, target)
                result = decoder(*(None if t is None else t.to(env.device)
                                   for t in (container.packed, container.scale, container.zero_point)),
                                 container.shape, torch.float32, torch.device(env.device))
                return check_result(fmt, target, result, container.shape, torch.float32, torch.device(env.device))
            except DecoderError as exc:
                raise StepFailed(step, str(exc)) from exc

        env.steps.same(step, env.steps.run(step, call), decode(container))


def _ieee754(env: ProbeEnv) -> None:
    special = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 1e-40, -1e-40])  # 1e-40: subnormal
    on_device = env.to_device(special)
    env.steps.same("copy to CPU (NaN, inf, -0.0, subnormals)", on_device, special)
    env.close("multiply by 1", env.steps.run("multiply by 1", lambda: on_device * 1.0), special * 1.0)


# -- memory, streams, the device module ------------------------------------------------------


def _device_module(env: ProbeEnv) -> Any:
    module = getattr(torch, env.device_type, None)
    env.steps.expect(f"torch.{env.device_type}", module is not None,
                     f"torch has no module {env.device_type!r} (a backend registers one)")
    return module


def _synchronize(env: ProbeEnv) -> None:
    module = getattr(torch, env.device_type, None)
    if module is not None and hasattr(module, "synchronize"):
        module.synchronize()


def _pinned_memory(env: ProbeEnv) -> None:
    pinned = env.steps.run("pin_memory", lambda: env.values().pin_memory())
    env.steps.expect("pin_memory", pinned.is_pinned(), "the tensor is not pinned after pin_memory()")
    on_device = env.steps.run("non_blocking copy to device", lambda: pinned.to(env.device, non_blocking=True))
    env.steps.run("synchronize", lambda: _synchronize(env))
    env.steps.same("copy to CPU", on_device, pinned)


def _streams(env: ProbeEnv) -> None:
    # the device module's Stream where it has one (torch.cuda.Stream, a Python backend's), as the streams suite uses
    module = getattr(torch, env.device_type, None)
    if hasattr(module, "Stream") and env.device_type != "cpu":  # torch.cpu.Stream has no synchronize
        label = f"torch.{env.device_type}.Stream(device)"
        stream = env.steps.run(label, lambda: module.Stream(env.device))
    else:
        stream = env.steps.run("torch.Stream(device)", lambda: torch.Stream(device=env.device))
    env.steps.run("stream.synchronize()", lambda: stream.synchronize())


def _events(env: ProbeEnv) -> None:
    module = getattr(torch, env.device_type, None)
    if hasattr(module, "Event") and env.device_type != "cpu":  # torch.cpu.Event records nothing: torch.Event says so
        event = env.steps.run(f"torch.{env.device_type}.Event()", lambda: module.Event())
    else:
        event = env.steps.run("torch.Event(device)", lambda: torch.Event(device=env.device))
    env.steps.run("event.record()", lambda: event.record())
    env.steps.run("event.synchronize()", lambda: event.synchronize())


def _deterministic(env: ProbeEnv) -> None:
    before = torch.are_deterministic_algorithms_enabled()
    try:
        env.steps.run("use_deterministic_algorithms(True)", lambda: torch.use_deterministic_algorithms(True))
        env.agree("add under deterministic algorithms", torch.add, env.values(), env.values())
    finally:
        torch.use_deterministic_algorithms(before)


def _guard_alloc(env: ProbeEnv) -> None:
    elements = HUGE_ALLOCATION_BYTES // 4
    try:
        huge = torch.empty(elements, dtype=torch.float32, device=env.device)
    except Exception:  # noqa: BLE001 - raising is the capability: out-of-memory is an exception, not a crash
        return
    del huge
    raise StepFailed("allocate 1 EiB", "returned a tensor instead of raising out-of-memory")


def _device_api(env: ProbeEnv) -> None:
    module = _device_module(env)
    count = env.steps.run(f"torch.{env.device_type}.device_count()", lambda: module.device_count())
    env.steps.expect(f"torch.{env.device_type}.device_count()", isinstance(count, int) and count >= 1,
                     f"returned {count!r}")
    env.steps.run(f"torch.{env.device_type}.synchronize()", lambda: module.synchronize())


def _multi_device(env: ProbeEnv) -> None:
    module = _device_module(env)
    count = env.steps.run(f"torch.{env.device_type}.device_count()", lambda: module.device_count())
    env.steps.expect(f"torch.{env.device_type}.device_count()", isinstance(count, int) and count >= 2,
                     f"{count} device(s) visible; multi_device needs two")
    first = env.steps.run(f"copy to {env.device_type}:0", lambda: env.values().to(f"{env.device_type}:0"))
    second = env.steps.run(f"copy {env.device_type}:0 -> {env.device_type}:1", lambda: first.to(f"{env.device_type}:1"))
    env.steps.same("copy to CPU", second, env.values())


def _dataloader(env: ProbeEnv) -> None:
    from torch.utils.data import DataLoader, TensorDataset

    data = torch.arange(8, dtype=env.dtype).reshape(4, 2)
    batches = env.steps.run("DataLoader", lambda: list(DataLoader(TensorDataset(data), batch_size=2)))
    moved = [env.steps.run("batch to device", lambda b=batch: b.to(env.device, non_blocking=True))
             for (batch,) in batches]
    env.steps.run("synchronize", lambda: _synchronize(env))
    env.steps.same("batches back on CPU", env.steps.run("copy to CPU", lambda: torch.cat([m.cpu() for m in moved])), data)


def _serialization(env: ProbeEnv) -> None:
    on_device = env.to_device(env.values())
    buffer = io.BytesIO()
    env.steps.run("torch.save", lambda: torch.save(on_device, buffer))
    buffer.seek(0)
    step = "torch.load (weights_only=True, the default)"
    loaded = env.steps.run(step, lambda: torch.load(buffer, weights_only=True))
    env.steps.expect(step, loaded.device.type == env.device_type, f"loaded onto {loaded.device}")
    env.steps.same(step, loaded, env.values())


CAPABILITY_PROBES: dict[str, Callable[[ProbeEnv], None]] = {
    "inference": _inference,
    "training": _training,
    "serialization": _serialization,
    "compile": _compile,
    "rng": _rng,
    "device_generator": _device_generator,
    "rng_distributions": _rng_distributions,
    "double_backward": _double_backward,
    "gradcheck": _gradcheck,
    "gradient_checkpointing": _gradient_checkpointing,
    "autocast": _autocast,
    "fused_optimizer": _fused_optimizer,
    "dataloader": _dataloader,
    "module_hooks": _module_hooks,
    "channels_last": _channels_last,
    "sparse": _sparse,
    "nested": _nested,
    "foreach": _foreach,
    "fp8": _fp8,
    "quantized_container_plumbing": _quantized_container_plumbing,
    "native_quantization": _native_quantization,
    "custom_quantized_decode": _custom_quantized_decode,
    "pinned_memory": _pinned_memory,
    "streams": _streams,
    "events": _events,
    "deterministic": _deterministic,
    "guard_alloc": _guard_alloc,
    "device_api": _device_api,
    "multi_device": _multi_device,
    "ieee754": _ieee754,
}
