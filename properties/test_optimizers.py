"""Optimizers: `torch.optim` with `foreach=True` or `fused=True` on the device gives the single-tensor CPU result.

Each scenario is one optimizer and one implementation. A case draws a parameter list (1 to 8
tensors of mixed shapes, 0-dim and empty included: the multi-tensor kernels' list and chunk
handling is what differs from a loop), 1 to 4 steps of gradients, and the optimizer's options
(learning rate, weight decay, `maximize`, momentum and `nesterov`, `amsgrad`, `centered`, ...). The
program makes the parameters leaves on the device, runs the steps (setting `.grad` by hand, no
autograd) and returns the parameters and every tensor of the optimizer's state, ordered by name.
The oracle is the same program on CPU with `foreach=False`: torch's per-tensor reference loop. The
tolerance is the dtype's, widened by twice the number of steps (fused and multi-tensor kernels order
their arithmetic differently; each step compounds it), with the manifest's `optimizer` override.

- `foreach_optimizer` (capability `foreach`): SGD, Adam, AdamW, Adagrad, RMSprop, Adamax, NAdam,
  RAdam, Adadelta with `foreach=True`.
- `fused_optimizer` (capability `fused_optimizer`): SGD, Adam, AdamW, Adagrad with `fused=True`
  (the optimizers torch has fused kernels for).

Limits: float32 parameters only (the state dtype rules of reduced-precision fused kernels are a
backend's own); no gradient scaling (`grad_scale`/`found_inf`), no sparse gradients, no
`capturable`, no differentiable optimizers; learning rates are numbers, not tensors.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.engine.programs import run_program
from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input

DTYPES = ("float32",)
CATEGORIES = ("optimizer",)  # the manifest's tolerance override the comparison reads (vocabulary.TOLERANCE_READERS)
FOREACH = ("sgd", "adam", "adamw", "adagrad", "rmsprop", "adamax", "nadam", "radam", "adadelta")
FUSED = ("sgd", "adam", "adamw", "adagrad")
MAX_TENSORS = 8
MAX_STEPS = 4
_CLASSES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "adagrad": "Adagrad", "rmsprop": "RMSprop",
            "adamax": "Adamax", "nadam": "NAdam", "radam": "RAdam", "adadelta": "Adadelta"}


# -- the program: torch only ------------------------------------------------------------------------------------------

def optimizer_steps(params, grads, name, implementation, options):
    """`torch.optim.<name>` over copies of `params` made leaves, one `step()` per gradient list in `grads`, as the
    `implementation` "single" (`foreach=False`), "foreach" or "fused"; returns [the parameters, each parameter's
    state tensors ordered by name]."""
    classes = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
               "adagrad": torch.optim.Adagrad, "rmsprop": torch.optim.RMSprop, "adamax": torch.optim.Adamax,
               "nadam": torch.optim.NAdam, "radam": torch.optim.RAdam, "adadelta": torch.optim.Adadelta}
    flags = {"single": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}[implementation]
    leaves = [p.detach().clone() for p in params]
    optimizer = classes[name](leaves, **options, **flags)
    for step in grads:
        for leaf, grad in zip(leaves, step):
            leaf.grad = grad.clone()
        optimizer.step()
    states = [[value for key, value in sorted(optimizer.state[leaf].items()) if isinstance(value, torch.Tensor)]
              for leaf in leaves]
    return [leaves, states]


PROGRAMS = {f"{implementation}_{name}": optimizer_steps
            for implementation, names in (("foreach", FOREACH), ("fused", FUSED)) for name in names}


# -- cases ------------------------------------------------------------------------------------------------------------

def _options(draw, name: str) -> dict:
    """The optimizer's options: a learning rate, weight decay and `maximize`, and its own flags."""
    options = {"lr": draw(st.sampled_from([1e-3, 0.1, 1.0]), label="lr"),
               "weight_decay": draw(st.sampled_from([0.0, 0.01, 0.5]), label="weight_decay"),
               "maximize": draw(st.booleans(), label="maximize")}
    if name == "sgd":
        momentum = draw(st.sampled_from([0.0, 0.9]), label="momentum")
        nesterov = momentum > 0 and draw(st.booleans(), label="nesterov")
        options |= {"momentum": momentum, "nesterov": nesterov,
                    "dampening": 0.0 if nesterov else draw(st.sampled_from([0.0, 0.1]), label="dampening")}
    elif name in ("adam", "adamw"):
        options |= {"amsgrad": draw(st.booleans(), label="amsgrad"),
                    "betas": draw(st.sampled_from([(0.9, 0.999), (0.5, 0.9)]), label="betas")}
    elif name == "adagrad":
        options |= {"lr_decay": draw(st.sampled_from([0.0, 0.1]), label="lr_decay"),
                    "initial_accumulator_value": draw(st.sampled_from([0.0, 0.5]), label="initial_accumulator_value")}
    elif name == "rmsprop":
        options |= {"centered": draw(st.booleans(), label="centered"),
                    "momentum": draw(st.sampled_from([0.0, 0.9]), label="momentum")}
    elif name in ("nadam", "radam"):
        options |= {"decoupled_weight_decay": draw(st.booleans(), label="decoupled_weight_decay")}
    return options


