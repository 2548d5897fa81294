"""Seeded bugs for the streams suite (properties/suites/streams.py).

Four ways a backend's stream runtime loses ordering, each under a narrow condition:
- `default_stream_wait_skipped`: `wait_stream` issued on the device's default stream is a no-op, as in
  a backend that assumes its default stream implicitly synchronizes with every other stream (CUDA's
  legacy default stream did; a per-thread or non-blocking default stream does not). Waits between
  side streams still work.
- `synchronize_lands_newest_stream_only`: with work queued on two or more streams, the device-wide
  synchronize waits only for the stream created last, as in a runtime that keeps one "active
  stream" slot per device instead of walking all of them. With one busy stream it is right.
- `non_blocking_to_host_drops_tail`: a `non_blocking` copy of more than 32 elements leaving the
  device (`Tensor.to(cpu, non_blocking=True)`) drops its last element (left zero), as a DMA engine
  that rounds the transfer down to whole 128-byte bursts; blocking copies and small ones are right.
- `record_stream_ignored`: the caching allocator ignores `record_stream`: a freed tensor's block is handed to the
  next allocation while work queued on the recorded stream still reads it, so that work reads the new contents
  (`faulty.block_reuse`, when the stream was recorded).
"""

from __future__ import annotations

# imports inside functions: cycle: faulty.device and .streams import faulty.bugs, which imports this module for its BUGS

import torch

from torchcts.testing.faulty.bug_model import BLOCK_REUSE_STEP, STREAM_WAIT_STEP, SYNCHRONIZE_STEP, Bug, argument

TAIL_THRESHOLD = 32  # elements


def _default_stream_waits(func, args, kwargs) -> bool:
    waiting, awaited = args
    return waiting.stream_id == 0 and awaited.stream_id != 0


def _skip_wait(func, args, kwargs, value):
    return False


def _several_streams_queued(func, args, kwargs) -> bool:
    from torchcts.testing.faulty import streams

    index = args[0]
    return sum(1 for stream in streams._streams if stream.device.index == index and not stream.query()) >= 2


def _newest_only(func, args, kwargs, queued):
    return list(queued)[-1:]


def _non_blocking_off_device(func, args, kwargs) -> bool:
    from torchcts.testing.faulty.device import op_devices

    source = args[0]
    return (bool(argument(func, args, kwargs, "non_blocking", False)) and bool(op_devices()[1])
            and argument(func, args, kwargs, "device") is not None
            and isinstance(source, torch.Tensor) and source.numel() > TAIL_THRESHOLD)


def _drop_last(func, args, kwargs, result):
    flat = result.view(-1) if result.is_contiguous() else None
    if flat is None:
        result = result.contiguous()
        flat = result.view(-1)
    flat[-1] = 0
    return result


def _recorded_reader(func, args, kwargs) -> bool:
    stream, named = args
    return named


def _reuse(func, args, kwargs, value):
    return True


BUGS = (
    Bug("default_stream_wait_skipped", (STREAM_WAIT_STEP,), "the waiting stream is the device's default stream and "
        "the awaited one a side stream", "the wait is skipped: the default stream's later work reads what the side "
        "stream had not landed", _default_stream_waits, _skip_wait, suite="streams"),
    Bug("synchronize_lands_newest_stream_only", (SYNCHRONIZE_STEP,), "torch.<device>.synchronize() with work queued "
        "on two or more streams", "only the most recently created busy stream is landed; the others' results "
        "stay unlanded", _several_streams_queued, _newest_only, suite="streams"),
    Bug("non_blocking_to_host_drops_tail", ("aten._to_copy.default",), f"a non_blocking copy of more than "
        f"{TAIL_THRESHOLD} elements from the device to another device (CPU)", "the copy's last element is left zero",
        _non_blocking_off_device, _drop_last, suite="streams"),
    Bug("record_stream_ignored", (BLOCK_REUSE_STEP,), "a tensor record_stream named a stream for is freed while "
        "work queued on that stream still reads it", "the allocator hands its block to the next allocation anyway: "
        "the queued work reads the new contents", _recorded_reader, _reuse, suite="streams"),
)
