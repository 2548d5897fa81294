"""Forking keeps the parent's frozen objects frozen (torchcts.core.fork_gc): the op database is frozen on purpose, and
a fork that unfroze it made every later full collection of the run scan ~400k more objects."""

from __future__ import annotations

import gc

import pytest

from torchcts.isolation.fork import run_forked
from torchcts.manifest.child import run_in_child


def child_freeze_count(_: str) -> int:
    return gc.get_freeze_count()


@pytest.fixture
def frozen_parent():
    """A parent with frozen objects (as one that loaded the op database is); unfrozen after only if this froze them."""
    kept = [[index] for index in range(1000)]
    froze_here = gc.get_freeze_count() == 0
    gc.freeze()
    yield gc.get_freeze_count()
    if froze_here:
        gc.unfreeze()
    del kept


def test_an_isolated_item_fork_leaves_the_parents_frozen_objects_frozen(frozen_parent):
    enabled = gc.isenabled()
    ended = run_forked(gc.get_freeze_count, 60)
    assert ended.status == "finished"
    assert ended.answer >= frozen_parent  # the child froze everything it inherited
    assert gc.get_freeze_count() > frozen_parent * 0.9 and gc.isenabled() == enabled  # (some die by refcount)


def test_a_manifest_load_fork_leaves_the_parents_frozen_objects_frozen(frozen_parent):
    enabled = gc.isenabled()
    outcome = run_in_child(child_freeze_count, "", timeout=60, fresh_interpreter=False)
    assert outcome.answer >= frozen_parent
    assert gc.get_freeze_count() > frozen_parent * 0.9 and gc.isenabled() == enabled  # (some die by refcount)
