"""Determinism: under `torch.use_deterministic_algorithms(True)`, accumulating ops repeat bit for bit on the device.

Each scenario is an op whose GPU kernels accumulate with atomics (the order of a sum over repeated
indices varies run to run) and which torch documents as having a deterministic implementation:
`index_add_`, `scatter_add_`, `scatter_reduce_` (sum), `index_put_` and `put_` with accumulation,
`bincount` with weights, and an embedding's backward. The program turns deterministic algorithms on
(restoring the previous setting after), runs the op three times on fresh copies and returns its
result and whether all three runs are bitwise equal; indices are drawn with repeats, so sums over
the same slot happen in some order. The oracle is the same program on CPU (deterministic by
construction): the flag must be true, and the result must match CPU within the dtype's tolerance.

Limits: float32; three repeats (a kernel that is nondeterministic rarely can pass); whether ops
without a deterministic implementation raise (CUDA's policy) is not checked, since that policy is
each backend's own.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints, OneOf, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Scenario, Tolerance, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("under `use_deterministic_algorithms(True)`, accumulating ops (index_add, scatter_add, index_put/put with "
          "accumulate, bincount, embedding backward) repeat bit for bit and match CPU")

DTYPES = ("float32",)
OPS = ("index_add", "scatter_add", "scatter_reduce_sum", "index_put_accumulate", "put_accumulate", "bincount",
       "embedding_backward")


# -- the program: torch only ------------------------------------------------------------------------------------------

def repeated_deterministic(input, index, source, op):
    """`op` over `input` [n, d] at `index` [k] (repeats allowed) with `source` [k, d], run three times with
    deterministic algorithms on; returns [the first result, whether all runs are bitwise equal]."""
    enabled, warn_only = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()

    def once():
        if op == "index_add":
            return input.clone().index_add_(0, index, source)
        if op == "scatter_add":
            return input.clone().scatter_add_(0, index[:, None].expand_as(source), source)
        if op == "scatter_reduce_sum":
            return input.clone().scatter_reduce_(0, index[:, None].expand_as(source), source, "sum")
        if op == "index_put_accumulate":
            return input.clone().index_put_((index,), source, accumulate=True)
        if op == "put_accumulate":
            flat = index * input.shape[1] + torch.arange(index.numel(), device=index.device) % input.shape[1]
            return input.clone().put_(flat, source[:, 0].contiguous(), accumulate=True)
        if op == "bincount":
            return torch.bincount(index, weights=source[:, 0], minlength=input.shape[0])
        weight = input.clone().requires_grad_(True)  # embedding_backward
        torch.nn.functional.embedding(index, weight).backward(source)
        return weight.grad

    torch.use_deterministic_algorithms(True)
    try:
        runs = [once() for _ in range(3)]
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
    return [runs[0], all(torch.equal(runs[0], other) for other in runs[1:])]


PROGRAMS = {op: repeated_deterministic for op in OPS}


# -- cases ------------------------------------------------------------------------------------------------------------

ROWS, WIDTH, INDICES, SEED = Ints(1, 6), Ints(1, 4), 16, Ints(0, 2**16 - 1)  # input [rows, width], index [<= 16]


def _consistent(p) -> bool:
    """input [rows, width]; index: 1-D int64 values in 0..rows-1 (bincount allocates up to its largest value);
    source [len(index), width]."""
    input, index, source = p["input"], p["index"], p["source"]
    return (input.dim() == 2 and ROWS.low <= input.shape[0] <= ROWS.high and WIDTH.low <= input.shape[1] <= WIDTH.high
            and index.dtype == torch.int64 and index.dim() == 1 and index.numel() >= 1
            and 0 <= int(index.min()) and int(index.max()) < input.shape[0]
            and tuple(source.shape) == (index.numel(), input.shape[1]))


PARAMS = {op: CaseParams({"index": Tensors(max_elements=INDICES, max_dims=1, dtypes=("int64",)),
                          "source": Tensors(max_elements=INDICES * WIDTH.high, max_dims=2), "op": OneOf((op,))},
                         input=Tensors(max_elements=ROWS.high * WIDTH.high, max_dims=2),
                         rules=(("input [rows, width], index 1-D int64 in 0..rows-1, source [len(index), width]",
                                 _consistent),))
          for op in OPS}  # what each scenario's cases store (`cases.bounds`): the draws below go through these bounds


def deterministic_cases(op: str) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        rows, width = draw(ROWS.strategy(), label="rows"), draw(WIDTH.strategy(), label="width")
        index = draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=INDICES), label="index")
        seeds = draw(st.tuples(SEED.strategy(), SEED.strategy()), label="seeds")
        input = torch.randn((rows, width), generator=torch.Generator().manual_seed(seeds[0]))
        source = torch.randn((len(index), width), generator=torch.Generator().manual_seed(seeds[1]))
        repeats = len(index) - len(set(index))
        what = f"{op}: [{rows}, {width}] at {len(index)} indices ({repeats} repeated)"
        return scenario_case(op, torch.float32, PARAMS[op], {
            "input": input, "index": torch.tensor(index, dtype=torch.int64), "source": source, "op": op}, what)

    return draw_case()


# The device's three runs are bitwise equal (CPU's flag is true) and its result matches CPU's (the op's tolerance).
COMPARISON = Tolerance(outputs="result, runs bitwise equal")

test_deterministic = scenario_suite(
    "deterministic", capability="deterministic", level=3, dtypes=DTYPES,
    scenarios=[Scenario(op, PARAMS[op], repeated_deterministic, COMPARISON,
                        cases=lambda cts: deterministic_cases(cts.item.op)) for op in OPS])
