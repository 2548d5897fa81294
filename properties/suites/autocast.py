"""Autocast: under `torch.autocast(device_type=<the device>)` each op runs in the dtype the declared policy says.

One scenario per op of the suite (`vocabulary.AUTOCAST_OPS`: matmuls and convolutions, reductions,
norms, losses, pointwise and joining ops), in each autocast dtype the manifest claims (float16,
bfloat16: the item's dtype). The op's floating inputs are drawn in float32 or the autocast dtype
(all alike where the policy leaves the op alone, so the call stays valid). The device runs the op
under autocast; **the oracle is CPU running the op without autocast, on inputs cast as the op's
class says** (`Manifest.autocast_class`: the manifest's `autocast_policy`, else torch's published
policy: CUDA's lists, CPU's on a CPU target): lower precision, float32, the widest input dtype, or
unchanged. The result's dtype must be the oracle's, its values within the autocast dtype's tolerance.

Two scenarios run one torch-only program on both sides: `nesting` (autocast, then `enabled=False`
inside it, then re-enabled inside that, then outside: the matmul's dtype at each depth, and
`is_autocast_enabled` after) and `backward` (a linear layer with float32 weights run under autocast and
differentiated outside it: output in the autocast dtype, float32 gradients equal to CPU's).

Limits: the op scenarios are not exportable as torch-only scripts (their oracle is the declared
policy, not a torch call; `replay` reproduces them); autocast's cast cache, `cache_enabled` and
GradScaler are not checked; float64 inputs are not drawn.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints, Mapping, OneOf, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.engine.programs import program_check, run_program
from torchcts.manifest.vocabulary import AUTOCAST_OPS
from torchcts.properties.scenario_table import Custom, Scenario, scenario_suite
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("under `torch.autocast` each op's result dtype and values follow the declared policy (manifest "
          "`autocast_policy`, else torch's published lists); nesting and `enabled=False`; backward through autocast")
ITEMS = "scenarios (one per op of the policy table, `nesting`, `backward`)"

DTYPES = ("float16", "bfloat16")
PROGRAM_SCENARIOS = ("nesting", "backward")
SCENARIOS = (*AUTOCAST_OPS, *PROGRAM_SCENARIOS)


# -- the programs: torch only -----------------------------------------------------------------------------------------

def autocast_call(input, *others, op, autocast_dtype, options, policy=None):
    """`op` (a name of vocabulary.AUTOCAST_OPS) on (input, *others) under torch.autocast on input's device in
    `autocast_dtype` ("float16", "bfloat16"); with `policy` (an autocast class) instead without autocast, on
    inputs cast as that class says: the oracle. Returns the op's result."""
    F = torch.nn.functional
    dtype = getattr(torch, autocast_dtype)

    def call(t):
        if op in ("mm", "bmm", "addmm", "baddbmm", "addbmm", "matmul", "dot", "atan2", "addcmul", "exp", "log",
                  "pow", "sum", "prod", "cdist"):
            return getattr(torch, op)(*t)
        if op in ("cat", "stack"):
            return getattr(torch, op)(t, dim=options["dim"])
        if op in ("softmax", "log_softmax", "cumsum"):
            return getattr(F if op != "cumsum" else torch, op)(t[0], options["dim"])
        if op == "layer_norm":
            return F.layer_norm(t[0], t[0].shape[-1:], t[1], t[2])
        if op == "group_norm":
            return F.group_norm(t[0], options["groups"], t[1], t[2])
        if op == "kl_div":
            return F.kl_div(t[0], t[1], reduction="batchmean")
        return getattr(F, op)(*t)  # linear, conv1d, conv2d, conv_transpose2d, prelu, and the losses

    tensors = [input, *others]
    if policy is None:
        with torch.autocast(device_type=input.device.type, dtype=dtype):
            return call(tensors)
    floating = [t.dtype for t in tensors if t.is_floating_point()]
    target = {"lower_precision": dtype, "float32": torch.float32, "unchanged": None}.get(policy)
    if policy == "promote":
        target = floating[0]
        for other in floating[1:]:
            target = torch.promote_types(target, other)
    if target is not None:
        tensors = [t.to(target) if t.is_floating_point() and (policy == "promote" or t.dtype != torch.float64)
                   else t for t in tensors]
    return call(tensors)


