"""Module hooks: forward, backward and state-dict hooks on a device module fire in CPU's order and see CPU's values.

Each scenario is one small drawn model (sizes and weights from drawn seeds, built on CPU, then moved)
with hooks registered on every submodule after the move: forward pre-hooks, forward hooks, full
backward pre-hooks and full backward hooks, each appending an event ("forward net.0", ...) to a log
and a clone of every tensor it is given (inputs, outputs, grad_output, grad_input). One drawn
submodule's forward pre-hook returns a shifted input, another's forward hook a scaled output, another's
backward pre-hook a scaled grad_output and another's backward hook a scaled grad_input, so each
replacement must take effect. Then `state_dict()` runs through a state-dict pre-hook and a post-hook
that scales one entry, and `load_state_dict` loads it back through a load pre-hook that shifts one entry
and a load post-hook. The program returns the event log (plain strings: compared exactly), the tensors
the hooks saw, the output, the input's and parameters' gradients, the state dict's keys and the
parameters after loading. Scenarios: `mlp` (Linear, ReLU, Linear), `norm` (Linear, LayerNorm, Tanh,
Linear), `nested` (a Sequential inside a Sequential, so hooks nest), each fed a transposed
(non-contiguous) or contiguous input. The oracle is the same program on CPU.

Limits: float32; module hooks only (tensor hooks, `register_module_forward_hook` globals and
`register_forward_hook(with_kwargs=True)` are not drawn); one forward and one backward; the hook logic
is torch's own Python, so what a device can get wrong is the kernels it runs: the aliases that full
backward hooks wrap module inputs and outputs in (made with grad mode off), and the ops a hook runs
while the engine executes it.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints, Lists, OneOf, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Scenario, Tolerance, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("forward (pre) hooks, full backward (pre) hooks and state-dict / load-state-dict hooks on a device module "
          "fire in CPU's order, see CPU's values, and their returned replacements take effect")

DTYPES = ("float32",)
CATEGORIES = ("backward",)  # the manifest's tolerance override the comparison reads (vocabulary.TOLERANCE_READERS)
MODELS = ("mlp", "norm", "nested")


# -- the program: torch only ------------------------------------------------------------------------------------------

def hooked_module(input, model, sizes, seed, targets, scales):
    """Build `model` of `sizes` = [features, hidden, outputs] on CPU from `seed`, move it to `input`'s device, hook
    every submodule, run forward and backward, then a state-dict round trip; `targets` name the submodules
    (indices into `named_modules()`) whose [forward pre-hook, forward hook, backward pre-hook, backward hook]
    replace their value, by `scales` = [shift, output scale, grad_output scale, grad_input scale]; returns
    [events, tensors seen, output, input grad, parameter grads, state-dict keys, parameters after loading]."""
    nn = torch.nn
    features, hidden, outputs = sizes
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if model == "mlp":
            net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, outputs))
        elif model == "norm":
            net = nn.Sequential(nn.Linear(features, hidden), nn.LayerNorm(hidden), nn.Tanh(),
                                nn.Linear(hidden, outputs))
        else:
            net = nn.Sequential(nn.Sequential(nn.Linear(features, hidden), nn.ReLU()), nn.Linear(hidden, outputs))
    net = net.to(input.device)
    events, seen = [], []
    shift, output_scale, grad_output_scale, grad_input_scale = scales

    def record(event, tensors):
        events.append(event)
        for tensor in tensors:
            seen.append(None if tensor is None else tensor.detach().clone())

    for index, (name, module) in enumerate(net.named_modules()):
        name = name or "net"

        def forward_pre(module, args, name=name, index=index):
            record(f"forward_pre {name}", args)
            if index == targets[0]:
                return (args[0] + shift,)
            return None

        def forward(module, args, output, name=name, index=index):
            record(f"forward {name}", [output])
            return output * output_scale if index == targets[1] else None

        def backward_pre(module, grad_output, name=name, index=index):
            record(f"backward_pre {name}", grad_output)
            return (grad_output[0] * grad_output_scale,) if index == targets[2] else None

        def backward(module, grad_input, grad_output, name=name, index=index):
            record(f"backward {name}", [*grad_input, *grad_output])
            if index == targets[3]:
                return tuple(None if g is None else g * grad_input_scale for g in grad_input)
            return None

        module.register_forward_pre_hook(forward_pre)
        module.register_forward_hook(forward)
        module.register_full_backward_pre_hook(backward_pre)
        module.register_full_backward_hook(backward)

    x = input.detach().requires_grad_(True)
    output = net(x)
    output.square().sum().backward()

    def state_dict_pre(module, prefix, keep_vars):
        events.append(f"state_dict_pre {prefix!r} {keep_vars}")

    def state_dict_post(module, state_dict, prefix, local_metadata):
        events.append(f"state_dict_post {sorted(state_dict)}")
        first = sorted(state_dict)[0]
        state_dict[first] = state_dict[first] * output_scale

    def load_pre(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        events.append(f"load_pre {prefix!r} {sorted(state_dict)}")
        last = sorted(state_dict)[-1]
        state_dict[last] = state_dict[last] + shift

    def load_post(module, incompatible_keys):
        events.append(f"load_post {incompatible_keys.missing_keys} {incompatible_keys.unexpected_keys}")

    net.register_state_dict_pre_hook(state_dict_pre)
    net.register_state_dict_post_hook(state_dict_post)
    net.register_load_state_dict_pre_hook(load_pre)
    net.register_load_state_dict_post_hook(load_post)
    state = net.state_dict()
    keys = sorted(state)
    net.load_state_dict(state)
    return [events, seen, output.detach(), x.grad, [p.grad for p in net.parameters()], keys,
            [p.detach() for p in net.parameters()]]


PROGRAMS = {model: hooked_module for model in MODELS}


# -- cases ------------------------------------------------------------------------------------------------------------

MODULE_COUNTS = {"mlp": 4, "norm": 5, "nested": 5}  # named_modules() of each model, the Sequential included
SIZE, BATCH, SEED = Ints(1, 6), Ints(1, 4), Ints(0, 2**16 - 1)  # features, hidden, outputs; the input's rows
SCALES = (0.5, -1.0, 2.0)


def _params(model: str) -> CaseParams:
    """input [batch, features] (maybe a transpose); args: the model, [features, hidden, outputs], the weights' seed,
    the 4 hooked modules' indices, the 4 scales."""
    return CaseParams({"model": OneOf((model,)), "sizes": Lists(SIZE, 3, 3), "seed": SEED,
                       "targets": Lists(Ints(0, MODULE_COUNTS[model] - 1), 4, 4), "scales": Lists(OneOf(SCALES), 4, 4)},
                      input=Tensors(max_elements=BATCH.high * SIZE.high, max_dims=2),
                      rules=(("input [batch <= 4, features] (sizes[0])", lambda p: p["input"].dim() == 2 and (
                          BATCH.low <= p["input"].shape[0] <= BATCH.high and p["input"].shape[1] == p["sizes"][0])),))


