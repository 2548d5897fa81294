"""Gradient checkpointing: `torch.utils.checkpoint` on the device gives the plain forward and backward's results.

Each scenario checkpoints one small drawn block (Linear, GELU, Dropout, Linear, LayerNorm, ReLU,
Dropout, Linear; sizes, weights and dropout probability drawn, weights built on CPU then moved) a
different way: `reentrant` (`checkpoint(use_reentrant=True)`), `non_reentrant`
(`checkpoint(use_reentrant=False)`), `sequential` (`checkpoint_sequential` in a drawn number of
segments, reentrant or not). The program, with the RNG seeded by `torch.manual_seed` inside it:
1. in training mode (dropout on), runs the block checkpointed and plainly from the same seed, and
   returns the differences of their outputs, input gradients and parameter gradients (relative to the
   plain run's largest magnitude) and the difference of a random draw after each backward: the
   recompute must replay the forward's dropout masks (`preserve_rng_state`) and leave the generator
   where the plain run leaves it;
2. in eval mode (dropout off), returns the checkpointed output and gradients themselves.
The oracle is the same program on CPU: every difference is zero there, and the eval-mode values are
CPU's within the dtype's tolerance. Random masks differ by device, so values with dropout on are
compared only against the device's own plain run. The program forks the CPU's and the device's RNG,
so the process's generators are left as they were.

Limits: float32; one checkpointed block per program (no nested checkpoints, no `context_fn`, no
`determinism_check` or `debug` options); the checkpointed inputs require gradients; a wrong dropout
mask is caught only by its effect on gradients.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Flag, Ints, Lists, OneOf, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Scenario, Tolerance, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("`torch.utils.checkpoint` (reentrant, non-reentrant, `checkpoint_sequential`) on a block with dropout "
          "equals the device's plain forward/backward (masks replayed, RNG left where a plain run leaves it) and "
          "CPU's eval-mode output and gradients")

DTYPES = ("float32",)
CATEGORIES = ("backward",)  # the manifest's tolerance override the comparison reads (vocabulary.TOLERANCE_READERS)
MODES = ("reentrant", "non_reentrant", "sequential")


# -- the program: torch only ------------------------------------------------------------------------------------------

def checkpointed_block(input, mode, sizes, seed, p, segments, reentrant, rng_seed):
    """Build the block of `sizes` = [features, hidden, outputs] with dropout `p` on CPU from `seed`, move it to
    `input`'s device and run it checkpointed by `mode` (`segments` and `reentrant` for "sequential");
    returns [[differences from the plain run of output, input grad, parameter grads], the difference of a draw
    after backward from one after the plain run, [eval-mode checkpointed output, input grad, parameter grads]]."""
    nn, checkpointing = torch.nn, torch.utils.checkpoint  # attributes: an exported script allows no import
    features, hidden, outputs = sizes
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.Dropout(p), nn.Linear(hidden, hidden),
                            nn.LayerNorm(hidden), nn.ReLU(), nn.Dropout(p), nn.Linear(hidden, outputs))
    net = net.to(input.device)

    def run(checkpointed):
        x = input.detach().clone().requires_grad_(True)
        net.zero_grad(set_to_none=True)
        torch.manual_seed(rng_seed)
        if not checkpointed:
            output = net(x)
        elif mode == "sequential":
            output = checkpointing.checkpoint_sequential(net, segments, x, use_reentrant=reentrant)
        else:
            output = checkpointing.checkpoint(net, x, use_reentrant=mode == "reentrant")
        output.square().sum().backward()
        after = torch.rand(4, device=input.device)
        return [output.detach(), x.grad, *[param.grad for param in net.parameters()]], after

    devices = [] if input.device.type == "cpu" else [input.device]
    with torch.random.fork_rng(devices=devices, device_type=input.device.type):
        checkpointed, after_checkpointed = run(True)
        plain, after_plain = run(False)
        net.eval()
        evaluated, _ = run(True)
    differences = [(a - b) / (1 + b.abs().max()) for a, b in zip(checkpointed, plain)]
    return [differences, after_checkpointed - after_plain, evaluated]


PROGRAMS = {mode: checkpointed_block for mode in MODES}


# -- cases ------------------------------------------------------------------------------------------------------------

BLOCK_LENGTH = 8  # modules in the block; checkpoint_sequential gets 2..8 segments (1 would checkpoint nothing)
SIZE, BATCH, SEED = Ints(1, 8), Ints(1, 4), Ints(0, 2**16 - 1)  # features, hidden, outputs; the input's rows
DROPOUT = (0.5, 0.25, 0.0)
SEGMENTS = Ints(2, BLOCK_LENGTH)


def _params(mode: str) -> CaseParams:
    """input [batch, features]; args: the mode, [features, hidden, outputs], the weights' seed, dropout p, segments,
    reentrant, the masks' seed."""
    sequential = mode == "sequential"
    return CaseParams({"mode": OneOf((mode,)), "sizes": Lists(SIZE, 3, 3), "seed": SEED, "p": OneOf(DROPOUT),
                       "segments": SEGMENTS if sequential else OneOf((1,)),
                       "reentrant": Flag() if sequential else OneOf((mode == "reentrant",)), "rng_seed": SEED},
                      input=Tensors(max_elements=BATCH.high * SIZE.high, max_dims=2),
                      rules=(("input [batch <= 4, features] (sizes[0])", lambda p: p["input"].dim() == 2 and (
                          BATCH.low <= p["input"].shape[0] <= BATCH.high and p["input"].shape[1] == p["sizes"][0])),))


PARAMS = {mode: _params(mode) for mode in MODES}  # what each scenario's cases store (`cases.bounds`)


def checkpoint_cases(mode: str) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        sizes = [draw(SIZE.strategy(), label=label) for label in ("features", "hidden", "outputs")]
        batch = draw(BATCH.strategy(), label="batch")
        seed = draw(SEED.strategy(), label="seed of the input")
        input = torch.randn((batch, sizes[0]), generator=torch.Generator().manual_seed(seed))
        p = draw(st.sampled_from(list(DROPOUT)), label="dropout probability")
        segments, reentrant = 1, mode == "reentrant"
        if mode == "sequential":
            segments = draw(SEGMENTS.strategy(), label="segments")
            reentrant = draw(st.booleans(), label="reentrant")
        weights = draw(SEED.strategy(), label="seed of the weights")
        rng_seed = draw(SEED.strategy(), label="seed of the dropout masks")
        how = f"{segments} segments, {'reentrant' if reentrant else 'non-reentrant'}" if mode == "sequential" else mode
        what = f"block{sizes} on {list(input.shape)}, dropout {p}, {how}"
        return scenario_case(mode, torch.float32, PARAMS[mode], {
            "input": input, "mode": mode, "sizes": sizes, "seed": weights, "p": p, "segments": segments,
            "reentrant": reentrant, "rng_seed": rng_seed}, what)

    return draw_case()


# The device's checkpointed run equals its plain run (zero differences, the same draw after backward) and its
# eval-mode checkpointed output and gradients match CPU's (the backward tolerance, norm-wise).
COMPARISON = Tolerance(categories=CATEGORIES, normwise=True,
                       outputs="differences from the plain run, of the draw after backward, eval-mode results")

test_gradient_checkpointing = scenario_suite(
    "gradient_checkpointing", capability="gradient_checkpointing", level=4, dtypes=DTYPES,
    scenarios=[Scenario(mode, PARAMS[mode], checkpointed_block, COMPARISON,
                        cases=lambda cts: checkpoint_cases(cts.item.op)) for mode in MODES])
