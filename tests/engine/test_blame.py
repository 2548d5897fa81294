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
