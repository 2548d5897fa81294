"""The capability probes of what tensors hold and how: layouts (channels_last, sparse, nested), foreach lists,
fp8, quantized containers and decoders, IEEE 754 specials (`capabilities.CAPABILITY_PROBES` names each)."""

from __future__ import annotations

from typing import Any

import torch

from torchcts.containers import FORMATS, Container, decode, pack_codes
from torchcts.containers.codec import decode_container, program_arguments
from torchcts.containers.decoders import DecoderError, check_result
from torchcts.containers.decoders import load as load_decoder
from torchcts.probe.env import ProbeEnv
from torchcts.probe.result import NoProbe, StepFailed


# -- layouts, containers, dtypes -------------------------------------------------------------


def channels_last(env: ProbeEnv) -> None:
    cpu = torch.arange(12, dtype=env.dtype).reshape(1, 3, 2, 2).contiguous(memory_format=torch.channels_last)
    on_device = env.steps.run("copy to device (channels_last)", lambda: cpu.to(env.device))
    env.steps.expect("copy to device (channels_last)", on_device.stride() == cpu.stride(),
                     f"strides {on_device.stride()}, expected {cpu.stride()}")
    env.steps.same("copy to CPU", on_device, cpu)


def sparse(env: ProbeEnv) -> None:
    cpu = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), env.values(1, 2), (2, 2))
    on_device = env.steps.run("sparse COO tensor to device", lambda: cpu.to(env.device))
    env.steps.same("to_dense on CPU", env.steps.run("copy to CPU", lambda: on_device.cpu().to_dense()), cpu.to_dense())


def nested(env: ProbeEnv) -> None:
    parts = [env.values(1, 2), env.values(3, 4, 5)]
    nested = env.steps.run("nested_tensor on device", lambda: torch.nested.nested_tensor(parts, device=env.device))
    back = env.steps.run("unbind", lambda: [t.cpu() for t in nested.unbind()])
    for got, expected in zip(back, parts):
        env.steps.same("unbind", got, expected)


def foreach(env: ProbeEnv) -> None:
    cpu = [env.values(), env.values(4, 3, 2, 1)]
    on_device = [env.to_device(t) for t in cpu]
    got = env.steps.run("_foreach_add", lambda: torch._foreach_add(on_device, 1.0))
    for result, expected in zip(got, torch._foreach_add(cpu, 1.0)):
        env.close("_foreach_add", result, expected)


def fp8(env: ProbeEnv) -> None:
    cpu = torch.tensor([0.5, 1.0, -2.0, 448.0]).to(torch.float8_e4m3fn)
    on_device = env.to_device(cpu)
    env.steps.same("copy to CPU (float8_e4m3fn)", on_device, cpu)
    env.close("cast to float32", env.steps.run("cast to float32", lambda: on_device.to(torch.float32)),
              cpu.to(torch.float32))


def _probe_container(spec_name: str) -> Any:
    """A small container of `spec_name` on CPU: codes 0, 1, 2, ... over one block (or 6 elements), scale 0.5
    (E8M0 126, E4M3 0x30), zero point 1."""
    spec = FORMATS[spec_name]
    count = spec.block or 6
    codes = [spec.codes[i % len(spec.codes)] for i in range(count)]
    if spec.scale == "float":
        scale = torch.tensor(0.5)
    else:
        scale = torch.tensor([126 if spec.scale == "e8m0" else 0x30], dtype=torch.uint8)
    zero_point = torch.tensor(1, dtype=torch.int32) if spec.zero_point else None
    return Container(spec_name, pack_codes(codes, spec.bits, spec.msb_first), scale, zero_point, (count,))


def quantized_container_plumbing(env: ProbeEnv) -> None:
    container = _probe_container("uint4")
    packed = env.to_device(container.packed, "copy packed uint4 bytes to device")
    env.steps.same("copy packed bytes to CPU", packed, container.packed)
    env.steps.same("slice copied to CPU", env.steps.run("slice", lambda: packed[1:3]), container.packed[1:3])
    scale, zero_point = env.to_device(container.scale), env.to_device(container.zero_point)
    unpacked = env.steps.run("unpack uint4 on the device", lambda: decode_container(
        packed, scale, zero_point, container.shape, torch.float32, **program_arguments(container.spec, env.device)))
    env.steps.same("unpacked on the device, copied to CPU", unpacked, decode(container))


def native_quantization(env: ProbeEnv) -> None:
    def round_trip(x: torch.Tensor) -> torch.Tensor:
        return torch.quantize_per_tensor(x.float(), 0.5, 0, torch.quint8).dequantize()

    env.agree("quantize_per_tensor + dequantize", round_trip, env.values())


def custom_quantized_decode(env: ProbeEnv) -> None:
    decoders = dict(getattr(env.manifest, "custom_container_decoders", {}) or {})
    if not decoders:
        raise NoProbe("the manifest names no custom_container_decoders to import")
    for fmt, target in sorted(decoders.items()):
        step = f"decoder {target} ({fmt})"
        container = _probe_container(fmt)

        def call() -> torch.Tensor:
            try:
                decoder = load_decoder(fmt, target)
                result = decoder(*(None if t is None else t.to(env.device)
                                   for t in (container.packed, container.scale, container.zero_point)),
                                 container.shape, torch.float32, torch.device(env.device))
                return check_result(fmt, target, result, container.shape, torch.float32, torch.device(env.device))
            except DecoderError as exc:
                raise StepFailed(step, str(exc)) from exc

        env.steps.same(step, env.steps.run(step, call), decode(container))


def ieee754(env: ProbeEnv) -> None:
    special = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 1e-40, -1e-40])  # 1e-40: subnormal
    on_device = env.to_device(special)
    env.steps.same("copy to CPU (NaN, inf, -0.0, subnormals)", on_device, special)
    env.close("multiply by 1", env.steps.run("multiply by 1", lambda: on_device * 1.0), special * 1.0)
