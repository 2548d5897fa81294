"""The engine without pytest: `run_item` on real items gives the records `torchcts run` writes;
outcomes come from exception types; isolation (per item, per case) keeps or explains the record."""

from __future__ import annotations

import os
import sys

import attrs
import pytest

from torchcts.cases.files import CaseFileError
from torchcts.cases.replay_items import ReplayItem
from torchcts.engine.context import BackendError, CaseCrashed
from torchcts.engine.outcome import NotRun, classify
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.isolation.policy import CaseIsolation, IsolationPolicy
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan.build import PlanItem
from torchcts.results.writer import read_records
from torchcts.strategies import opinfo_samples
from tests import warm_programs

ABS = PlanItem("forward", "abs", "function", "float32", 1)
COMPARED = ("outcome", "reason", "error", "examples", "fingerprints", "distinct_cases", "max_examples",
            "cpu_contract_cases", "unavailable_cases", "max_abs_error", "max_rel_error", "max_ulp", "counterexample")


@pytest.fixture(scope="module")
def manifest_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("engine") / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    return path


@pytest.fixture(scope="module")
def settings(manifest_path):
    manifest, _ = load_manifest(manifest_path)
    return EngineSettings(target=Target("cpu"), manifest=manifest, level=1, max_examples=2, versions=versions())


@attrs.frozen
class OracleCrashPolicy:
    """An isolation policy that isolates no item but every case of every item (a CPU-oracle crash rule)."""

    timeout_s: float = 60.0
    fork: bool = True

    def reason(self, item):
        return None

    def case_isolation(self, item):
        return CaseIsolation(self.timeout_s, "known CPU crash: the test's rule", rule="test#0", fork=self.fork)


@pytest.mark.slow
def test_run_item_gives_the_record_torchcts_run_writes(tmp_path, manifest_path, settings):
    record = run_item(ABS, settings)
    assert record["outcome"] is Outcome.PASSED and record["examples"] == 2 and len(record["fingerprints"]) == 2
    assert record["item"] == ABS.id and record["error"] is None and "isolated" not in record
    command = [sys.executable, "-m", "torchcts", "run", "--validation", "--derandomize", "--manifest", str(manifest_path),
               "--level", "1", "--dtype", "float32", "--ops", "^abs$", "--property", "forward", "--max-examples", "2",
               "--results-dir", str(tmp_path / "results")]
    result = warm_programs.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    written = {r["item"]: r for r in read_records(next((tmp_path / "results").glob("*/run.json")).parent)}[ABS.id]
    assert {k: record[k] for k in COMPARED} == {k: written[k] for k in COMPARED}
    assert set(record) == set(written)


def test_a_record_counts_distinct_cases_next_to_its_budget_and_a_fixed_list_has_none(settings):
    drawn = run_item(ABS, attrs.evolve(settings, max_examples=6))
    assert drawn["max_examples"] == 6 and drawn["distinct_cases"] == len(set(drawn["fingerprints"])) >= 1
    listed = run_item(PlanItem("errors", "cat", "function", "float32", 2), attrs.evolve(settings, level=2))
    assert listed["outcome"] is Outcome.PASSED and "max_examples" not in listed  # OpInfo error inputs: a fixed list
    assert listed["examples"] >= 1 and 1 <= listed["distinct_cases"] <= len(set(listed["fingerprints"]))
    if not listed["cpu_contract_cases"] and not listed["unavailable_cases"]:  # those cases are no evidence
        assert listed["distinct_cases"] == len(set(listed["fingerprints"]))


def test_an_isolated_item_gives_the_same_record(settings):
    here = run_item(ABS, settings)
    forked = run_item(ABS, attrs.evolve(settings, isolation=IsolationPolicy(everything=True)))
    assert forked["isolated"] == "--subprocess-per-test" and forked["outcome"] is Outcome.PASSED
    assert {k: here[k] for k in COMPARED} == {k: forked[k] for k in COMPARED}


