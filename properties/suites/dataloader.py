"""Data loading: batches a `DataLoader` collates and moves to the device hold CPU's values, in CPU's order.

Each scenario loads a drawn dataset (features and integer labels) with a seeded shuffle, a drawn
batch size and `drop_last`, and moves every batch to the device with `non_blocking=True`:
- `batches`: in the main process, from a `TensorDataset`;
- `dict_samples`: a list of `{"x": ..., "y": ...}` samples, collated into dicts of batches;
- `workers`: one or two worker processes, whose batches arrive in shared memory;
- `pin_memory`: batches pinned for the device (`pin_memory_device`) before the copy; needs the
  `pinned_memory` capability too. Pinning is left out when the device is CPU itself (host memory).
The oracle is the same program on CPU. Values must be CPU's bit for bit (loading computes nothing).

Limits: map-style datasets only (no IterableDataset, samplers other than the seeded shuffle,
`persistent_workers`, `prefetch_factor`); workers start with the platform's default method; a
worker that hangs fails the case after a generous timeout.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Flag, Ints, Lists, OneOf, Tensors
from torchcts.cases.scenario_case import scenario_case
from torchcts.properties.scenario_table import Exact, Scenario, scenario_suite
from torchcts.strategies import Case

# docs/properties.md's row of this suite (scripts/generate_registry_listings.py writes the table)
PROVES = ("`DataLoader` batches (main process, dict samples, worker processes, pinned) moved to the device with "
          "`non_blocking=True` equal CPU's bit for bit")

DTYPES = ("float32",)
SCENARIOS = ("batches", "dict_samples", "workers", "pin_memory")


# -- the program: torch only ------------------------------------------------------------------------------------------

def load_batches(input, labels, batch_size, drop_last, seed, workers, pin, as_dicts):
    """Load (input[i], labels[i]) from CPU copies through a DataLoader (seeded shuffle, `batch_size`, `drop_last`,
    `workers` processes, pinned for the device when `pin` and the device is not CPU; samples as dicts when
    `as_dicts`), moving each batch to input's device with non_blocking=True; returns the batches."""
    device = input.device
    data, targets = input.cpu(), labels.cpu()
    if as_dicts:
        dataset = [{"x": data[i], "y": targets[i]} for i in range(len(data))]
    else:
        dataset = torch.utils.data.TensorDataset(data, targets)
    pinned = pin and device.type != "cpu"
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, shuffle=True, drop_last=drop_last, num_workers=workers,
        generator=torch.Generator().manual_seed(seed), pin_memory=pinned,
        pin_memory_device=device.type if pinned else "", timeout=120 if workers else 0)  # a safety net
    batches = []
    for batch in loader:
        features, classes = (batch["x"], batch["y"]) if as_dicts else batch
        batches.append([features.to(device, non_blocking=True), classes.to(device, non_blocking=True)])
    return batches


PROGRAMS = {scenario: load_batches for scenario in SCENARIOS}


# -- cases ------------------------------------------------------------------------------------------------------------

SAMPLES, FEATURES = Ints(1, 12), Lists(Ints(1, 4), 0, 2)  # the dataset: samples of a shape of 0..2 dims
SEED, WORKERS = Ints(0, 2**16 - 1), Ints(1, 2)
_MOST_FEATURES = FEATURES.item.high ** FEATURES.max_size


def _params(scenario: str) -> CaseParams:
    """input: the features (samples first); args: labels (one per sample), batch size, drop_last, seed, workers, pin,
    as dicts."""
    return CaseParams(
        {"labels": Tensors(max_elements=SAMPLES.high, max_dims=1), "batch_size": SAMPLES, "drop_last": Flag(),
         "seed": SEED, "workers": WORKERS if scenario == "workers" else OneOf((0,)),
         "pin": OneOf((scenario == "pin_memory",)), "as_dicts": OneOf((scenario == "dict_samples",))},
        input=Tensors(max_elements=SAMPLES.high * _MOST_FEATURES, max_dims=1 + FEATURES.max_size),
        rules=(("input has 1..3 dimensions, one label per sample (labels of shape (samples,)), batch_size <= samples",
                lambda p: p["input"].dim() >= 1 and tuple(p["labels"].shape) == (p["input"].shape[0],)
                and p["batch_size"] <= p["input"].shape[0]),))


PARAMS = {scenario: _params(scenario) for scenario in SCENARIOS}  # what each scenario's cases store (`cases.bounds`)


def dataloader_cases(scenario: str) -> st.SearchStrategy[Case]:
    @st.composite
    def draw_case(draw) -> Case:
        samples = draw(SAMPLES.strategy(), label="samples")
        features = draw(FEATURES.strategy(), label="shape of a sample")
        batch_size = draw(st.integers(SAMPLES.low, samples), label="batch size")
        drop_last = draw(st.booleans(), label="drop_last")
        seed = draw(SEED.strategy(), label="seed")
        workers = draw(WORKERS.strategy(), label="workers") if scenario == "workers" else 0
        generator = torch.Generator().manual_seed(seed)
        input = torch.randn((samples, *features), generator=generator)
        labels = torch.randint(0, 10, (samples,), generator=generator)
        what = (f"{scenario}: {samples} samples of {features}, batch_size={batch_size}, drop_last={drop_last}, "
                f"workers={workers}")
        return scenario_case(scenario, torch.float32, PARAMS[scenario], {
            "input": input, "labels": labels, "batch_size": batch_size, "drop_last": drop_last, "seed": seed,
            "workers": workers, "pin": scenario == "pin_memory", "as_dicts": scenario == "dict_samples"}, what)

    return draw_case()


# The batches a DataLoader yields on the device hold CPU's bits: compared bit for bit.
test_dataloader = scenario_suite(
    "dataloader", capability="dataloader", level=4, dtypes=DTYPES,
    scenarios=[Scenario(scenario, PARAMS[scenario], load_batches, Exact(),
                        cases=lambda cts: dataloader_cases(cts.item.op),
                        needs="pinned_memory" if scenario == "pin_memory" else "") for scenario in SCENARIOS])
