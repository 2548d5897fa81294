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

import math

import torch
from hypothesis import strategies as st

from torchcts.engine.programs import run_program
from torchcts.cases.bounds import CaseParams, Flag, Lists, Mapping, OneOf, Tensors, Tuples
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("`torch.optim` steps with `foreach=True` / `fused=True` equal CPU's single-tensor loop: parameters and "
          "state")

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

SHAPES = [(), (0,), (3,), (2, 3), (4, 1, 2), (17,)]  # a parameter's shape (its gradients' too)
LR, WEIGHT_DECAY, MOMENTUM, DAMPENING = (1e-3, 0.1, 1.0), (0.0, 0.01, 0.5), (0.0, 0.9), (0.0, 0.1)
BETAS = [(0.9, 0.999), (0.5, 0.9)]
LR_DECAY, INITIAL_ACCUMULATOR = (0.0, 0.1), (0.0, 0.5)
_OWN_OPTIONS = {  # each optimizer's options besides lr, weight_decay and maximize: all drawn, so all stored
    "sgd": {"momentum": OneOf(MOMENTUM), "nesterov": Flag(), "dampening": OneOf(DAMPENING)},
    "adam": {"amsgrad": Flag(), "betas": Tuples((OneOf(tuple(b[0] for b in BETAS)),
                                                 OneOf(tuple(b[1] for b in BETAS))))},
    "adagrad": {"lr_decay": OneOf(LR_DECAY), "initial_accumulator_value": OneOf(INITIAL_ACCUMULATOR)},
    "rmsprop": {"centered": Flag(), "momentum": OneOf(MOMENTUM)},
    "nadam": {"decoupled_weight_decay": Flag()},
}
_OWN_OPTIONS |= {"adamw": _OWN_OPTIONS["adam"], "radam": _OWN_OPTIONS["nadam"], "adamax": {}, "adadelta": {}}
_TENSOR = Tensors(max_elements=max(math.prod(shape) for shape in SHAPES), max_dims=max(map(len, SHAPES)))


def _consistent(p) -> bool:
    """Every parameter has one of SHAPES, every step has a gradient of each parameter's shape; betas is one of
    BETAS; SGD's nesterov only with momentum and no dampening."""
    shapes = [tuple(param.shape) for param in p["input"]]
    options = p["options"]
    return (all(shape in SHAPES for shape in shapes)
            and all([tuple(grad.shape) for grad in step] == shapes for step in p["grads"])
            and ("betas" not in options or tuple(options["betas"]) in BETAS)
            and not (options.get("nesterov") and (options["momentum"] == 0 or options["dampening"] != 0)))


def _params(scenario: str) -> CaseParams:
    """input: the parameters; args: the gradients of each step, the optimizer's name, the implementation, its
    options."""
    implementation, name = scenario.split("_", 1)
    own = _OWN_OPTIONS[name]
    options = Mapping({"lr": OneOf(LR), "weight_decay": OneOf(WEIGHT_DECAY), "maximize": Flag(), **own},
                      required=("lr", "weight_decay", "maximize", *own))
    return CaseParams({"grads": Lists(Lists(_TENSOR, 1, MAX_TENSORS), 1, MAX_STEPS), "name": OneOf((name,)),
                       "implementation": OneOf((implementation,)), "options": options},
                      input=Lists(_TENSOR, 1, MAX_TENSORS),
                      rules=(("parameters of the drawn shapes, a gradient of each per step; betas and nesterov as "
                              "drawn", _consistent),))


def _options(draw, name: str) -> dict:
    """The optimizer's options: a learning rate, weight decay and `maximize`, and its own flags."""
    options = {"lr": draw(st.sampled_from(list(LR)), label="lr"),
               "weight_decay": draw(st.sampled_from(list(WEIGHT_DECAY)), label="weight_decay"),
               "maximize": draw(st.booleans(), label="maximize")}
    if name == "sgd":
        momentum = draw(st.sampled_from(list(MOMENTUM)), label="momentum")
        nesterov = momentum > 0 and draw(st.booleans(), label="nesterov")
        options |= {"momentum": momentum, "nesterov": nesterov,
                    "dampening": 0.0 if nesterov else draw(st.sampled_from(list(DAMPENING)), label="dampening")}
    elif name in ("adam", "adamw"):
        options |= {"amsgrad": draw(st.booleans(), label="amsgrad"),
                    "betas": draw(st.sampled_from(BETAS), label="betas")}
    elif name == "adagrad":
        options |= {"lr_decay": draw(st.sampled_from(list(LR_DECAY)), label="lr_decay"),
                    "initial_accumulator_value": draw(st.sampled_from(list(INITIAL_ACCUMULATOR)),
                                                      label="initial_accumulator_value")}
    elif name == "rmsprop":
        options |= {"centered": draw(st.booleans(), label="centered"),
                    "momentum": draw(st.sampled_from(list(MOMENTUM)), label="momentum")}
    elif name in ("nadam", "radam"):
        options |= {"decoupled_weight_decay": draw(st.booleans(), label="decoupled_weight_decay")}
    return options


def _shapes(draw) -> list[tuple[int, ...]]:
    count = draw(st.integers(1, MAX_TENSORS), label="parameters")
    shape = st.sampled_from(SHAPES)
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
        what = f"{_CLASSES[name]}({implementation}, {len(params)} tensors, {steps} steps, {options})"
        return scenario_case(scenario, torch.float32, PARAMS[scenario], {
            "input": params, "grads": grads, "name": name, "implementation": implementation, "options": options},
            what)

    return draw_case()


def optimizer_check(cts, row):
    """The device's steps (its implementation) equal CPU's single-tensor loop: parameters and state, within the
    optimizer tolerance widened twice per step."""
    run = run_program(optimizer_steps)

    def check(case):
        values = row.values(case)
        grads, name, options = values["grads"], values["name"], values["options"]
        oracle = sample_input(case.sample.input, args=(grads, name, "single", options))
        expected = cts.on_cpu_call(run, oracle)
        actual = cts.on_device_call(run, case.sample, what=f" ({case.transforms[0]})")
        cts.assert_matches(actual, expected, what=case.transforms[0], widen=2.0 * len(grads), normwise=False,
                           categories=CATEGORIES)

    return check


PARAMS = {scenario: _params(scenario) for scenario in PROGRAMS}  # what each scenario's cases store (`cases.bounds`)
FOREACH_SCENARIOS = tuple(s for s in PROGRAMS if s.startswith("foreach_"))
FUSED_SCENARIOS = tuple(s for s in PROGRAMS if s.startswith("fused_"))

# the aten overloads the optimizers dispatch on a device (their multi-tensor and fused kernels; the coverage audit
# reads them: docs/coverage/audit.md)
_FUSED_OVERLOADS = ("aten._fused_sgd_.default", "aten._fused_adam_.default", "aten._fused_adamw_.default",
                    "aten._fused_adagrad_.default")


def _rows(scenarios: tuple[str, ...]) -> list[Scenario]:
    return [Scenario(scenario, PARAMS[scenario], PROGRAMS[scenario], Custom(optimizer_check),
                     cases=lambda cts: optimizer_cases(cts.item.op)) for scenario in scenarios]


test_foreach_optimizer = scenario_suite("foreach_optimizer", capability="foreach", level=3, dtypes=DTYPES,
                                        scenarios=_rows(FOREACH_SCENARIOS))
test_fused_optimizer = scenario_suite("fused_optimizer", capability="fused_optimizer", level=3, dtypes=DTYPES,
                                      overloads=_FUSED_OVERLOADS, scenarios=_rows(FUSED_SCENARIOS))