def nested_autocast(input, other, autocast_dtype):
    """A matmul at each depth: under autocast, inside `enabled=False` within it, re-enabled inside that, after
    the inner regions, and outside; returns the results, their dtypes' names and whether autocast is on after."""
    device, dtype = input.device.type, getattr(torch, autocast_dtype)
    with torch.autocast(device_type=device, dtype=dtype):
        outer = torch.mm(input, other)
        with torch.autocast(device_type=device, enabled=False):
            disabled = torch.mm(input, other)
            with torch.autocast(device_type=device, dtype=dtype):
                reenabled = torch.mm(input, other)
        after = torch.mm(input, other)
    outside = torch.mm(input, other)
    results = [outer, disabled, reenabled, after, outside]
    return [results, [str(r.dtype) for r in results], torch.is_autocast_enabled(device)]


def autocast_backward(input, weight, bias, autocast_dtype):
    """A linear layer with float32 `weight` and `bias` run under autocast, its loss differentiated outside it;
    returns the output (the autocast dtype), the loss and the float32 gradients."""
    weight, bias = weight.clone().requires_grad_(True), bias.clone().requires_grad_(True)
    with torch.autocast(device_type=input.device.type, dtype=getattr(torch, autocast_dtype)):
        output = torch.nn.functional.linear(input, weight, bias)
    loss = output.float().square().mean()
    loss.backward()
    return [output.detach(), loss.detach(), weight.grad, bias.grad]


PROGRAMS = {"nesting": nested_autocast, "backward": autocast_backward}


# -- cases ------------------------------------------------------------------------------------------------------------

SIDE, SPATIAL = Ints(1, 4), Ints(2, 5)  # batch, rows, inner, columns; a convolution's spatial sides
GROUPS, PER_GROUP = Ints(1, 3), Ints(1, 2)  # group_norm's groups and channels per group
SEED = Ints(0, 2**16 - 1)
_CONVOLUTIONS = ("conv1d", "conv2d", "conv_transpose2d")
_BATCHED = ("bmm", "baddbmm", "addbmm")
_OPTIONS = {"cat": {"dim": OneOf((0,))}, "stack": {"dim": OneOf((0,))}, "softmax": {"dim": OneOf((0, 1))},
            "log_softmax": {"dim": OneOf((0, 1))}, "cumsum": {"dim": OneOf((0, 1))}, "group_norm": {"groups": GROUPS}}


def _size(draw, label: str, low: int = SIDE.low, high: int = SIDE.high) -> int:
    return draw(st.integers(low, high), label=label)


def _operand(op: str) -> Tensors:
    """The largest tensor `op`'s cases hold (`_shapes`)."""
    if op in _CONVOLUTIONS:
        return Tensors(SIDE.high ** 2 * SPATIAL.high ** 2, 4)
    if op == "group_norm":
        return Tensors(SIDE.high ** 2 * GROUPS.high * PER_GROUP.high, 3)
    return Tensors(SIDE.high ** (3 if op in _BATCHED else 2), 3 if op in _BATCHED else 2)


def _targets_are_classes(params: dict) -> bool:
    """nll_loss's integer targets index the input's classes (a device kernel may assert, or read out of bounds)."""
    target = params["other"]
    return not target.is_floating_point() and (target.numel() == 0 or (
        int(target.min()) >= 0 and int(target.max()) < params["input"].shape[-1]))


_SAME_SHAPE = ("atan2", "pow", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits", "kl_div",
               "addcmul", "stack")  # `_shapes` draws their operands the input's shape


def _operands_match_input(params: dict) -> bool:
    """Operands of the input's shape: two that broadcast each other would make a result past the operand bound."""
    return all(params[name].shape == params["input"].shape for name in ("other", "third") if name in params)


def _op_params(op: str) -> CaseParams:
    """An op scenario's stored values: its input and up to two more operands, the op, the dtype and its options."""
    operand = _operand(op)
    options = _OPTIONS.get(op, {})
    rules = (("nll_loss's targets are classes of the input", _targets_are_classes),) if op == "nll_loss" else ()
    if op in _SAME_SHAPE:
        rules = (("each operand has the input's shape", _operands_match_input),)
    return CaseParams({"other": operand, "third": operand}, input=operand, min_args=0,
                      kwargs={"op": OneOf((op,)), "autocast_dtype": OneOf(DTYPES),
                              "options": Mapping(options, required=tuple(options))}, rules=rules)


