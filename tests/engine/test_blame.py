"""Blame the leg (`torchcts.engine.blame`): a compiled item's stored case replayed under eager, aot_eager and the
backend, static then dynamic, names the first layer that fails it; with the in-test backends of
`torchcts.testing.compile_backends` and real torch.compile calls on CPU.

No registered backend can make the real `eager` (dynamo alone) or `aot_eager` legs wrong, since neither goes through
it: the `dynamo` and `aot` verdicts are checked by swapping which backend stands for that leg (`References`).
"""

from __future__ import annotations

import attrs
import pytest

from torchcts.cases.files import load_case
from torchcts.engine import blame
from torchcts.engine.compile_target import CompileSpec
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan.build import PlanItem
from torchcts.results.files import RECORD
from torchcts.testing import compile_backends as backends

ADD = PlanItem("forward", "add", "function", "float32", 1)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    path = tmp_path_factory.mktemp("blame") / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    return load_manifest(path)[0]


def settings_for(manifest, corpus, backend, shape_mode, **changes):
    return EngineSettings(target=Target("cpu", CompileSpec(backend, shape_mode=shape_mode)), manifest=manifest,
                          level=1, max_examples=5, versions=versions(), corpus_dir=corpus, **changes)


def failing_case(manifest, corpus, backend, shape_mode):
    """(the stored case's path, the settings it failed under) of `add` under the backend; not shrunk (each shrink
    step is a recompile: a second each)."""
    settings = settings_for(manifest, corpus, backend, shape_mode, shrink=False)
    record = run_item(ADD, settings)
    assert record["outcome"] in ("failed", "error"), record
    return record["counterexample"]["path"], settings


@pytest.fixture(scope="module")
def wrong_add_case(manifest, tmp_path_factory):
    return failing_case(manifest, tmp_path_factory.mktemp("corpus"), backends.WRONG_ADD, "static")


def legs_of(found):
    return [(leg.backend, leg.shape_mode, leg.outcome) for leg in found.legs]


def test_a_backend_that_changes_a_result_is_blamed_on_the_backend(wrong_add_case):
    path, settings = wrong_add_case
    found = blame.blame_case(path, settings)
    assert found.leg == blame.BACKEND and found.reason is None
    assert legs_of(found) == [("eager", "static", "passed"), ("aot_eager", "static", "passed"),
                              (backends.WRONG_ADD, "static", "failed")]


def test_a_backend_that_raises_while_compiling_is_blamed_on_the_backend(manifest, tmp_path):
    path, settings = failing_case(manifest, tmp_path, backends.COMPILE_RAISES, "automatic")
    found = blame.blame_case(path, settings)
    assert found.leg == blame.BACKEND
    assert legs_of(found)[-1] == (backends.COMPILE_RAISES, "static", "error")
    assert "torchcts_test_compile_raises" in found.legs[-1].error_line


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@pytest.mark.parametrize("shape_mode", ["dynamic", "automatic"])
def test_a_backend_wrong_only_with_symbolic_sizes_is_blamed_on_its_dynamic_shapes(manifest, tmp_path, shape_mode):
    """The automatic run fails after a recompile made the sizes symbolic; a fresh static compile of the case passes."""
    path, settings = failing_case(manifest, tmp_path, backends.DYNAMIC_ONLY, shape_mode)
    found = blame.blame_case(path, settings)
    assert found.leg == blame.BACKEND_DYNAMIC_ONLY
    assert legs_of(found) == [("eager", "static", "passed"), ("aot_eager", "static", "passed"),
                              (backends.DYNAMIC_ONLY, "static", "passed"), (backends.DYNAMIC_ONLY, "dynamic", "failed"),
                              ("eager", "dynamic", "passed"), ("aot_eager", "dynamic", "passed")]


def test_the_same_backend_in_a_static_run_passes(manifest, tmp_path):
    record = run_item(ADD, settings_for(manifest, tmp_path, backends.DYNAMIC_ONLY, "static"))
    assert record["outcome"] == "passed"


@pytest.mark.parametrize("references, leg, tried", [
    (blame.References(dynamo=backends.WRONG_ADD), blame.DYNAMO, 1),
    (blame.References(aot=backends.WRONG_ADD), blame.AOT, 2),
])
def test_the_first_leg_that_fails_is_blamed_and_the_later_ones_do_not_run(wrong_add_case, references, leg, tried):
    path, settings = wrong_add_case
    found = blame.blame_case(path, settings, references)
    assert found.leg == leg and len(found.legs) == tried and found.legs[-1].outcome == "failed"


