"""The faulty device's runtime (`torch.faulty`): devices and guards, generators, memory, streams, events, pinning.

These facilities are what the runtime suites prove against, so each must behave as a real device's
does: a suite passing on the clean device and failing with a seeded bug is only evidence if the clean
device is right.
"""

from __future__ import annotations

import gc

import pytest
import torch

from torchcts.testing import faulty  # noqa: F401 - registers the device
from torchcts.testing.faulty import device, memory, ordinals, pinned, runtime

F = torch.faulty


def test_two_devices_a_current_one_and_a_guard_that_restores_it():
    assert F.device_count() == 2 and F.current_device() == 0
    assert torch.accelerator.device_count() == 2
    with F.device(1):
        assert F.current_device() == 1 and torch.zeros(2, device="faulty").device == torch.device("faulty", 1)
    assert F.current_device() == 0 and torch.zeros(2, device="faulty").device == torch.device("faulty", 0)
    with pytest.raises(RuntimeError, match="invalid device ordinal 2"):
        F.set_device(2)


def test_results_stay_on_their_device_and_mixed_devices_raise_as_cuda_does():
    one = torch.arange(4.0, device="faulty:1")
    assert (one * 2).device.index == 1 and one.to("faulty:0").device.index == 0
    assert torch.equal(one.to("faulty:0").cpu(), torch.arange(4.0))
    with pytest.raises(RuntimeError, match="same device, but found at least two devices, faulty:0 and faulty:1"):
        torch.ones(4, device="faulty:0") + one
    target = torch.zeros(4, device="faulty:0")
    target.copy_(one)  # a copy across devices is no mixed-device op
    assert torch.equal(target.cpu(), torch.arange(4.0)) and target.device.index == 0


def test_each_device_has_its_own_generator_seeded_as_cpu_is():
    torch.manual_seed(11)  # seeds CPU and every faulty device
    on_zero, on_one = torch.rand(5, device="faulty:0").cpu(), torch.rand(5, device="faulty:1").cpu()
    cpu = torch.rand(5)  # CPU's own stream did not move for the device's draws
    assert torch.equal(on_zero, on_one) and torch.equal(on_zero, cpu)
    state = F.get_rng_state(0)
    first = torch.randn(3, device="faulty").cpu()
    F.set_rng_state(state, 0)
    assert torch.equal(torch.randn(3, device="faulty").cpu(), first)
    F.manual_seed(5)  # the current device only
    with F.device(1):
        assert F.initial_seed() == 11
    assert F.initial_seed() == 5


def test_memory_statistics_follow_live_storages_and_views_count_once():
    gc.collect()
    F.reset_peak_memory_stats()
    before = F.memory_allocated()
    x = torch.empty(1000, device="faulty")
    views = [x[1:], x.view(10, 100).t()]
    holding = F.memory_allocated()
    assert holding >= before + 4000 - 64 and F.max_memory_allocated() >= holding  # (another test's leftovers may go)
    del x
    gc.collect()
    assert F.memory_allocated() == holding  # the views keep the storage alive
    del views
    gc.collect()
    assert F.memory_allocated() == holding - 4000 and F.max_memory_allocated() >= holding
    assert F.memory_reserved() >= holding
    F.empty_cache()
    assert F.memory_reserved() == F.memory_allocated()


