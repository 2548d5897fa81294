"""The pinned_memory suite (`torchcts.properties.suites.pinned_memory`): pinned copies hold their source's values and
are pinned (views too), non_blocking copies through pinned memory land, DataLoader pins batches; CPU without an
accelerator is runtime_unavailable; each seeded pinning bug is caught, and fires only under its condition."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.pinned_memory import SCENARIOS, view_of
from torchcts.testing.faulty.bug_model import IS_PINNED_STEP, PIN_STEP
from torchcts.testing.faulty.suite_bugs.pinned_memory import BUGS

BUG = {bug.name: bug for bug in BUGS}
CAUGHT_BY = {"pin_memory_pageable_above_64kib": "pin_copy", "pin_memory_non_contiguous_as_contiguous": "pin_views",
             "is_pinned_false_past_allocation_start": "pin_views",
             "non_blocking_from_pinned_reads_storage_start": "to_device"}


def test_the_suite_is_registered_with_the_pinned_memory_capability():
    registry.load()
    spec = registry.get("pinned_memory")
    assert (spec.capability, spec.level, spec.items.scenarios) == ("pinned_memory", 6, SCENARIOS)


def test_views_cover_offsets_transposes_and_strides():
    base = torch.arange(12.0).view(3, 4)
    assert view_of(base, "offset", 5).storage_offset() == 5 and not view_of(base, "transpose", 0).is_contiguous()
    assert view_of(base, "strided", 0).tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_on_cpu_and_clean_faulty(run_suite, scenario):
    cpu = run_suite("pinned_memory", scenario, max_examples=3)
    # without an accelerator torch cannot pin; once one is registered (the faulty device, in this process), CPU pins
    assert cpu["outcome"] in (Outcome.PASSED, Outcome.RUNTIME_UNAVAILABLE), cpu
    if cpu["outcome"] is Outcome.RUNTIME_UNAVAILABLE:
        assert "needs an accelerator" in cpu["reason"]
    assert run_suite("pinned_memory", scenario, device="faulty", max_examples=6)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_each_seeded_bug_is_caught(run_suite, bug):
    record = run_suite("pinned_memory", CAUGHT_BY[bug], device="faulty", bugs=(bug,), max_examples=12)
    assert record["outcome"] is Outcome.FAILED, record
    assert run_suite("pinned_memory", "to_host", device="faulty", bugs=(bug,), max_examples=4)["outcome"] \
        is Outcome.PASSED


def test_the_pin_bugs_fire_only_on_large_or_non_contiguous_sources():
    import torchcts.testing.faulty  # noqa: F401

    large, strided = BUG["pin_memory_pageable_above_64kib"], BUG["pin_memory_non_contiguous_as_contiguous"]
    assert large.fires(PIN_STEP, (torch.zeros(16384),), {}) and not large.fires(PIN_STEP, (torch.zeros(16383),), {})
    base = torch.arange(12.0).view(3, 4)
    assert strided.fires(PIN_STEP, (base.t(),), {}) and not strided.fires(PIN_STEP, (base[1:],), {})
    assert not large.perturb(PIN_STEP, (base,), {}, base.pin_memory()).is_pinned()


def test_the_is_pinned_bug_fires_only_past_the_storage_start():
    bug, base = BUG["is_pinned_false_past_allocation_start"], torch.arange(6.0)
    assert bug.fires(IS_PINNED_STEP, (base[1:],), {}) and not bug.fires(IS_PINNED_STEP, (base.view(2, 3).t(),), {})


def test_the_copy_bug_fires_only_for_non_blocking_copies_from_pinned_offsets():
    import torchcts.testing.faulty  # noqa: F401

    bug, copy, to_copy = BUG["non_blocking_from_pinned_reads_storage_start"], torch.ops.aten.copy_.default, \
        torch.ops.aten._to_copy.default
    pinned, pageable, out = torch.arange(6.0).pin_memory(), torch.arange(6.0), torch.empty(5)
    assert bug.fires(to_copy, (pinned[1:],), {"non_blocking": True})
    assert bug.fires(copy, (out, pinned[1:], True), {})
    assert not bug.fires(to_copy, (pinned[1:],), {}) and not bug.fires(to_copy, (pinned,), {"non_blocking": True})
    assert not bug.fires(to_copy, (pageable[1:],), {"non_blocking": True})
    assert bug.perturb(copy, (out, pinned[1:], True), {}, out).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