def _shapes(draw) -> list[tuple[int, ...]]:
    count = draw(st.integers(1, MAX_TENSORS), label="parameters")
    shape = st.sampled_from([(), (0,), (3,), (2, 3), (4, 1, 2), (17,)])
    return [draw(shape, label=f"shape {i}") for i in range(count)]


def _values(draw, shape: tuple[int, ...], label: str) -> torch.Tensor:
    seed = draw(st.integers(0, 2**16 - 1), label=f"seed of {label}")
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def optimizer_cases(scenario: str) -> st.SearchStrategy[Case]:
    implementation, name = scenario.split("_", 1)

    @st.composite
    def draw_case(draw) -> Case:
        shapes = _shapes(draw)
        params = [_values(draw, s, f"param {i}") for i, s in enumerate(shapes)]
        steps = draw(st.integers(1, MAX_STEPS), label="steps")
        grads = [[_values(draw, s, f"grad {k}.{i}") for i, s in enumerate(shapes)] for k in range(steps)]
        options = _options(draw, name)
        sample = sample_input(params, args=(grads, name, implementation, options))
        what = f"{_CLASSES[name]}({implementation}, {len(params)} tensors, {steps} steps, {options})"
        return Case(scenario, "scenario", torch.float32, sample, 0, transforms=(what,))

    return draw_case()


def optimizer_check(cts):
    """The device's steps (its implementation) equal CPU's single-tensor loop: parameters and state."""
    run = run_program(optimizer_steps)

    def check(case):
        grads, name, _, options = case.sample.args
        oracle = sample_input(case.sample.input, args=(grads, name, "single", options))
        expected = cts.on_cpu_call(run, oracle)
        actual = cts.on_device_call(run, case.sample, what=f" ({case.transforms[0]})")
        cts.assert_matches(actual, expected, what=case.transforms[0], widen=2.0 * len(grads), normwise=False,
                           categories=CATEGORIES)

    return check


# the aten overloads the optimizers dispatch on a device (their multi-tensor and fused kernels; the coverage audit
# reads them: docs/coverage/audit.md)
_FUSED_OVERLOADS = ("aten._fused_sgd_.default", "aten._fused_adam_.default", "aten._fused_adamw_.default",
                    "aten._fused_adagrad_.default")


@register_property("foreach_optimizer", capability="foreach", level=3,
                   items=ScenarioItems(tuple(s for s in PROGRAMS if s.startswith("foreach_")), DTYPES,
                                       programs={s: p for s, p in PROGRAMS.items() if s.startswith("foreach_")}))
def test_foreach_optimizer(cts):
    cts.run(optimizer_cases(cts.item.op), optimizer_check(cts))


@register_property("fused_optimizer", capability="fused_optimizer", level=3,
                   items=ScenarioItems(tuple(s for s in PROGRAMS if s.startswith("fused_")), DTYPES,
                                       programs={s: p for s, p in PROGRAMS.items() if s.startswith("fused_")}),
                   overloads=_FUSED_OVERLOADS)
def test_fused_optimizer(cts):
    cts.run(optimizer_cases(cts.item.op), optimizer_check(cts))