def test_an_allocation_past_capacity_raises_out_of_memory_and_leaves_the_device_usable():
    before = F.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError, match="faulty:0 out of memory"):
        torch.empty(memory.capacity(0) // 4 + 1, device="faulty")  # float32: 4 bytes each
    with pytest.raises(torch.OutOfMemoryError):
        torch.ones(2**40, dtype=torch.uint8, device="faulty")
    assert F.memory_allocated() == before
    assert torch.equal((torch.ones(3, device="faulty") * 2).cpu(), torch.full((3,), 2.0))
    assert F.get_device_properties(0).total_memory == memory.capacity(0)


def test_side_stream_work_lands_only_when_ordered():
    source = torch.arange(4.0, device="faulty")
    side = F.Stream()
    with F.stream(side):
        assert F.current_stream() == side
        doubled = source * 2
    assert doubled.cpu().isnan().all() and not side.query()  # not landed: reading it unordered is a race
    with F.stream(side):
        source.add_(10)  # the stream's next op: its previous one lands first, this one waits
    assert torch.equal(doubled.cpu(), torch.arange(4.0) * 2) and torch.equal(source.cpu(), torch.arange(4.0))
    F.current_stream().wait_stream(side)
    assert side.query() and torch.equal(source.cpu(), torch.arange(4.0) + 10)


def test_integer_results_read_as_their_complement_and_synchronize_lands_every_stream():
    side = F.Stream()
    with F.stream(side):
        counts = torch.arange(3, device="faulty") + 1
    assert counts.cpu().tolist() == [-2, -3, -4]
    F.synchronize()
    assert counts.cpu().tolist() == [1, 2, 3]


def test_events_complete_in_stream_order_and_time_in_milliseconds():
    side = F.Stream()
    start, end = F.Event(enable_timing=True), F.Event(enable_timing=True)
    with F.stream(side):
        start.record()
        result = torch.ones(8, device="faulty") + 1
        end.record()
    assert start.query() and not end.query()  # start was recorded on an idle stream
    with pytest.raises(RuntimeError, match="completed"):
        start.elapsed_time(end)
    F.current_stream().wait_event(end)
    assert end.query() and torch.equal(result.cpu(), torch.full((8,), 2.0))
    assert 0.0 <= start.elapsed_time(end) < 60_000.0
    with pytest.raises(RuntimeError, match="enable_timing"):
        F.Event().elapsed_time(end)


def test_record_stream_takes_a_faulty_stream():
    side = F.Stream(1)
    tensor = torch.ones(2, device="faulty:1")
    tensor.record_stream(side)
    assert side.device == torch.device("faulty", 1) and side.stream_id > 0


def test_pinned_copies_are_known_to_the_device_with_their_views():
    source = torch.arange(12.0).view(3, 4).t()
    pinned_copy = source.pin_memory()
    assert pinned_copy.is_pinned() and pinned_copy[1:].is_pinned() and not source.is_pinned()
    assert torch.equal(pinned_copy, source) and pinned_copy.is_contiguous()
    assert pinned.lies_in_pinned_memory(pinned_copy)
    with pytest.raises(NotImplementedError, match="getPinnedMemoryAllocator"):  # pinned.py's documented limit
        torch.empty(4, pin_memory=True)
    moved = pinned_copy.to("faulty", non_blocking=True)
    assert torch.equal(moved.cpu(), source)


def test_bugs_see_which_devices_an_op_runs_on():
    seen = []
    original = device.bugs.after

    def spy(func, args, kwargs, result):
        if str(func) == "aten._to_copy.default":
            seen.append(device.op_devices())
        return original(func, args, kwargs, result)

    device.bugs.after = spy
    try:
        torch.ones(2, device="faulty:0").to("faulty:1")
    finally:
        device.bugs.after = original
    assert seen == [(1, frozenset({0}))]


def test_the_device_count_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(ordinals.DEVICES_ENV, "3")
    assert runtime.count() == 3
    monkeypatch.setenv(ordinals.DEVICES_ENV, "many")
    assert runtime.count() == ordinals.DEFAULT_DEVICES


def test_checkpointing_restores_the_device_generator_after_its_recompute():
    net = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5)).to("faulty")
    x = torch.ones(2, 3, device="faulty", requires_grad=True)
    torch.manual_seed(0)
    out = torch.utils.checkpoint.checkpoint(net, x, use_reentrant=True)
    after_forward = F.get_rng_state()
    out.sum().backward()  # recomputes the dropout with the forward's state, then puts the device's state back
    assert torch.equal(F.get_rng_state(), after_forward)