def test_a_case_no_leg_fails_again_is_not_reproduced(wrong_add_case):
    """The wrong_add case blamed for a static aot_eager run: eager, aot_eager and aot_eager again all pass."""
    path, settings = wrong_add_case
    found = blame.blame_case(path, attrs.evolve(settings, target=Target("cpu", CompileSpec("aot_eager", "static"))))
    assert found.leg == blame.NOT_REPRODUCED and "no leg failed" in found.reason
    assert [leg.outcome for leg in found.legs] == ["passed"] * 3


def test_a_case_that_cannot_be_replayed_is_not_blamed(wrong_add_case, tmp_path):
    _, settings = wrong_add_case
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    found = blame.blame_case(broken, settings)
    assert found.leg == blame.NOT_BLAMED and "could not replay the case" in found.reason


def test_a_failing_compiled_item_carries_its_leg_in_the_record_and_the_stored_case(manifest, tmp_path):
    settings = settings_for(manifest, tmp_path, backends.WRONG_ADD, "static", shrink=False,
                            found={"run_id": "blame-record"})
    record = run_item(ADD, settings)
    assert record["outcome"] == "failed" and record["leg"] == blame.BACKEND and "leg_reason" not in record
    assert [leg["outcome"] for leg in record["legs"]] == ["passed", "passed", "failed"]
    case = load_case(record["counterexample"]["path"])
    assert case.failure["leg"] == blame.BACKEND and case.failure["legs"] == record["legs"]
    assert RECORD.problem(record) is None  # the record's blame fields are what results files allow


def test_past_the_runs_budget_a_failure_is_not_blamed(manifest, tmp_path):
    settings = settings_for(manifest, tmp_path, backends.WRONG_ADD, "static", shrink=False, blame_cases=1,
                            found={"run_id": "blame-budget"})
    first, second = run_item(ADD, settings), run_item(PlanItem("forward", "add", "function", "float64", 1), settings)
    assert first["leg"] == blame.BACKEND
    assert second["outcome"] == "failed" and second["leg"] == blame.NOT_BLAMED and second["legs"] == []
    assert "budget of 1 blamed cases" in second["leg_reason"]


def test_an_eager_run_blames_nothing(manifest, tmp_path):
    from torchcts.testing import faulty

    faulty.disable_bugs()
    faulty.enable_bugs("storage_offset_ignored")
    try:
        settings = EngineSettings(target=Target("faulty"), manifest=manifest, level=1, max_examples=20,
                                  versions=versions(), corpus_dir=tmp_path, shrink=False)
        record = run_item(PlanItem("forward", "abs", "function", "float32", 1), settings)
    finally:
        faulty.disable_bugs()
    assert record["outcome"] == "failed" and "leg" not in record


def test_an_error_line_names_its_cause_type():
    assert blame.cause_type("torch.compile(b) raised ValueError where CPU did not: bad") == "ValueError"
    assert blame.cause_type("RuntimeError: shape mismatch") == "RuntimeError"
    assert blame.cause_type(None) is None
    failed, error = blame.FailureKind("failed"), blame.FailureKind("error", "backend", "ValueError")
    assert failed.shown_by(blame.FailureKind("failed")) and not failed.shown_by(blame.FailureKind("timed_out"))
    assert error.shown_by(blame.FailureKind("error", "backend", "ValueError"))
    assert not error.shown_by(blame.FailureKind("error", "backend", "IndexError"))
    assert not error.shown_by(blame.FailureKind("error", "missing_kernel", "ValueError"))


def test_a_leg_that_raises_where_the_run_compared_values_fails_differently(wrong_add_case):
    """A reference leg that refuses the graph is no evidence that dynamo computes the wrong value: not blamed."""
    path, settings = wrong_add_case
    found = blame.blame_case(path, settings, blame.References(dynamo=backends.COMPILE_RAISES))
    assert found.leg == blame.NOT_BLAMED
    assert legs_of(found) == [(backends.COMPILE_RAISES, "static", "error")]
    assert found.reason.startswith(f"leg {backends.COMPILE_RAISES} (static shapes) fails differently: error (backend")
    assert "the run's failure was failed" in found.reason


