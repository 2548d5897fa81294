"""The capability probes of computing: forward, autograd, compile, autocast, module hooks, the fused optimizer
and random numbers (`capabilities.CAPABILITY_PROBES` names each)."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import torch

from torchcts.probe.env import ProbeEnv


# -- forward, autograd, compile ----------------------------------------------------------------


def inference(env: ProbeEnv) -> None:
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


def training(env: ProbeEnv) -> None:
    env.agree("backward", _gradient(), env.values())


def double_backward(env: ProbeEnv) -> None:
    env.agree("double backward", _gradient(create_graph=True), env.values())


def gradcheck(env: ProbeEnv) -> None:
    x = env.to_device(env.values(dtype=torch.float64)).requires_grad_()
    ok = env.steps.run("gradcheck (float64)", lambda: torch.autograd.gradcheck(lambda t: t * t, (x,)))
    env.steps.expect("gradcheck (float64)", ok is True, "gradcheck returned False")


def gradient_checkpointing(env: ProbeEnv) -> None:
    from torch.utils.checkpoint import checkpoint

    def grad(x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_()
        y = checkpoint(lambda t: t * t * t, x, use_reentrant=False)
        (first,) = torch.autograd.grad(y, x, torch.ones_like(y))
        return first

    env.agree("backward through checkpoint", grad, env.values())


def torch_compile(env: ProbeEnv) -> None:
    compiled = env.steps.run("torch.compile", lambda: torch.compile(lambda t: t * 2 + 1, backend="eager",
                                                                       dynamic=False))
    env.agree("compiled call (backend eager)", compiled, env.values())


def autocast(env: ProbeEnv) -> None:
    x = env.to_device(env.values())
    region = env.steps.run("enter torch.autocast", lambda: torch.autocast(device_type=env.device_type))
    with region:
        got = env.steps.run("add under autocast", lambda: x + x)
    env.close("add under autocast", got, env.values() * 2)


def module_hooks(env: ProbeEnv) -> None:
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


def fused_optimizer(env: ProbeEnv) -> None:
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


def rng(env: ProbeEnv) -> None:
    def draw() -> torch.Tensor:
        torch.manual_seed(1234)
        return torch.rand(8, device=env.device)

    with _rng_kept(env):
        first = env.steps.run("manual_seed + rand", draw)
        second = env.steps.run("manual_seed + rand", draw)
        env.steps.same("the same seed draws the same values", second, first.cpu())


def device_generator(env: ProbeEnv) -> None:
    generator = env.steps.run("torch.Generator(device)", lambda: torch.Generator(device=env.device))

    def draw() -> torch.Tensor:
        generator.manual_seed(1234)
        return torch.rand(8, device=env.device, generator=generator)

    first = env.steps.run("rand with the generator", draw)
    env.steps.same("the same seed draws the same values", env.steps.run("rand with the generator", draw), first.cpu())


def rng_distributions(env: ProbeEnv) -> None:
    with _rng_kept(env):
        normal = env.steps.run("normal_", lambda: torch.empty(64, device=env.device).normal_().cpu())
        uniform = env.steps.run("uniform_", lambda: torch.empty(64, device=env.device).uniform_().cpu())
    env.steps.expect("normal_", bool(normal.isfinite().all()) and normal.std() > 0, "not finite, varying values")
    env.steps.expect("uniform_", bool(((uniform >= 0) & (uniform < 1)).all()), "values outside [0, 1)")
