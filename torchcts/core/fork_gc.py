"""The garbage collector around a fork: the child freezes what it inherited; the parent's frozen objects stay frozen.

A forked child shares the parent's memory page by page until it writes one. A full collection in the child would
write to the header of every object it inherited and copy nearly all of it, so the child's first act is
`gc.freeze()`, which moves every inherited object to the permanent generation (a splice of lists, no object
touched). The parent only pauses collection across the fork: freezing in the parent and unfreezing after, as this
code once did, also unfroze what the parent had frozen on purpose (the op database, torchcts.plan.catalog), so
every later full collection of the run scanned ~400k more objects (~0.3 s each, three or more per run).
"""

from __future__ import annotations

import gc


def pause_for_fork() -> bool:
    """Stop collection until the fork is done (a collection between the fork and the child's freeze would write the
    inherited objects); whether it was on, for `resume_after_fork` and `frozen_child`."""
    collecting = gc.isenabled()
    gc.disable()
    return collecting


def resume_after_fork(collecting: bool) -> None:
    """In the parent, after the fork: collection as it was."""
    if collecting:
        gc.enable()


def frozen_child(collecting: bool) -> None:
    """In the child, first: freeze what it inherited, then collection as it was in the parent."""
    gc.freeze()
    if collecting:
        gc.enable()