@pytest.mark.parametrize("exc, outcome, reason", [
    (NotRun(Outcome.CPU_CONTRACT, "cpu_contract: the CPU oracle rejected all 3 cases"), Outcome.CPU_CONTRACT,
     "cpu_contract: the CPU oracle rejected all 3 cases"),
    (NotRun(Outcome.RUNTIME_UNAVAILABLE, "no case can run"), Outcome.RUNTIME_UNAVAILABLE, "no case can run"),
    (AssertionError("differs"), Outcome.FAILED, "the backend's result differs from the CPU oracle's"),
    (BackendError("raised"), Outcome.ERROR, "the backend raised where the CPU oracle did not"),
    (CaseCrashed("died"), Outcome.CRASHED, "a case crashed the process running it"),
    (CaseFileError("x.json", "inputs", "bad"), Outcome.ERROR, "the corpus case cannot be replayed"),
    (ValueError("oops"), Outcome.ERROR, "harness: unexpected exception in TorchCTS's own code (a TorchCTS bug)"),
])
def test_outcomes_come_from_exception_types(exc, outcome, reason):
    verdict = classify(exc)
    assert (verdict.outcome, verdict.reason) == (outcome, reason)
    assert verdict.error is None if isinstance(exc, NotRun) else verdict.error.startswith(type(exc).__name__ + ":")


def test_show_traceback_puts_the_traceback_in_the_error(settings, scenario):
    def test_raises(cts):
        raise ValueError("deep inside the check")

    item = scenario("engine_probe_traceback", test_raises)
    assert run_item(item, settings)["error"] == "ValueError: deep inside the check"
    error = run_item(item, attrs.evolve(settings, show_traceback=True))["error"]
    assert error.startswith("Traceback (most recent call last):") and "test_raises" in error
    assert error.rstrip().endswith("ValueError: deep inside the check")


def test_a_scenario_property_registered_here_runs_without_an_op(settings, scenario):
    seen = []

    def test_probe(cts):
        seen.append((cts.op, cts.item.op))

        def check(case):
            if case == 3:
                cts.on_device_call(lambda c, s, target: 1 / 0, case)

        cts.run_each([1, 2], check)

    item = scenario("engine_probe_scenario", test_probe)
    record = run_item(item, settings)
    assert seen == [(None, "probe")]
    assert record["outcome"] is Outcome.PASSED and record["examples"] == 2 and len(set(record["fingerprints"])) == 2
    assert record["property"] == "engine_probe_scenario" and record["variant"] == "scenario"

    def test_fails(cts):
        cts.run_each([3], lambda case: cts.on_device_call(lambda c, s, target: 1 / 0, case))

    error = run_item(scenario("engine_probe_backend_error", test_fails), settings)
    assert error["outcome"] is Outcome.ERROR and "ZeroDivisionError" in error["error"]
    assert error["counterexample"] is None  # a scenario's drawn value is no corpus case

    def test_no_cases(cts):
        cts.run_each([], lambda case: None)

    nothing = run_item(scenario("engine_probe_no_cases", test_no_cases), settings)
    assert nothing["outcome"] is Outcome.RUNTIME_UNAVAILABLE and nothing["error"] is None


def test_an_interrupt_propagates_and_makes_no_record(settings, scenario):
    def test_interrupted(cts):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_item(scenario("engine_probe_interrupt", test_interrupted), settings)


def test_an_unreadable_replay_case_is_an_error_record(tmp_path, settings):
    item = ReplayItem(str(tmp_path / "gone.json"), "forward", "", "", "", 0, problem=("inputs", "not base64"))
    record = run_item(item, settings)
    assert record["outcome"] is Outcome.ERROR and record["reason"] == "the corpus case cannot be replayed"
    assert record["error"].startswith(f"UnreadableCase: {tmp_path / 'gone.json'}: inputs: not base64")


def test_a_cpu_oracle_crash_is_cpu_contract_and_a_device_crash_a_finding(settings, scenario):
    def test_oracle_dies(cts):
        cts.run_each([1, 2], lambda case: cts.on_cpu_call(lambda c, s, target: os.abort(), case))

    def test_device_dies(cts):
        def check(case):
            cts.on_cpu_call(lambda c, s, target: case, case)  # the oracle answers
            cts.on_device_call(lambda c, s, target: os.abort(), case)

        cts.run_each([1], check)

    isolating = attrs.evolve(settings, isolation=OracleCrashPolicy())
    oracle = run_item(scenario("engine_probe_oracle_crash", test_oracle_dies), isolating)
    assert oracle["outcome"] is Outcome.CPU_CONTRACT and oracle["cpu_contract_cases"] == 2
    assert "crashed on all 2 cases" in oracle["reason"] and "known CPU crash: the test's rule" in oracle["reason"]
    assert oracle["isolated_cases"] == "known CPU-oracle crash rule test#0: known CPU crash: the test's rule"
    device = run_item(scenario("engine_probe_device_crash", test_device_dies), isolating)
    assert device["outcome"] is Outcome.CRASHED and "SIGABRT" in device["error"]
    unforkable = attrs.evolve(settings, isolation=OracleCrashPolicy(fork=False))  # the cases are not run at all
    skipped = run_item(scenario("engine_probe_oracle_unforkable", test_oracle_dies), unforkable)
    assert skipped["outcome"] is Outcome.CPU_CONTRACT and "crashed on all 2 cases" in skipped["reason"]


