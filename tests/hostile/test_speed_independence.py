"""A busy or slow machine changes no outcome: fuzzing is bounded by visits, not seconds.

`torchcts fuzz --max-visits N` stops after N scheduled visits; with `--seed` and one worker the
hunt makes the same choices, with the same seeds, on any machine. Timeouts (the task timeout,
the item timeout of isolated runs) are safety nets that catch hangs, never budgets.
(The isolation tests' hang runs: tests/run/test_isolation.py.)
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

import pytest

from torchcts.fuzz.options import FuzzOptions
from torchcts.fuzz.scheduler import Scheduler
from torchcts.isolation.fork import run_forked
from torchcts.plan.build import PlanItem
from torchcts.manifest.templates import render_template
from tests import warm_programs

ITEMS = [PlanItem("forward", op, "function", "float32", 1) for op in ("abs", "neg", "exp", "sin", "cos")]


def schedule(seed: int, visits: int) -> list[str]:
    """The items a scheduler picks over `visits` visits, each visit's result a function of the item alone."""
    scheduler = Scheduler(ITEMS, random.Random(seed))
    chosen = []
    for visit in range(1, visits + 1):
        stats = scheduler.next_item(set())
        chosen.append(stats.item.id)
        growing = stats.item.op == "exp" and stats.tasks < 4  # novelty: a larger error on each early visit
        scheduler.finished(stats, {"status": "passed", "examples": 3, "max_ulp": stats.tasks if growing else 0},
                           elapsed_s=123.0 * visit, visit=visit)
    return chosen


def test_the_scheduler_makes_the_same_choices_for_a_seed_whatever_the_clock_says():
    chosen = schedule(7, 40)
    assert sorted(chosen[:len(ITEMS)]) == sorted(item.id for item in ITEMS)  # every item once, first
    assert chosen == schedule(7, 40) and chosen != schedule(8, 40)
    assert chosen.count("forward::exp::function::float32") > chosen.count("forward::abs::function::float32")


def test_a_lost_crash_replay_leaves_the_item_crashed():
    scheduler = Scheduler(ITEMS[:1], random.Random(0))
    stats = scheduler.next_item(set())
    scheduler.lost(stats, "crashed", elapsed_s=5.0, visit=1)
    scheduler.lost(stats, "timed_out", elapsed_s=900.0, visit=1)  # the case-by-case replay overran
    assert stats.outcome == "crashed" and stats.first_failure_visit == 1 and stats.tasks == 2


def test_a_hunt_needs_a_budget_of_time_visits_or_both():
    with pytest.raises(ValueError, match="needs a budget"):
        FuzzOptions(device="faulty", manifest="manifest.py", budget_s=None)
    assert FuzzOptions(device="faulty", manifest="m", budget_s=None, max_visits=5).describe_budget() == "5 visits"
    assert FuzzOptions(device="faulty", manifest="m", budget_s=90.0, max_visits=5).describe_budget() == \
        "90 s or 5 visits"


def test_a_crash_that_comes_after_a_quiet_moment_keeps_its_signal():
    """However long an isolated child runs before it dies, the record names the signal that killed it."""
    result = run_forked(lambda: (time.sleep(1.5), os.abort()), timeout_s=600)
    assert (result.status, result.signal_name) == ("crashed", "SIGABRT"), result
    answer = run_forked(lambda: (time.sleep(1.5), 42)[1], timeout_s=600)
    assert (answer.status, answer.answer) == ("finished", 42)


def hunt(cwd, name, *args):
    result = warm_programs.run([sys.executable, "-m", "torchcts", "fuzz", "--device", "faulty", "--dtype", "float32",
                             "--property", "forward", "--level", "2", "--examples-per-task", "3",
                             "--task-timeout", "1800", "--corpus-dir", f"{name}/corpus", "--results-dir", f"{name}/results",
                             *args],
                            capture_output=True, text=True, cwd=cwd, timeout=1800,
                            env=dict(os.environ, TORCHCTS_FAULTY_BUGS=""))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(next((cwd / name / "results").glob("fuzz-*/fuzz.json")).read_text())


def without_clock(summary):
    kept = {k: v for k, v in summary.items() if k not in ("elapsed_s", "budget_s", "corpus")}
    kept["items"] = [{k: v for k, v in item.items() if k != "first_failure_s"} for item in summary["items"]]
    return kept


@pytest.mark.slow
def test_a_visit_budget_hunt_repeats_exactly_and_a_time_budget_it_does_not_reach_changes_nothing(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    selection = ("--ops", "^(abs|neg|exp|sin)$", "--max-visits", "9", "--seed", "7")
    first = hunt(tmp_path, "first", *selection)
    second = hunt(tmp_path, "second", *selection, "--budget", "1h")
    assert first["visits"] == 9 and sum(item["tasks"] for item in first["items"]) == 9
    assert first["budget_s"] is None and second["budget_s"] == 3600
    assert without_clock(first) == without_clock(second)


@pytest.mark.slow
def test_a_time_budget_alone_still_ends_the_hunt(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    summary = hunt(tmp_path, "timed", "--ops", "^abs$", "--budget", "1s")
    assert summary["budget_s"] == 1 and summary["max_visits"] is None and not summary["interrupted"]