PARAMS = {model: _params(model) for model in MODELS}  # what each scenario's cases store (`cases.bounds`)


def hook_cases(model: str) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        sizes = [draw(SIZE.strategy(), label=label) for label in ("features", "hidden", "outputs")]
        batch = draw(BATCH.strategy(), label="batch")
        transposed = draw(st.sampled_from(("transposed", "contiguous")), label="input layout") == "transposed"
        seed = draw(SEED.strategy(), label="seed of the input")
        values = torch.randn((sizes[0], batch) if transposed else (batch, sizes[0]),
                             generator=torch.Generator().manual_seed(seed))
        input = values.t() if transposed else values
        count = MODULE_COUNTS[model]
        targets = [draw(st.integers(0, count - 1), label=f"module whose {hook} replaces")
                   for hook in ("forward pre-hook", "forward hook", "backward pre-hook", "backward hook")]
        scales = [draw(st.sampled_from(list(SCALES)), label=label)
                  for label in ("shift", "output scale", "grad_output scale", "grad_input scale")]
        weights = draw(SEED.strategy(), label="seed of the weights")
        what = (f"{model}{sizes} on {'transposed ' if transposed else ''}{list(input.shape)}, "
                f"replacing hooks at modules {targets} by {scales}")
        return scenario_case(model, torch.float32, PARAMS[model], {
            "input": input, "model": model, "sizes": sizes, "seed": weights, "targets": targets, "scales": scales},
            what)

    return draw_case()


# The device's event log equals CPU's, and the tensors its hooks saw, its output, gradients and loaded parameters
# match CPU's (plain values exactly, tensors within the backward tolerance, norm-wise).
COMPARISON = Tolerance(categories=CATEGORIES, normwise=True,
                       outputs="events, tensors seen, output, input grad, grads, state-dict keys, loaded")

test_module_hooks = scenario_suite(
    "module_hooks", capability="module_hooks", level=4, dtypes=DTYPES,
    scenarios=[Scenario(model, PARAMS[model], hooked_module, COMPARISON, cases=lambda cts: hook_cases(cts.item.op))
               for model in MODELS])
