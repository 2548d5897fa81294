"""Where each seeded bug would act, learnt without switching it on: the selftest's clean run prunes by it.

With `TORCHCTS_FAULTY_WOULD_FIRE=1` every call of the device (and every named step: saving, streams,
decoders, ...) also evaluates the condition of each seeded bug that is off (those `all` switches on:
not crash, not hang) on that overload, and notes `would:<name>` in the device trace where it holds;
nothing is perturbed. A run with only that bug on is the clean run up to the first call where its
condition holds (derandomized: the same draws), so an item whose clean trace has no `would:<name>`
runs the same with the bug on and cannot show it; the selftest reruns only the others for that bug.

A condition that raises counts as holding (the bug-on run raises there). Ops that a condition itself
runs on the device are not evaluated in turn: with only one bug on, that bug's condition never runs
inside another's.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Iterable

from torchcts.testing.faulty.bug_model import Bug
from torchcts.testing.faulty.trace import note_step

ENV_VAR = "TORCHCTS_FAULTY_WOULD_FIRE"  # "1": note where the bugs that are off would fire
PREFIX = "would:"

_table: dict[str, tuple[Bug, ...]] = {}  # overload or step -> the bugs watched on it
_local = threading.local()  # `evaluating`: inside a condition, whose own device ops are not evaluated


def watch(bugs: Iterable[Bug]) -> None:
    """Evaluate these bugs' conditions (those `all` switches on) wherever they are off; an empty list stops."""
    table: dict[str, list[Bug]] = {}
    for bug in bugs:
        if bug.in_all:
            for op in bug.ops:
                table.setdefault(op, []).append(bug)
    _table.clear()
    _table.update({op: tuple(found) for op, found in table.items()})


def watching() -> bool:
    return bool(_table)


def watched_on(op: str) -> tuple[Bug, ...]:
    """The bugs watched on an overload (as `str(func)` writes it) or named step."""
    return _table.get(op, ())


def load_from_environment(bugs: Iterable[Bug]) -> None:
    """Watch `bugs` when TORCHCTS_FAULTY_WOULD_FIRE is "1"."""
    watch(bugs if os.environ.get(ENV_VAR) == "1" else ())


def note(func: Any, args: tuple, kwargs: dict, active: tuple[Bug, ...], *, before_op: bool) -> None:
    """Note `would:<name>` for each watched bug on `func` that is not in `active` and whose condition holds;
    `before_op`: the bugs that act before the op runs (missing kernel, wrong error), else the wrong-result ones."""
    watched = _table.get(str(func))
    if not watched or getattr(_local, "evaluating", False):
        return

    _local.evaluating = True
    try:
        for bug in watched:
            if any(bug is on for on in active) or (bug.kind != "wrong-result") != before_op:
                continue
            try:
                holds = bool(bug.fires(func, args, kwargs))
            except Exception:  # noqa: BLE001 - the bug-on run raises here: it diverges from the clean run
                holds = True
            if holds:
                note_step(PREFIX + bug.name)
    finally:
        _local.evaluating = False


def bugs_noted(trace: Iterable[str]) -> set[str]:
    """The names of the bugs a device trace (a record's `device_ops`) says would have fired."""
    return {entry[len(PREFIX):] for entry in trace if entry.startswith(PREFIX)}
