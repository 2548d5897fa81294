"""The fuzz worker is a thin adapter over the engine: its settings come from the hunt's options, a task
runs its item through `run_item` with the task's seed, and the record becomes the scheduler's answer."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from torchcts.fuzz.options import CRASH_CASE_TIMEOUT_S, FuzzOptions, parse_budget
from torchcts.fuzz.worker import Task, answer_from, engine_settings, run_task, task_settings
from torchcts.manifest.templates import render_template
from torchcts.plan.items import PlanItem
from torchcts.testing import faulty

ABS = PlanItem("forward", "abs", "function", "float32", 2)


@pytest.fixture
def faulty_options(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty"))
    return FuzzOptions(device="faulty", manifest=tmp_path / "manifest.py", budget_s=None, max_visits=1, level=2,
                       corpus_dir=tmp_path / "corpus", examples_per_task=10)


def test_the_engine_settings_follow_the_options(faulty_options):
    settings = engine_settings(faulty_options)
    assert (settings.target.device_type, settings.level, settings.max_examples) == ("faulty", 2, 10)
    assert settings.targeting and settings.case_timeout_s is None and settings.deadline_ms is None
    assert settings.corpus_dir == faulty_options.corpus_dir
    assert settings.replay_flags == f"--device faulty --manifest {faulty_options.manifest.resolve()}"


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_visit_that_finds_a_bug_stores_its_case_with_the_visits_seed(faulty_options):
    """The visit `torchcts fuzz --seed 2` makes first (tests/run/test_corpus_replay.py) finds the bug here too."""
    seed = random.Random(2).randrange(2**63)
    faulty.enable_bugs("storage_offset_ignored")
    try:
        answer = run_task(Task(ABS, seed=seed, examples=10), engine_settings(faulty_options))
    finally:
        faulty.disable_bugs("storage_offset_ignored")
    assert (answer["item"], answer["status"], answer["outcome"]) == (ABS.id, "failed", "failed")
    assert answer["examples"] > 0 and answer["counterexample"]["new"]
    case = json.loads(Path(answer["counterexample"]["path"]).read_text())
    assert case["found"]["fuzz_seed"] == seed and case["found"]["derandomize"] is False
    assert case["property"] == "forward" and case["op"] == "abs"
    again = run_task(Task(ABS, seed=seed, examples=10), engine_settings(faulty_options))
    assert again["status"] == "passed" and again["examples"] == 10  # the bug off: the same cases pass


def test_a_crash_hunt_runs_each_case_in_a_child_and_a_visit_steers_toward_larger_errors(faulty_options):
    settings = engine_settings(faulty_options)
    visit = task_settings(Task(ABS, seed=7, examples=3), settings)
    crash_hunt = task_settings(Task(ABS, seed=7, examples=3).as_crash_hunt(), settings)
    assert visit.targeting and visit.case_timeout_s is None
    assert not crash_hunt.targeting and crash_hunt.case_timeout_s == CRASH_CASE_TIMEOUT_S
    assert visit.found == crash_hunt.found == {"fuzz_seed": 7, "derandomize": False}
    assert settings.found == {}  # the hunt's settings are not changed by a task


def test_cases_the_cpu_oracle_crashes_on_run_isolated_as_in_run_and_known_backend_crashes_do_not(tmp_path):
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="cpu"))
    (tmp_path / "known_crashes.json").write_text(json.dumps({"rules": [
        {"op": "^abs$", "reason": "a backend crash", "kind": "backend"}]}))
    options = FuzzOptions(device="cpu", manifest=tmp_path / "manifest.py", budget_s=None, max_visits=1)
    policy = engine_settings(options).isolation
    median = PlanItem("forward", "median", "function", "float32", 1)  # packaged CPU-oracle rule
    assert policy.case_isolation(median) is not None and policy.reason(median) is None
    assert policy.reason(ABS) is None and policy.case_isolation(ABS) is None  # a backend crash is a finding


def test_a_ledger_that_cannot_be_read_stops_the_hunt_before_any_worker_starts(tmp_path):
    from torchcts.crashes.ledger import LedgerError
    from torchcts.fuzz.hunt import hunt

    (tmp_path / "known_crashes.json").write_text("{not json")
    options = FuzzOptions(device="cpu", manifest=tmp_path / "manifest.py", budget_s=None, max_visits=1)
    with pytest.raises(LedgerError, match="known_crashes.json"):
        hunt(options, [ABS], print)


def record(outcome: str, **fields) -> dict:
    return {**ABS.as_json(), "outcome": outcome, "reason": "", "error": None, "counterexample": None, "examples": 4,
            "max_ulp": 2.0, **fields}


CASE = {"path": "corpus/x.json", "fingerprint": "ab", "new": True, "elements": 3, "replay": "torchcts replay x"}


@pytest.mark.parametrize("outcome", ["failed", "error", "crashed", "timed_out"])
def test_a_problem_record_is_a_failed_answer_with_its_outcome_and_case(outcome):
    answer = answer_from(Task(ABS, 1, 4), record(outcome, error="AssertionError: differs", counterexample=CASE))
    assert answer == {"item": ABS.id, "status": "failed", "outcome": outcome, "error": "AssertionError: differs",
                      "counterexample": CASE, "examples": 4, "max_ulp": 2}


@pytest.mark.parametrize("outcome", ["runtime_unavailable", "cpu_contract"])
def test_a_not_run_record_is_an_unavailable_answer(outcome):
    answer = answer_from(Task(ABS, 1, 4), record(outcome, reason="no case can run", examples=0))
    assert (answer["status"], answer["reason"], answer["examples"]) == ("unavailable", "no case can run", 0)


def test_a_passed_record_is_a_passed_answer_without_a_case():
    assert answer_from(Task(ABS, 1, 4), record("passed")) == {"item": ABS.id, "status": "passed", "examples": 4,
                                                               "max_ulp": 2}


def test_the_answer_carries_the_items_distinct_cases_when_its_record_has_them():
    assert answer_from(Task(ABS, 1, 4), record("passed", distinct_cases=3))["distinct_cases"] == 3
    assert "distinct_cases" not in answer_from(Task(ABS, 1, 4), record("crashed"))  # a dead process counted none


def test_a_compiled_failure_s_answer_carries_its_blamed_leg():
    answer = answer_from(Task(ABS, 1, 4), record("failed", counterexample=CASE, leg="backend"))
    assert answer["leg"] == "backend"
    assert "leg" not in answer_from(Task(ABS, 1, 4), record("failed", counterexample=CASE))  # eager: none


def test_a_case_that_cannot_be_stored_is_reported_in_the_answer():
    answer = answer_from(Task(ABS, 1, 4), record("failed", counterexample_error="the failing case cannot be stored"))
    assert answer["status"] == "failed" and "counterexample" not in answer
    assert answer["counterexample_error"] == "the failing case cannot be stored"


@pytest.mark.parametrize("text, seconds", [("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("1h30m", 5400.0),
                                           ("1.5h", 5400.0)])
def test_a_budget_reads_as_seconds(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["0s", "ten minutes", "", "9" * 400, "-5"])
def test_a_bad_budget_is_refused_with_the_text(text):
    with pytest.raises(ValueError, match="duration"):
        parse_budget(text)


def test_the_time_budget_stops_new_visits_and_its_grace_then_drops_running_ones():
    options = FuzzOptions(device="cpu", manifest=Path("m.py"), budget_s=60.0)
    assert not options.out_of_time(59.9) and options.out_of_time(60.0)
    assert not options.past_grace(75.0) and options.past_grace(75.1)
    visits = FuzzOptions(device="cpu", manifest=Path("m.py"), budget_s=None, max_visits=3)
    assert not visits.out_of_time(1e9) and not visits.past_grace(1e9)
    assert not visits.out_of_visits(2) and visits.out_of_visits(3)
