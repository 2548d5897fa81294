"""Serialization: torch.save / torch.load of device tensors keeps their values, layout and storage sharing.

Each scenario saves device tensors to bytes and loads them back, on the device and on CPU alike:
- `views`: a base tensor saved with two views of it (a strided slice at an offset, a transposed
  window), with `weights_only` drawn; the loaded views must keep values, strides and offsets, and
  still share the loaded base's storage (a write through one view reaches the base).
- `state_dict`: a module's state dict (a Linear and a buffer of the dtype under test) saved, loaded
  with `weights_only=True` into a fresh module on the device; its tensors and its output must be
  CPU's.
- `to_cpu`: bytes saved from the device, loaded with `map_location="cpu"`: CPU tensors holding the
  device's values, views still sharing.
- `from_cpu`: bytes saved from CPU, loaded with `map_location=<the device>`: device tensors.
The oracle is the same program on CPU; every tensor must hold CPU's bits.

Limits: in-memory buffers (no files, no mmap), the default zip format; no sparse, quantized or
nested tensors (their suites); a checkpoint from another torch version is not tried.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Flag, Ints, OneOf, Tensors, Tuples
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Exact, Scenario, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("`torch.save`/`torch.load` of views (storage sharing, offsets, strides), state dicts with "
          "`weights_only=True`, `map_location` to CPU and back, bit for bit")

DTYPES = ("float32", "float16", "bfloat16", "complex64", "int64", "bool")
SCENARIOS = ("views", "state_dict", "to_cpu", "from_cpu")


# -- the program: torch only ------------------------------------------------------------------------------------------

def save_and_load(input, scenario, start, step, length, window, weights_only):
    """Save tensors of `input`'s device (1-D base `input`; a slice `input[start::step][:length]`; a window of
    `window` = [offset, rows, columns] viewed [rows, columns] and transposed) and load them back as `scenario`
    says; returns what the loaded tensors hold and whether their views still share the base's storage."""
    offset, rows, columns = window
    buffer = torch.serialization.io.BytesIO()  # io reached through torch: a program imports nothing

    def views_of(base):
        return base[start::step][:length], base[offset:offset + rows * columns].view(rows, columns).t()

    def observed(base, view, transposed):
        shape = [view.clone(), transposed.clone(), view.stride(), view.storage_offset(), transposed.stride(),
                 transposed.storage_offset()]
        view.copy_(view.flip(0))  # through the loaded view: reaches the loaded base only if they share storage
        return shape + [base]

    if scenario == "views":
        torch.save([input, *views_of(input)], buffer)
        buffer.seek(0)
        base, view, transposed = torch.load(buffer, weights_only=weights_only)
        return observed(base, view, transposed) + [base.device == input.device]
    if scenario == "state_dict":
        def module():
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(length)
                net = torch.nn.Linear(rows, columns)
            net.register_buffer("table", torch.zeros_like(input, device="cpu"))
            return net.to(input.device)

        saved = module()
        saved.table.copy_(input)
        with torch.no_grad():
            saved.weight.mul_(step)
        torch.save(saved.state_dict(), buffer)
        buffer.seek(0)
        loaded = module()
        loaded.load_state_dict(torch.load(buffer, weights_only=True))
        features = torch.ones(1, rows, device=input.device)
        return [*loaded.state_dict().values(), loaded(features).detach()]
    if scenario == "to_cpu":
        torch.save([input, *views_of(input)], buffer)
        buffer.seek(0)
        base, view, transposed = torch.load(buffer, map_location="cpu", weights_only=weights_only)
        return observed(base, view, transposed) + [base.device.type == "cpu", view.device.type == "cpu"]
    # from_cpu
    torch.save([input.cpu(), *views_of(input.cpu())], buffer)
    buffer.seek(0)
    base, view, transposed = torch.load(buffer, map_location=input.device, weights_only=weights_only)
    return observed(base, view, transposed) + [base.device == input.device, view.device == input.device]


PROGRAMS = {scenario: save_and_load for scenario in SCENARIOS}


# -- cases ------------------------------------------------------------------------------------------------------------

BASE, STEP, SEED = Ints(1, 24), Ints(1, 3), Ints(0, 2**16 - 1)  # the base's length, the slice's step


def _fits(p) -> bool:
    """The slice and the window the stored values name lie within the stored 1-D base (as the draws make them)."""
    n, (offset, rows, columns) = p["input"].numel(), p["window"]
    return (p["input"].dim() == 1 and p["start"] < n and p["length"] <= len(range(p["start"], n, p["step"]))
            and offset + rows * columns <= n)


def _params(scenario: str) -> CaseParams:
    """input: the 1-D base; args: the scenario, the slice's start, step and length, the window [offset, rows,
    columns], weights_only."""
    index, count = Ints(0, BASE.high - 1), BASE
    return CaseParams({"scenario": OneOf((scenario,)), "start": index, "step": STEP, "length": count,
                       "window": Tuples((index, count, count)), "weights_only": Flag()},
                      input=Tensors(max_elements=BASE.high, max_dims=1),
                      rules=(("the slice and the window lie within the 1-D base", _fits),))


PARAMS = {scenario: _params(scenario) for scenario in SCENARIOS}  # what each scenario's cases store (`cases.bounds`)


def _values(n: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=generator).bool()
    if not (dtype.is_floating_point or dtype.is_complex):
        return torch.randint(-1000, 1000, (n,), generator=generator, dtype=dtype)
    return torch.randn(n, generator=generator, dtype=torch.complex64 if dtype.is_complex else torch.float32).to(dtype)


def serialization_cases(scenario: str, dtype: torch.dtype) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        n = draw(BASE.strategy(), label="length of the base")
        start = draw(st.integers(0, n - 1), label="start of the slice")
        step = draw(STEP.strategy(), label="step of the slice")
        length = draw(st.integers(1, len(range(start, n, step))), label="length of the slice")
        rows = draw(st.integers(1, n), label="rows of the window")
        columns = draw(st.integers(1, n // rows), label="columns of the window")
        offset = draw(st.integers(0, n - rows * columns), label="offset of the window")
        weights_only = draw(st.booleans(), label="weights_only")
        seed = draw(SEED.strategy(), label="seed of the values")
        what = (f"{scenario}: base [{n}], slice [{start}::{step}][:{length}], window at {offset} viewed "
                f"[{rows}, {columns}].t(), weights_only={weights_only}")
        return scenario_case(scenario, dtype, PARAMS[scenario], {
            "input": _values(n, dtype, seed), "scenario": scenario, "start": start, "step": step, "length": length,
            "window": [offset, rows, columns], "weights_only": weights_only}, what)

    return draw_case()


# A tensor saved and loaded back holds the device's bits, strides, sharing and device: compared bit for bit.
test_serialization = scenario_suite(
    "serialization", capability="serialization", level=3, dtypes=DTYPES,
    scenarios=[Scenario(scenario, PARAMS[scenario], save_and_load, Exact(),
                        cases=lambda cts: serialization_cases(cts.item.op, cts.dtype)) for scenario in SCENARIOS])