def test_a_leg_failing_with_the_same_error_kind_and_cause_is_blamed(manifest, tmp_path):
    path, settings = failing_case(manifest, tmp_path, backends.COMPILE_RAISES, "static")
    found = blame.blame_case(path, settings, blame.References(dynamo=backends.COMPILE_RAISES))
    assert found.leg == blame.DYNAMO and legs_of(found) == [(backends.COMPILE_RAISES, "static", "error")]


def test_a_stuck_leg_compile_is_a_timed_out_leg_not_a_hung_run(wrong_add_case):
    """Each leg runs in its own process, killed past the item timeout; a timed-out leg is not the run's failure."""
    from torchcts.isolation.policy import IsolationPolicy

    path, settings = wrong_add_case
    settings = attrs.evolve(settings, isolation=IsolationPolicy(timeout_s=5))  # the backend sleeps an hour
    found = blame.blame_case(path, settings, blame.References(dynamo=backends.COMPILE_SLEEPS))
    assert found.leg == blame.NOT_BLAMED and legs_of(found) == [(backends.COMPILE_SLEEPS, "static", "timed_out")]
    assert "fails differently: timed_out" in found.reason


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_isolated_items_are_blamed_in_the_run_s_process_within_one_budget(tmp_path, start):
    """Under --subprocess-per-test each item runs in a forked child or a spawned worker (and so do the legs); the
    budget is counted here, so it holds. A spawned worker registers the test backends by the manifest's
    backend_import."""
    from torchcts.isolation.policy import IsolationPolicy
    from torchcts.isolation.spawn import close_pools

    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="cpu")
                                          + 'manifest["backend_import"] = "torchcts.testing.compile_backends"\n')
    manifest = load_manifest(tmp_path / "manifest.py")[0]
    settings = settings_for(manifest, tmp_path, backends.WRONG_ADD, "static", shrink=False, blame_cases=1,
                            found={"run_id": f"blame-isolated-{start}"},
                            isolation=IsolationPolicy(everything=True, start=start))
    try:
        first, second = run_item(ADD, settings), run_item(PlanItem("forward", "add", "function", "float64", 1),
                                                          settings)
    finally:
        close_pools()
    assert first["isolated"] == second["isolated"] == "--subprocess-per-test"
    assert first["isolated_by"] == second["isolated_by"] == start
    assert first["outcome"] == "failed" and first["leg"] == blame.BACKEND
    assert [leg["outcome"] for leg in first["legs"]] == ["passed", "passed", "failed"]
    assert second["outcome"] == "failed" and second["leg"] == blame.NOT_BLAMED
    assert "budget of 1 blamed cases" in second["leg_reason"]
    assert load_case(first["counterexample"]["path"]).failure["leg"] == blame.BACKEND


def test_a_timed_out_compiled_item_is_not_blamed_and_says_why(manifest, tmp_path):
    from torchcts.isolation.policy import IsolationPolicy

    settings = settings_for(manifest, tmp_path, backends.COMPILE_SLEEPS, "static", found={"run_id": "blame-hang"},
                            isolation=IsolationPolicy(everything=True, timeout_s=5))  # the backend sleeps an hour
    record = run_item(ADD, settings)
    assert record["outcome"] == "timed_out" and record["leg"] == blame.NOT_BLAMED and record["legs"] == []
    assert "the item timed_out" in record["leg_reason"] and "no stored case" in record["leg_reason"]
    assert RECORD.problem(record) is None


def test_torchcts_own_error_is_no_layers_fault(manifest, tmp_path):
    settings = settings_for(manifest, tmp_path, "aot_eager", "static")
    record = {"outcome": "error", "error_kind": "harness", "error_line": "TypeError: a TorchCTS bug",
              "counterexample": {"path": str(tmp_path / "never-read.json")}}
    fields = blame.blame_failure(record, settings)
    assert fields["leg"] == "not-blamed" and "TorchCTS's (harness)" in fields["leg_reason"]


def test_a_leg_never_runs_longer_than_the_cap(manifest, tmp_path):
    from torchcts.engine.blame import LEG_TIMEOUT_CAP_S, leg_timeout_s

    assert leg_timeout_s(settings_for(manifest, tmp_path, "aot_eager", "static")) <= LEG_TIMEOUT_CAP_S