_MATRIX, _VECTOR = Tensors(SIDE.high ** 2, 2), Tensors(SIDE.high, 1)
PARAMS = {  # what each scenario's cases store (`cases.bounds`): the draws below go through the same ranges
    **{op: _op_params(op) for op in AUTOCAST_OPS},
    "nesting": CaseParams({"other": _MATRIX, "autocast_dtype": OneOf(DTYPES)}, input=_MATRIX),
    "backward": CaseParams({"weight": _MATRIX, "bias": _VECTOR, "autocast_dtype": OneOf(DTYPES)}, input=_MATRIX),
}


def _shapes(draw, op: str) -> tuple[list[tuple[int, ...]], dict, list[int]]:
    """The op's tensor shapes, its plain options, and which of its tensors are integer class targets."""
    b, m, k, n = (_size(draw, label) for label in ("batch", "rows", "inner", "columns"))
    if op == "mm" or op == "matmul":
        return [(m, k), (k, n)], {}, []
    if op == "bmm":
        return [(b, m, k), (b, k, n)], {}, []
    if op == "addmm":
        return [(m, n), (m, k), (k, n)], {}, []
    if op == "baddbmm":
        return [(b, m, n), (b, m, k), (b, k, n)], {}, []
    if op == "addbmm":
        return [(m, n), (b, m, k), (b, k, n)], {}, []
    if op == "linear":
        return [(m, k), (n, k), (n,)], {}, []
    if op in ("conv1d", "conv2d", "conv_transpose2d"):
        low, high = SPATIAL.low, SPATIAL.high
        spatial = (_size(draw, "length", low, high),) if op == "conv1d" else (_size(draw, "height", low, high),
                                                                             _size(draw, "width", low, high))
        kernel = tuple(_size(draw, "kernel", 1, min(spatial)) for _ in spatial)
        weight = (n, k, *kernel) if op != "conv_transpose2d" else (k, n, *kernel)
        return [(b, k, *spatial), weight, (n,)], {}, []
    if op == "prelu":
        return [(m, k), (k,)], {}, []
    if op in ("dot",):
        return [(k,), (k,)], {}, []
    if op in ("atan2", "pow", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits",
              "kl_div"):
        return [(m, k), (m, k)], {}, []
    if op == "addcmul":
        return [(m, k), (m, k), (m, k)], {}, []
    if op == "cdist":
        return [(m, k), (n, k)], {}, []
    if op == "nll_loss":
        return [(m, k), (m,)], {}, [1]
    if op in ("cat", "stack"):
        return [(m, k), (m, k) if op == "stack" else (n, k)], {"dim": 0}, []
    if op in ("softmax", "log_softmax", "cumsum"):
        return [(m, k)], {"dim": draw(st.sampled_from([0, 1]), label="dim")}, []
    if op == "layer_norm":
        return [(m, k), (k,), (k,)], {}, []
    if op == "group_norm":
        groups = _size(draw, "groups", GROUPS.low, GROUPS.high)
        channels = groups * _size(draw, "channels per group", PER_GROUP.low, PER_GROUP.high)
        return [(b, channels, n), (channels,), (channels,)], {"groups": groups}, []
    return [(m, k)], {}, []  # exp, log, sum, prod


