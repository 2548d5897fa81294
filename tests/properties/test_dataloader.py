"""The dataloader suite (`torchcts.properties.suites.dataloader`): batches loaded (in the main process or by workers)
and moved to the device equal CPU's; the seeded shared-memory copy bug is caught by the workers scenario only."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.dataloader import SCENARIOS, load_batches
from torchcts.testing.faulty.suite_bugs.dataloader import BUGS

BUG = {bug.name: bug for bug in BUGS}


def test_the_suite_is_registered_with_the_dataloader_capability():
    registry.load()
    spec = registry.get("dataloader")
    assert (spec.capability, spec.level, spec.items.scenarios) == ("dataloader", 4, SCENARIOS)
    assert spec.items.needs == {"pin_memory": "pinned_memory"}


def test_the_program_loads_every_sample_once_in_a_seeded_order():
    input, labels = torch.arange(7.0)[:, None], torch.arange(7)
    batches = load_batches(input, labels, 3, False, 5, 0, False, True)
    again = load_batches(input, labels, 3, False, 5, 0, False, False)
    assert [len(b[1]) for b in batches] == [3, 3, 1]
    assert sorted(torch.cat([b[1] for b in batches]).tolist()) == list(range(7))
    assert all(torch.equal(x, y) for b, c in zip(batches, again) for x, y in zip(b, c))  # dicts or tuples alike
    assert [len(b[1]) for b in load_batches(input, labels, 3, True, 5, 0, False, False)] == [3, 3]


@pytest.mark.parametrize("scenario", ["batches", "workers"])
def test_a_scenario_passes_on_cpu_and_clean_faulty(run_suite, scenario):
    assert run_suite("dataloader", scenario, max_examples=3)["outcome"] is Outcome.PASSED
    assert run_suite("dataloader", scenario, device="faulty", max_examples=3)["outcome"] is Outcome.PASSED


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_the_seeded_bug_is_caught_with_workers_only(run_suite, tmp_path):
    bug = ("shared_memory_copy_drops_tail",)
    record = run_suite("dataloader", "workers", device="faulty", bugs=bug, max_examples=10, corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED and record["counterexample"]["path"], record
    assert run_suite("dataloader", "batches", device="faulty", bugs=bug, max_examples=5)["outcome"] is Outcome.PASSED


def test_the_bug_fires_only_on_shared_memory():
    bug, copy = BUG["shared_memory_copy_drops_tail"], torch.ops.aten._to_copy.default
    plain = torch.ones(2, 3)
    assert not bug.fires(copy, (plain,), {})
    assert bug.fires(copy, (plain.clone().share_memory_(),), {})
    assert bug.perturb(copy, (plain,), {}, plain.t()).tolist() == [[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]]
