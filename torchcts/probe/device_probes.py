"""The capability probes of the device itself: memory (pinned, guarded allocation), streams and events, the
device module and its devices, determinism, data loading and serialization (`capabilities.CAPABILITY_PROBES` names
each)."""

from __future__ import annotations

import io
from typing import Any

import torch

from torchcts.probe.env import ProbeEnv
from torchcts.probe.result import StepFailed

HUGE_ALLOCATION_BYTES = 2**60  # 1 EiB: more than any device has, so allocating it must raise


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


def pinned_memory(env: ProbeEnv) -> None:
    pinned = env.steps.run("pin_memory", lambda: env.values().pin_memory())
    env.steps.expect("pin_memory", pinned.is_pinned(), "the tensor is not pinned after pin_memory()")
    on_device = env.steps.run("non_blocking copy to device", lambda: pinned.to(env.device, non_blocking=True))
    env.steps.run("synchronize", lambda: _synchronize(env))
    env.steps.same("copy to CPU", on_device, pinned)


def streams(env: ProbeEnv) -> None:
    # the device module's Stream where it has one (torch.cuda.Stream, a Python backend's), as the streams suite uses
    module = getattr(torch, env.device_type, None)
    if hasattr(module, "Stream") and env.device_type != "cpu":  # torch.cpu.Stream has no synchronize
        label = f"torch.{env.device_type}.Stream(device)"
        stream = env.steps.run(label, lambda: module.Stream(env.device))
    else:
        stream = env.steps.run("torch.Stream(device)", lambda: torch.Stream(device=env.device))
    env.steps.run("stream.synchronize()", lambda: stream.synchronize())


def events(env: ProbeEnv) -> None:
    module = getattr(torch, env.device_type, None)
    if hasattr(module, "Event") and env.device_type != "cpu":  # torch.cpu.Event records nothing: torch.Event says so
        event = env.steps.run(f"torch.{env.device_type}.Event()", lambda: module.Event())
    else:
        event = env.steps.run("torch.Event(device)", lambda: torch.Event(device=env.device))
    env.steps.run("event.record()", lambda: event.record())
    env.steps.run("event.synchronize()", lambda: event.synchronize())


def deterministic(env: ProbeEnv) -> None:
    before = torch.are_deterministic_algorithms_enabled()
    try:
        env.steps.run("use_deterministic_algorithms(True)", lambda: torch.use_deterministic_algorithms(True))
        env.agree("add under deterministic algorithms", torch.add, env.values(), env.values())
    finally:
        torch.use_deterministic_algorithms(before)


def guard_alloc(env: ProbeEnv) -> None:
    elements = HUGE_ALLOCATION_BYTES // 4
    try:
        huge = torch.empty(elements, dtype=torch.float32, device=env.device)
    except Exception:  # noqa: BLE001 - raising is the capability: out-of-memory is an exception, not a crash
        return
    del huge
    raise StepFailed("allocate 1 EiB", "returned a tensor instead of raising out-of-memory")


def device_api(env: ProbeEnv) -> None:
    module = _device_module(env)
    count = env.steps.run(f"torch.{env.device_type}.device_count()", lambda: module.device_count())
    env.steps.expect(f"torch.{env.device_type}.device_count()", isinstance(count, int) and count >= 1,
                     f"returned {count!r}")
    env.steps.run(f"torch.{env.device_type}.synchronize()", lambda: module.synchronize())


def multi_device(env: ProbeEnv) -> None:
    module = _device_module(env)
    count = env.steps.run(f"torch.{env.device_type}.device_count()", lambda: module.device_count())
    env.steps.expect(f"torch.{env.device_type}.device_count()", isinstance(count, int) and count >= 2,
                     f"{count} device(s) visible; multi_device needs two")
    first = env.steps.run(f"copy to {env.device_type}:0", lambda: env.values().to(f"{env.device_type}:0"))
    second = env.steps.run(f"copy {env.device_type}:0 -> {env.device_type}:1", lambda: first.to(f"{env.device_type}:1"))
    env.steps.same("copy to CPU", second, env.values())


def dataloader(env: ProbeEnv) -> None:
    from torch.utils.data import DataLoader, TensorDataset

    data = torch.arange(8, dtype=env.dtype).reshape(4, 2)
    batches = env.steps.run("DataLoader", lambda: list(DataLoader(TensorDataset(data), batch_size=2)))
    moved = [env.steps.run("batch to device", lambda b=batch: b.to(env.device, non_blocking=True))
             for (batch,) in batches]
    env.steps.run("synchronize", lambda: _synchronize(env))
    env.steps.same("batches back on CPU", env.steps.run("copy to CPU", lambda: torch.cat([m.cpu() for m in moved])), data)


def serialization(env: ProbeEnv) -> None:
    on_device = env.to_device(env.values())
    buffer = io.BytesIO()
    env.steps.run("torch.save", lambda: torch.save(on_device, buffer))
    buffer.seek(0)
    step = "torch.load (weights_only=True, the default)"
    loaded = env.steps.run(step, lambda: torch.load(buffer, weights_only=True))
    env.steps.expect(step, loaded.device.type == env.device_type, f"loaded onto {loaded.device}")
    env.steps.same(step, loaded, env.values())
