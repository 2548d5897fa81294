"""What a hunt is asked to do (`FuzzOptions`), its budget, and the time limits that guard it.

The budget is time, a number of visits, or both (whichever runs out first). The limits below are
safety nets, not budgets: they catch a hung or endless visit, never decide which items run.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import attrs

PROGRESS_EVERY_S = 10.0
BUDGET_GRACE_S = 15.0  # a visit still running this long after the budget is dropped
CRASH_CASE_TIMEOUT_S = 30.0  # per case, while a crash is reproduced and shrunk case by case
CRASH_REPLAY_LIMIT_S = 1800.0  # a whole crash replay (hundreds of forked cases) past this is dropped; the item stays crashed


@attrs.frozen
class FuzzOptions:
    device: str
    manifest: Path
    budget_s: float | None  # None: no time limit (then max_visits bounds the hunt)
    ops: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    level: int | None = None
    corpus_dir: Path = Path("corpus")
    results_dir: Path = Path("results")
    workers: int = 1
    examples_per_task: int = 10
    task_timeout_s: float = 120.0
    compile_backend: str | None = None
    shape_mode: str | None = None  # --shape-mode (None: the manifest's compile.dynamic, else automatic)
    compile_settings: dict | None = None  # the CompileSpec the workers build, as JSON (fuzz.json says how it compiled)
    seed: int | None = None
    max_visits: int | None = None  # scheduled visits, crash replays not counted; None: no limit

    def __attrs_post_init__(self) -> None:
        if self.budget_s is None and self.max_visits is None:
            raise ValueError("a hunt needs a budget: a time (budget_s), a number of visits (max_visits), or both")

    def describe_budget(self) -> str:
        parts = ([f"{self.budget_s:.0f} s"] if self.budget_s is not None else []) + \
            ([f"{self.max_visits} visits"] if self.max_visits is not None else [])
        return " or ".join(parts)

    def out_of_time(self, elapsed_s: float) -> bool:
        """Whether `elapsed_s` seconds have used up the time budget (never without one): no new visit starts."""
        return self.budget_s is not None and elapsed_s >= self.budget_s

    def past_grace(self, elapsed_s: float) -> bool:
        """Whether a visit still running now is dropped: the time budget and its grace are over."""
        return self.budget_s is not None and elapsed_s > self.budget_s + BUDGET_GRACE_S

    def out_of_visits(self, visits: int) -> bool:
        return self.max_visits is not None and visits >= self.max_visits


def parse_budget(text: str) -> float:
    """Seconds in a budget such as `90`, `90s`, `10m`, `1h30m`; ValueError otherwise."""
    parts = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text,
                         re.ASCII)
    if not parts or not any(parts.groups()):
        raise ValueError(f"{text[:40]!r} is not a duration (examples: 90s, 10m, 1h)")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in parts.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0 or not math.isfinite(total):  # a 400-digit budget is infinity, which fuzz.json cannot hold
        raise ValueError(f"{text[:40]!r}: the budget must be a positive, finite duration")
    return total
