"""The streams suite (`torchcts.properties.suites.streams`): ordered programs on side streams give CPU's values on CPU
and the clean faulty device (whose side-stream results read NaN until ordered); each seeded stream bug is caught,
and fires only under its condition."""

from __future__ import annotations

import pytest
import torch

from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.stream_programs import chain, inputs
from torchcts.properties.suites.streams import SCENARIOS, stream_order, wait_stream
from torchcts.testing.faulty.bug_model import STREAM_WAIT_STEP, SYNCHRONIZE_STEP
from torchcts.testing.faulty.suite_bugs.streams import BUGS

BUG = {bug.name: bug for bug in BUGS}
ON_CPU = {"stream_order": Outcome.PASSED, "stream_synchronize": Outcome.RUNTIME_UNAVAILABLE,
          "wait_stream": Outcome.PASSED, "synchronize_all": Outcome.PASSED,
          "record_stream": Outcome.RUNTIME_UNAVAILABLE, "non_blocking_copies": Outcome.PASSED}
CAUGHT_BY = {"default_stream_wait_skipped": "wait_stream", "synchronize_lands_newest_stream_only": "synchronize_all",
             "non_blocking_to_host_drops_tail": "non_blocking_copies", "record_stream_ignored": "record_stream"}


def test_the_suite_is_registered_with_the_streams_capability():
    registry.load()
    spec = registry.get("streams")
    assert (spec.capability, spec.level, spec.items.scenarios) == ("streams", 6, SCENARIOS)


def test_the_programs_hold_on_cpu():
    x, w = inputs(3, 4, 7)
    assert all(o.holds for o in stream_order("cpu", 3, 4, 7, ["matmul", "add_", "sin"], False))
    assert all(o.holds for o in wait_stream("cpu", 3, 4, 7, ["tanh"], ["matmul"], 2, 1, 0))
    assert torch.allclose(chain(x, w, ["affine", "add_"]), x * 0.75 + 0.75)


def test_an_unordered_read_on_the_faulty_device_sees_the_sentinel():
    """The property needs its ordering calls: without them the faulty device's side-stream result is unlanded."""
    import torchcts.testing.faulty  # noqa: F401

    side = torch.faulty.Stream()
    with torch.faulty.stream(side):
        out = torch.ones(3, device="faulty") * 2
    assert torch.isnan(out.cpu()).all()
    torch.faulty.synchronize()
    assert out.cpu().tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_scenario_on_cpu_and_clean_faulty(run_suite, scenario):
    assert run_suite("streams", scenario, max_examples=4)["outcome"] is ON_CPU[scenario]
    assert run_suite("streams", scenario, device="faulty", max_examples=6)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug", sorted(CAUGHT_BY))
def test_each_seeded_bug_is_caught(run_suite, bug):
    record = run_suite("streams", CAUGHT_BY[bug], device="faulty", bugs=(bug,), max_examples=12)
    assert record["outcome"] is Outcome.FAILED, record
    assert run_suite("streams", "stream_order", device="faulty", bugs=(bug,), max_examples=4)["outcome"] \
        is Outcome.PASSED


def test_the_wait_bug_fires_only_when_the_default_stream_waits_on_a_side_stream():
    import torchcts.testing.faulty  # noqa: F401

    bug, default, side, other = BUG["default_stream_wait_skipped"], torch.faulty.default_stream(), \
        torch.faulty.Stream(), torch.faulty.Stream()
    assert bug.fires(STREAM_WAIT_STEP, (default, side), {})
    assert not bug.fires(STREAM_WAIT_STEP, (side, default), {}) and not bug.fires(STREAM_WAIT_STEP, (other, side), {})


def test_the_synchronize_bug_fires_only_with_two_busy_streams():
    import torchcts.testing.faulty  # noqa: F401

    bug = BUG["synchronize_lands_newest_stream_only"]
    torch.faulty.synchronize(0)
    first, second = torch.faulty.Stream(0), torch.faulty.Stream(0)
    with torch.faulty.stream(first):
        torch.ones(2, device="faulty:0") + 1
    assert not bug.fires(SYNCHRONIZE_STEP, (0, torch.faulty.current_stream(0)), {})
    with torch.faulty.stream(second):
        torch.ones(2, device="faulty:0") + 1
    assert bug.fires(SYNCHRONIZE_STEP, (0, torch.faulty.current_stream(0)), {})
    assert bug.perturb(SYNCHRONIZE_STEP, (), {}, [first, second]) == [second]
    torch.faulty.synchronize(0)


def test_the_tail_bug_fires_only_on_large_non_blocking_copies_off_the_device():
    from torchcts.testing import faulty

    values = torch.arange(1.0, 41.0)
    on_device = values.to("faulty")
    faulty.enable_bugs("non_blocking_to_host_drops_tail")
    try:
        large = on_device.to("cpu", non_blocking=True)
        blocking, small = on_device.to("cpu"), on_device[:32].to("cpu", non_blocking=True)
        onto_device = values.to("faulty", non_blocking=True).cpu()
    finally:
        faulty.disable_bugs()
    assert large[-1].item() == 0.0 and torch.equal(large[:-1], values[:-1])
    assert torch.equal(blocking, values) and torch.equal(small, values[:32]) and torch.equal(onto_device, values)


# the seeded bugs that break ordering: each leaves work unlanded that the program then reads
ORDERING_BUGS = {"default_stream_wait_skipped": ("streams", "wait_stream"),
                 "record_stream_ignored": ("streams", "record_stream"),
                 "synchronize_lands_newest_stream_only": ("streams", "synchronize_all"),
                 "event_query_early_without_timing": ("events", "query_polling")}


@pytest.mark.parametrize("bug", sorted(ORDERING_BUGS))
def test_an_ordering_bug_is_missed_on_a_synchronous_device_and_found_on_the_asynchronous_one(run_suite, bug):
    """The suites catch ordering bugs because the device is asynchronous: with every stream landing its work at once
    (streams.synchronous, a backend whose streams run inline) the same bug changes nothing the suite can see."""
    from torchcts.testing.faulty import streams

    suite, scenario = ORDERING_BUGS[bug]
    with streams.synchronous():
        assert run_suite(suite, scenario, device="faulty", bugs=(bug,), max_examples=12)["outcome"] is Outcome.PASSED
    assert run_suite(suite, scenario, device="faulty", bugs=(bug,), max_examples=12)["outcome"] is Outcome.FAILED


def test_a_freed_block_is_held_for_the_stream_that_reads_it_and_the_bug_hands_it_out():
    """Work queued on stream B reads x; x is freed and memory allocated again before B ran: the clean device holds the
    block for B (record_stream named it), record_stream_ignored hands it out and B's result reads as the sentinel."""
    from torchcts.testing import faulty

    def run(bug_on: bool) -> torch.Tensor:
        side = torch.faulty.Stream()
        x = torch.full((64,), 3.0, device="faulty")
        side.wait_stream(torch.faulty.current_stream())
        with torch.faulty.stream(side):
            out = x * 2
        x.record_stream(side)
        if bug_on:
            faulty.enable_bugs("record_stream_ignored")
        try:
            del x
            torch.full((64,), -7.0, device="faulty")  # the next allocation: the freed block is settled here
            torch.faulty.synchronize()
        finally:
            faulty.disable_bugs()
        return out.cpu()

    assert run(False).tolist() == [6.0] * 64
    assert torch.isnan(run(True)).all()
    bug = BUG["record_stream_ignored"]
    assert bug.fires(None, (None, True), {}) and not bug.fires(None, (None, False), {})
