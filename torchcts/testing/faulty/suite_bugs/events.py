"""Seeded bugs for the events suite (properties/suites/events.py).

- `event_query_early_without_timing`: an event made without `enable_timing`, recorded on a side
  stream behind work that has not landed, answers `query()` True: as a backend whose light-weight
  (untimed) events read the stream's *submitted* counter instead of its *completed* one. A program
  that trusts True reads results that are not there. Timed events and events on the default stream
  answer right.
- `elapsed_time_in_microseconds_on_side_streams`: when both events were recorded on side streams,
  `elapsed_time` reports microseconds (1000x the milliseconds): a second timer path whose
  conversion factor is wrong. Events on the default stream time right.
- `elapsed_time_swapped_across_streams`: when the two events were recorded on different streams, the
  result is end->start (negative): the backend subtracts in the order of its per-stream timer
  table. Events on one stream time right.
"""

from __future__ import annotations

from torchcts.testing.faulty.bug_model import ELAPSED_STEP, EVENT_QUERY_STEP, Bug


def _untimed_on_side_stream(func, args, kwargs) -> bool:
    (event,) = args
    stream = getattr(event, "_stream", None)
    return not event.enable_timing and stream is not None and stream.stream_id != 0


def _complete(func, args, kwargs, value):
    return True


def _both_on_side_streams(func, args, kwargs) -> bool:
    return all(event._stream is not None and event._stream.stream_id != 0 for event in args)


def _in_microseconds(func, args, kwargs, milliseconds):
    return milliseconds * 1000.0


def _on_different_streams(func, args, kwargs) -> bool:
    start, end = args
    return start._stream is not None and end._stream is not None and start._stream != end._stream


def _negated(func, args, kwargs, milliseconds):
    return -milliseconds


BUGS = (
    Bug("event_query_early_without_timing", (EVENT_QUERY_STEP,), "query() of an event made without enable_timing, "
        "recorded on a side stream", "answers True (complete) before the work recorded before it landed",
        _untimed_on_side_stream, _complete, suite="events"),
    Bug("elapsed_time_in_microseconds_on_side_streams", (ELAPSED_STEP,), "elapsed_time between two events both "
        "recorded on side streams", "reports microseconds instead of milliseconds (1000x)", _both_on_side_streams,
        _in_microseconds, suite="events"),
    Bug("elapsed_time_swapped_across_streams", (ELAPSED_STEP,), "elapsed_time between events recorded on two "
        "different streams", "reports end->start: the negated interval", _on_different_streams, _negated,
        suite="events"),
)
