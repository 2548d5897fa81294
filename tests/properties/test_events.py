"""The events suite (`torchcts.properties.suites.events`): events complete, order streams and time work in
milliseconds on the clean faulty device and (where CPU has them) on CPU; each seeded event bug is caught, and fires
only under its condition."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.events import SCENARIOS, query_after_synchronize, wait_event
from torchcts.testing.faulty.bug_model import ELAPSED_STEP, EVENT_QUERY_STEP
from torchcts.testing.faulty.suite_bugs.events import BUGS

BUG = {bug.name: bug for bug in BUGS}
ON_CPU = {"query_after_synchronize": Outcome.PASSED, "query_polling": Outcome.PASSED, "wait_event": Outcome.PASSED,
          "elapsed_time": Outcome.RUNTIME_UNAVAILABLE, "timing_disabled": Outcome.RUNTIME_UNAVAILABLE}
CAUGHT_BY = {"event_query_early_without_timing": "query_polling",
             "elapsed_time_in_microseconds_on_side_streams": "elapsed_time",
             "elapsed_time_swapped_across_streams": "elapsed_time",
             "default_stream_wait_skipped": "wait_event"}  # a streams bug, reached through Event.wait too


def test_the_suite_is_registered_with_the_events_capability():
    registry.load()
    spec = registry.get("events")
    assert (spec.capability, spec.level, spec.items.scenarios) == ("events", 6, SCENARIOS)


def test_the_programs_hold_on_cpu():
    assert all(o.holds for o in query_after_synchronize("cpu", 2, 3, 1, ["sin", "matmul"], True, False))
    assert all(o.holds for o in wait_event("cpu", 2, 3, 1, ["tanh"], ["add_"], True, False))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_on_cpu_and_clean_faulty(run_suite, scenario):
    assert run_suite("events", scenario, max_examples=4)["outcome"] is ON_CPU[scenario]
    assert run_suite("events", scenario, device="faulty", max_examples=6)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_each_seeded_bug_is_caught(run_suite, bug):
    record = run_suite("events", CAUGHT_BY[bug], device="faulty", bugs=(bug,), max_examples=12)
    assert record["outcome"] is Outcome.FAILED, record


def events_on(streams, timing=False):
    """Events recorded (and landed) on each of `streams`."""
    found = []
    for stream in streams:
        event = torch.faulty.Event(enable_timing=timing)
        event.record(stream)
        found.append(event)
    return found


def test_the_query_bug_fires_only_for_untimed_events_on_side_streams():
    import torchcts.testing.faulty  # noqa: F401

    bug, side, default = BUG["event_query_early_without_timing"], torch.faulty.Stream(), torch.faulty.default_stream()
    untimed_side, untimed_default = events_on([side, default])
    (timed_side,) = events_on([side], timing=True)
    assert bug.fires(EVENT_QUERY_STEP, (untimed_side,), {})
    assert not bug.fires(EVENT_QUERY_STEP, (untimed_default,), {})
    assert not bug.fires(EVENT_QUERY_STEP, (timed_side,), {})


def test_the_elapsed_bugs_fire_only_on_their_streams():
    import torchcts.testing.faulty  # noqa: F401

    side, other, default = torch.faulty.Stream(), torch.faulty.Stream(), torch.faulty.default_stream()
    a, b, c, d = events_on([side, side, other, default], timing=True)
    micro, swapped = BUG["elapsed_time_in_microseconds_on_side_streams"], BUG["elapsed_time_swapped_across_streams"]
    assert micro.fires(ELAPSED_STEP, (a, b), {}) and micro.fires(ELAPSED_STEP, (a, c), {})
    assert not micro.fires(ELAPSED_STEP, (a, d), {}) and not micro.fires(ELAPSED_STEP, (d, d), {})
    assert swapped.fires(ELAPSED_STEP, (a, c), {}) and swapped.fires(ELAPSED_STEP, (d, a), {})
    assert not swapped.fires(ELAPSED_STEP, (a, b), {}) and not swapped.fires(ELAPSED_STEP, (d, d), {})
    assert micro.perturb(ELAPSED_STEP, (a, b), {}, 2.5) == 2500.0
    assert swapped.perturb(ELAPSED_STEP, (a, c), {}, 2.5) == -2.5
