"""Streams and events of the faulty device: work on a side stream lands when something orders it, as on a GPU.

The device runs every op at once on CPU, but a result computed on a side stream (not the device's
default stream) is *landed* later: its outputs hold a sentinel (NaN for floating dtypes, the bitwise
complement of the result for integers and bools) until the stream is flushed, and an in-place op's
target keeps its old values until then: a stream runs one op ahead of what others can see. A stream
is flushed, in order, by the things that order work on a real device: its own next op (which then
waits in its place), `Stream.synchronize`, `torch.faulty.synchronize()`,
another stream's `wait_stream`, an event recorded on it being waited on or synchronized, and a
blocking copy to CPU made while it is current. So a program that reads a side stream's result
without ordering reads the sentinel: the race a real device would have, made certain. Work on the
default stream runs and lands at once.

An event recorded on a stream is a marker in its queue; it completes (and takes its time stamp,
for `elapsed_time` in milliseconds) when the stream is flushed past it.

`synchronous()` (or TORCHCTS_FAULTY_SYNCHRONOUS=1 for a whole process) makes every stream land its work at once, as
a backend whose streams all run inline does: the seeded ordering bugs then change nothing, which is how the tests
show that the streams and events suites find those bugs because the device is asynchronous, not by construction.

Seeded bugs act at the steps of `bug_model`: STREAM_WAIT_STEP (`bugs.after` sees (waiting stream,
awaited stream) and True; False skips the flush), SYNCHRONIZE_STEP (sees the device index and the
streams to flush; returns those flushed), EVENT_QUERY_STEP (sees the event and whether it is
complete) and ELAPSED_STEP (sees both events and the milliseconds).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from typing import Any, Callable

import attrs
import torch

from torchcts.testing.faulty import bugs, ordinals
from torchcts.testing.faulty.bug_model import (BLOCK_REUSE_STEP, ELAPSED_STEP, EVENT_QUERY_STEP, STREAM_WAIT_STEP,
                                               SYNCHRONIZE_STEP)
from torchcts.testing.faulty.trace import note_step

_ids = itertools.count(1)
_local = threading.local()  # per thread, as CUDA's current streams are: device index -> current stream
_defaults: dict[int, "Stream"] = {}
_streams: "list[Stream]" = []  # every side stream made (weakly kept would lose pending work; they are few)
_PRIVATE_USE_1 = 20  # c10::DeviceType::PrivateUse1: the type torch.Stream records
_side_current = 0  # how many threads x devices have a side stream current: 0 keeps the op path fast


def _step(name: str, args: tuple, value: Any) -> Any:
    note_step(name)
    return bugs.after(name, args, {}, value)


def index_of(device: Any) -> int:
    """The device index `device` names (`ordinals.index_of`), a stream's its device's."""
    return device.device.index if isinstance(device, Stream) else ordinals.index_of(device)


class Stream(torch.Stream):
    """A queue of work on one faulty device (`torch.faulty.Stream(device=None, priority=0)`); a `torch.Stream`, so
    `Tensor.record_stream` takes it."""

    def __new__(cls, device: Any = None, priority: int = 0, *, _default: bool = False) -> "Stream":
        return super().__new__(cls, stream_id=0 if _default else next(_ids), device_index=index_of(device),
                               device_type=_PRIVATE_USE_1)

    def __init__(self, device: Any = None, priority: int = 0, *, _default: bool = False):
        self.priority = int(priority)
        self._pending: list[tuple[str, Callable[[], None]]] = []  # ("work", _Work) and ("event", its marker)
        if not _default:
            _streams.append(self)

    def __repr__(self) -> str:
        return f"<torch.faulty.Stream device={self.device} stream_id={self.stream_id}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, torch.Stream) and (self.device, self.stream_id) == (other.device, other.stream_id)

    def __hash__(self) -> int:
        return hash((self.device, self.stream_id))

    # -- the queue ------------------------------------------------------------------------------------------------

    def defer(self, land: Callable[[], None], reads: frozenset[int] = frozenset(),
              value: torch.Tensor | None = None) -> None:
        """Queue `land` (it puts `value` in place), for work that read the storages `reads` (their data pointers)."""
        self._pending.append(("work", _Work(land, reads, value)))

    def flush(self, until: Any = None) -> None:
        """Land queued work in order; with `until` (an event's marker), only up to and including it."""
        while self._pending:
            kind, action = self._pending.pop(0)
            action()
            if until is not None and action is until:
                return

    def query(self) -> bool:
        """Whether all work queued on the stream has landed."""
        return not self._pending

    def synchronize(self) -> None:
        self.flush()

    def wait_stream(self, stream: "Stream") -> None:
        """Work queued later on this stream runs after everything queued on `stream` so far."""
        if _step(STREAM_WAIT_STEP, (self, stream), True):
            stream.flush()

    def wait_event(self, event: "Event") -> None:
        event.wait(self)

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event if event is not None else Event()
        event.record(self)
        return event


@attrs.frozen
class _Work:
    """Queued work: it lands `value` (a computed result) when run; `reads` are the storages it read."""

    land: Callable[[], None]
    reads: frozenset[int]
    value: torch.Tensor | None

    def __call__(self) -> None:
        self.land()


class Event:
    """A marker in a stream's queue (`torch.faulty.Event(enable_timing=False, blocking=False, interprocess=False)`)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing, self.blocking, self.interprocess = bool(enable_timing), bool(blocking), bool(interprocess)
        self._stream: Stream | None = None
        self._marker: Callable[[], None] | None = None
        self._time: float | None = None
        self._recorded = False

    def __repr__(self) -> str:
        return f"<torch.faulty.Event recorded={self._recorded} complete={self._time is not None}>"

    def record(self, stream: Stream | None = None) -> None:
        stream = stream if stream is not None else current_stream()
        self._stream, self._recorded, self._time = stream, True, None

        def stamp() -> None:
            self._time = time.perf_counter()

        self._marker = stamp
        if stream.query():
            stamp()
        else:
            stream._pending.append(("event", stamp))

    def _complete(self) -> bool:
        return not self._recorded or self._time is not None

    def query(self) -> bool:
        """Whether the work recorded before the event has landed (an event never recorded is complete)."""
        return bool(_step(EVENT_QUERY_STEP, (self,), self._complete()))

    def synchronize(self) -> None:
        if self._stream is not None and not self._complete():
            self._stream.flush(until=self._marker)

    def wait(self, stream: Stream | None = None) -> None:
        """Work queued later on `stream` (the current one) runs after the work recorded before this event."""
        stream = stream if stream is not None else current_stream()
        if self._stream is not None and not self._complete() and _step(STREAM_WAIT_STEP, (stream, self._stream), True):
            self._stream.flush(until=self._marker)

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds from this event to `end_event` (both recorded with enable_timing=True, both complete)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with enable_timing=True")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("elapsed_time: both events must be recorded before calculating elapsed time")
        if self._time is None or end_event._time is None:
            raise RuntimeError("elapsed_time: both events must be completed before calculating elapsed time")
        return float(_step(ELAPSED_STEP, (self, end_event), (end_event._time - self._time) * 1000.0))


# -- current streams --------------------------------------------------------------------------------------------------

def default_stream(device: Any = None) -> Stream:
    index = index_of(device)
    if index not in _defaults:
        _defaults[index] = Stream(index, _default=True)
    return _defaults[index]


def _current() -> dict[int, Stream]:
    if not hasattr(_local, "streams"):
        _local.streams = {}
    return _local.streams


def current_stream(device: Any = None) -> Stream:
    index = index_of(device)
    return _current().get(index) or default_stream(index)


def set_stream(stream: Stream) -> None:
    global _side_current
    current = _current()
    was_side = current.get(stream.device.index, None) not in (None, default_stream(stream.device.index))
    is_side = stream.stream_id != 0
    current[stream.device.index] = stream
    _side_current += int(is_side) - int(was_side)


class StreamContext:
    """`torch.faulty.stream(s)`: make `s` current on its device for the block (None: change nothing)."""

    def __init__(self, stream: Stream | None):
        self.stream, self._previous = stream, None

    def __enter__(self) -> Stream | None:
        if self.stream is not None:
            self._previous = current_stream(self.stream.device)
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: Any) -> None:
        if self.stream is not None and self._previous is not None:
            set_stream(self._previous)


def synchronize(device: Any = None) -> None:
    """Land all work queued on every stream of the device."""
    index = index_of(device)
    queued = [s for s in _streams if s.device.index == index and not s.query()]
    for stream in _step(SYNCHRONIZE_STEP, (index, current_stream(index)), queued):
        stream.flush()


# -- the allocator's view of streams: a freed block and the queued work that reads it ------------------------------------

_recorded: dict[int, set[tuple[int, int]]] = {}  # storage data pointer -> (device index, stream id) record_stream named


def record(storage: int, stream: torch.Stream) -> None:
    """`Tensor.record_stream(stream)` of a tensor on `storage`: its block must outlive the work queued on `stream`."""
    _recorded.setdefault(storage, set()).add((stream.device_index, stream.stream_id))


def block_freed(storage: int) -> None:
    """The device's allocator freed `storage` (memory.py, at the next allocation, which could be handed its block).
    Work still queued on a stream that read it keeps its results: the block is held for it, as record_stream asks, or
    (without the record) as a device that frees in stream order does. A seeded bug (BLOCK_REUSE_STEP) may hand the
    block out anyway: that work then reads the new contents, which lands as the sentinel."""
    recorded = _recorded.pop(storage, set())
    for stream in list(_streams):
        readers = [work for kind, work in stream._pending
                   if kind == "work" and storage in work.reads and work.value is not None]
        named = (stream.device.index, stream.stream_id) in recorded
        if readers and _step(BLOCK_REUSE_STEP, (stream, named), False):
            for work in readers:
                work.value.copy_(sentinel_of(work.value))


_synchronous = os.environ.get("TORCHCTS_FAULTY_SYNCHRONOUS") == "1"


def is_synchronous() -> bool:
    """Whether side streams land their work at once (`synchronous`)."""
    return _synchronous


@contextlib.contextmanager
def synchronous():
    """Inside the block, work on side streams lands at once: the device is synchronous."""
    global _synchronous
    for stream in _streams:  # what is queued lands first
        stream.flush()
    kept, _synchronous = _synchronous, True
    try:
        yield
    finally:
        _synchronous = kept


def side_stream_current() -> bool:
    """Whether any thread has a side stream current (else ops run and land at once, the fast path)."""
    return _side_current > 0


def op_stream(index: int) -> Stream | None:
    """The side stream an op on device `index` runs on, or None when it is the default stream."""
    stream = _current().get(index)
    return stream if stream is not None and stream.stream_id != 0 else None


def sentinel_of(value: torch.Tensor) -> torch.Tensor:
    """What a not-yet-landed result reads as: NaN for floating dtypes, the bitwise complement otherwise."""
    if value.is_floating_point() or value.is_complex():
        return torch.full_like(value, float("nan"))
    return ~value if value.dtype != torch.bool else value.logical_not()