def test_a_cpu_rejection_in_a_case_child_stays_a_rejection(settings, scenario):
    def test_rejects(cts):
        def oracle_raises(c, s, target):
            raise RuntimeError("CPU says no")

        cts.run_each([1], lambda case: cts.on_cpu_call(oracle_raises, case))

    record = run_item(scenario("engine_probe_rejects", test_rejects), attrs.evolve(settings, isolation=OracleCrashPolicy()))
    assert record["outcome"] is Outcome.CPU_CONTRACT
    assert record["reason"] == "cpu_contract: the CPU oracle rejected all 1 cases; the first: RuntimeError: CPU says no"


def test_a_harness_error_in_a_case_child_is_the_same_error_as_in_process(settings, scenario):
    def test_harness_bug(cts):
        def check(case):
            cts.on_cpu_call(lambda c, s, target: case, case)  # the oracle answers; then the check itself breaks
            raise TypeError(f"unsupported operand for case {case}")

        cts.run_each([1], check)

    item = scenario("engine_probe_harness_bug", test_harness_bug)
    here = run_item(item, settings)
    forked = run_item(item, attrs.evolve(settings, isolation=OracleCrashPolicy()))
    assert here["outcome"] is Outcome.ERROR and here["error"] == "TypeError: unsupported operand for case 1"
    assert here["reason"] == "harness: unexpected exception in TorchCTS's own code (a TorchCTS bug)"
    assert {k: forked[k] for k in ("outcome", "reason", "error")} == {k: here[k] for k in ("outcome", "reason", "error")}


def test_a_failed_comparison_in_a_case_child_is_the_same_failure_as_in_process(settings, scenario):
    def test_differs(cts):
        def check(case):
            raise AssertionError(f"cpu differs from CPU on case {case}")

        cts.run_each([1], check)

    item = scenario("engine_probe_child_failure", test_differs)
    here = run_item(item, settings)
    forked = run_item(item, attrs.evolve(settings, isolation=OracleCrashPolicy()))
    assert here["outcome"] is Outcome.FAILED and here["error"] == "AssertionError: cpu differs from CPU on case 1"
    assert {k: forked[k] for k in ("outcome", "reason", "error")} == {k: here[k] for k in ("outcome", "reason", "error")}


def test_an_exception_outside_the_check_keeps_the_items_record(tmp_path, settings, monkeypatch):
    """Storing the failing case or tracing can raise (a full disk, a module changed under a long run): the
    finding keeps its record (counterexample_error), and anything else raised around the check is a harness
    error record, never an item that silently has none."""
    from torchcts.engine import run as engine_run

    def test_fails(cts):
        def check(case):
            raise AssertionError("the device differs")

        cts.run(opinfo_samples(cts.op, cts.dtype, manifest=cts.manifest, level=1), check)

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine_run, "_store", disk_full)
    failing = run_item(ABS, attrs.evolve(settings, corpus_dir=tmp_path / "corpus"))
    assert failing["outcome"] is Outcome.PASSED  # abs passes on CPU: nothing to store, _store not called

    monkeypatch.setattr(engine_run, "property_check", lambda name: test_fails)
    failing = run_item(ABS, attrs.evolve(settings, corpus_dir=tmp_path / "corpus"))
    assert failing["outcome"] is Outcome.FAILED and failing["counterexample"] is None
    assert failing["counterexample_error"] == "the failing case could not be stored: OSError: [Errno 28] No space " \
                                              "left on device"

    def broken_isolation_reason(item, settings):
        raise RuntimeError("the isolation policy broke")

    monkeypatch.setattr(engine_run, "isolation_reason", broken_isolation_reason)
    record = run_item(ABS, settings)
    assert record["outcome"] is Outcome.ERROR and record["error_kind"] == "harness" and record["item"] == ABS.id
    assert "RuntimeError: the isolation policy broke" in record["error"] and "Traceback" in record["error"]
