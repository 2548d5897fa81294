"""Seeded bugs for the stress suite (properties/suites/stress.py).

- `large_grid_tail_skipped`: the add kernel's launch grid is capped at 2**23 elements (a grid size kept in
  a narrow field): for tensors of more than 2**23 elements (32 MiB of float32) the elements past it are
  not computed and keep the first operand's values. Smaller adds are right.
- `queue_wrap_drops_op`: the device's command queue has 256 entries; the tanh that wraps it (every 256th
  tanh on a tensor of 64 or more elements queued since the last synchronize) is dropped, and its output
  keeps its input's values. `synchronize()` drains the queue (the count restarts), so programs that
  synchronize at least every 255 such ops never see it.
"""

from __future__ import annotations

from torchcts.testing.faulty.bug_model import SYNCHRONIZE_STEP, Bug

GRID_CAP = 2**23
QUEUE = 256
QUEUED_MIN_ELEMENTS = 64

_queued = [0]  # tanh ops on 64+ elements queued since the last synchronize


def _past_the_grid(func, args, kwargs) -> bool:
    return len(args) >= 2 and all(hasattr(a, "numel") for a in args[:2]) and args[0].numel() > GRID_CAP \
        and args[0].shape == args[1].shape


def _tail_not_computed(func, args, kwargs, value):
    flat, first = value.view(-1), args[0].reshape(-1)
    flat[GRID_CAP:] = first[GRID_CAP:]
    return value


def _wraps_the_queue(func, args, kwargs) -> bool:
    if str(func) == SYNCHRONIZE_STEP:
        _queued[0] = 0  # the queue drained
        return False
    if args[0].numel() < QUEUED_MIN_ELEMENTS:
        return False
    _queued[0] += 1
    return _queued[0] % QUEUE == 0


def _dropped(func, args, kwargs, value):
    return args[0].clone()


BUGS = (
    Bug("large_grid_tail_skipped", ("aten.add.Tensor",), "an add of two tensors of more than 2**23 elements",
        "the elements past 2**23 keep the first operand's values", _past_the_grid, _tail_not_computed, suite="stress"),
    Bug("queue_wrap_drops_op", ("aten.tanh.default", SYNCHRONIZE_STEP), "the 256th tanh on 64+ elements queued "
        "since the last synchronize", "the op is dropped: its output keeps its input's values", _wraps_the_queue,
        _dropped, suite="stress", precise=False),
)