def _values(op: str, index: int, shape: tuple[int, ...], seed: int, classes: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if op == "nll_loss" and index == 1:
        return torch.randint(0, classes, shape, generator=generator)
    values = torch.randn(shape, generator=generator)
    if (op in ("log", "pow", "prod") and index == 0) or (op == "kl_div" and index == 1):
        values = values.abs() + 0.5  # log and pow of positive numbers; kl_div's target: probabilities below
    if op == "kl_div" and index == 1:
        values = values / values.sum(-1, keepdim=True)
    if op == "binary_cross_entropy_with_logits" and index == 1:
        values = values.sigmoid()
    return values


def autocast_cases(op: str, autocast_dtype: torch.dtype, policy: str) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        shapes, options, integer = _shapes(draw, op)
        seed = draw(SEED.strategy(), label="seed of the values")
        kinds = (torch.float32, autocast_dtype)
        if policy == "unchanged":  # autocast casts nothing: inputs alike, so the call is valid as it is
            dtypes = [draw(st.sampled_from(kinds), label="dtype of the inputs")] * len(shapes)
        else:
            dtypes = [draw(st.sampled_from(kinds), label=f"dtype of input {i}") for i in range(len(shapes))]
        tensors = [_values(op, i, shape, seed + i, shapes[0][-1]) for i, shape in enumerate(shapes)]
        tensors = [t if i in integer else t.to(dtype) for i, (t, dtype) in enumerate(zip(tensors, dtypes))]
        name = str(autocast_dtype).removeprefix("torch.")
        values = {"input": tensors[0], **dict(zip(("other", "third"), tensors[1:])), "op": op, "autocast_dtype": name,
                  "options": options}
        described = ", ".join(f"{list(t.shape)} {str(t.dtype).removeprefix('torch.')}" for t in tensors)
        what = f"{op} under autocast({name}) on {described} (declared {policy})"
        return scenario_case(op, autocast_dtype, PARAMS[op], values, what)

    return draw_case()


def program_cases(scenario: str, autocast_dtype: torch.dtype) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        m, k, n = (_size(draw, label) for label in ("rows", "inner", "columns"))
        seed = draw(SEED.strategy(), label="seed of the values")
        generator = torch.Generator().manual_seed(seed)
        name = str(autocast_dtype).removeprefix("torch.")
        if scenario == "nesting":
            tensors = (torch.randn(m, k, generator=generator), torch.randn(k, n, generator=generator))
            values = {"input": tensors[0], "other": tensors[1]}
        else:
            tensors = (torch.randn(m, k, generator=generator), torch.randn(n, k, generator=generator),
                       torch.randn(n, generator=generator))
            values = {"input": tensors[0], "weight": tensors[1], "bias": tensors[2]}
        what = f"{scenario} under autocast({name}) on {[list(t.shape) for t in tensors]}"
        return scenario_case(scenario, autocast_dtype, PARAMS[scenario], {**values, "autocast_dtype": name}, what)

    return draw_case()


def declared_policy(cts, op: str) -> str:
    """The autocast class `op` has on the target: the manifest's `autocast_policy`, else torch's published one."""
    return cts.manifest.autocast_class(op, cts.target.device_type)


def policy_check(cts, op: str, policy: str):
    """The device's result under autocast has the dtype and values of CPU's on inputs cast as `policy` says."""
    run = run_program(autocast_call)

    def check(case):
        oracle = sample_input(case.sample.input, args=case.sample.args, kwargs={**case.sample.kwargs, "policy": policy})
        expected = cts.on_cpu_call(run, oracle)
        actual = cts.on_device_call(run, case.sample, what=f" ({case.transforms[0]})")
        cts.assert_matches(actual, expected, what=case.transforms[0], inputs=case.sample, normwise=True)

    return check


def _op_row(op: str) -> Scenario:
    """An op's row: no torch-only program (the oracle is the declared policy: `policy_check`), cases drawn as the
    policy says."""
    return Scenario(op, PARAMS[op], None,
                    Custom(lambda cts, row: policy_check(cts, row.name, declared_policy(cts, row.name))),
                    cases=lambda cts: autocast_cases(op, cts.dtype, declared_policy(cts, op)))


def _program_row(scenario: str) -> Scenario:
    """A program's row: the program on CPU and on the device, the same result (`program_check`, strides free)."""
    return Scenario(scenario, PARAMS[scenario], PROGRAMS[scenario],
                    Custom(lambda cts, row: program_check(cts, row.program, strides=False, what=row.name)),
                    cases=lambda cts: program_cases(scenario, cts.dtype))


test_autocast = scenario_suite(
    "autocast", capability="autocast", level=4, dtypes=DTYPES,
    scenarios=[*(_op_row(op) for op in AUTOCAST_OPS), *(_program_row(name) for name in PROGRAM_SCENARIOS)])
