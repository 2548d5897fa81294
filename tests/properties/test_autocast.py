"""The autocast suite (`torchcts.properties.suites.autocast`): ops under torch.autocast follow the declared policy
(torch's published one by default, the manifest's `autocast_policy` where given); the faulty device's autocast
follows CUDA's; the seeded policy bugs are caught."""

from __future__ import annotations

import attrs
import pytest
import torch

from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest.vocabulary import AUTOCAST_OPS
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.suites.autocast import SCENARIOS, autocast_call, nested_autocast
from torchcts.testing.faulty.bug_model import AUTOCAST_STEP
from torchcts.testing.faulty.suite_bugs.autocast import BUGS
from tests.properties.conftest import complete_manifest, item_for

BUG = {bug.name: bug for bug in BUGS}


def test_the_suite_is_registered_with_the_autocast_capability():
    registry.load()
    spec = registry.get("autocast")
    assert (spec.capability, spec.level, spec.items.scenarios, spec.items.dtypes) == (
        "autocast", 4, SCENARIOS, ("float16", "bfloat16"))
    assert set(AUTOCAST_OPS) < set(SCENARIOS)


def test_the_oracle_casts_as_the_class_says():
    a, b = torch.randn(2, 3), torch.randn(3, 2).bfloat16()
    options = {"op": "mm", "autocast_dtype": "bfloat16", "options": {}}
    assert autocast_call(a, b, **options, policy="lower_precision").dtype == torch.bfloat16
    assert autocast_call(a, b, **options, policy="float32").dtype == torch.float32
    assert autocast_call(a.half(), b.t(), **{**options, "op": "cat", "options": {"dim": 0}},
                         policy="promote").dtype == torch.float32  # float16 with bfloat16 promotes to float32
    with pytest.raises(RuntimeError):
        autocast_call(a, b, **options, policy="unchanged")  # mixed dtypes left alone: mm refuses them
    assert autocast_call(a, b, **options).dtype == torch.bfloat16  # CPU's own autocast: mm in lower precision


def test_nesting_reports_each_depth():
    results, dtypes, enabled_after = nested_autocast(torch.randn(2, 3), torch.randn(3, 2), "bfloat16")
    assert dtypes == ["torch.bfloat16", "torch.float32", "torch.bfloat16", "torch.bfloat16", "torch.float32"]
    assert enabled_after is False


@pytest.mark.parametrize("scenario", ["addmm", "softmax", "cat", "nesting", "backward"])
def test_a_scenario_passes_on_cpu_and_clean_faulty(run_suite, scenario):
    for dtype in ("float16", "bfloat16"):
        assert run_suite("autocast", scenario, dtype, max_examples=5)["outcome"] is Outcome.PASSED
        assert run_suite("autocast", scenario, dtype, device="faulty", max_examples=5)["outcome"] is Outcome.PASSED


def test_a_declared_policy_is_what_the_device_is_held_to(tmp_path):
    """CPU's autocast leaves softmax alone; a manifest declaring it float32 makes CPU fail on it, and the
    faulty device (CUDA's policy: float32) pass."""
    item = item_for("autocast", "softmax", "bfloat16")

    def run(device):
        manifest = attrs.evolve(complete_manifest(tmp_path, device), autocast_policy={"softmax": "float32"})
        settings = EngineSettings(target=Target(device, None), manifest=manifest, level=8, max_examples=10,
                                  versions=versions(), shrink=False)
        return run_item(item, settings)

    record = run("cpu")
    assert record["outcome"] is Outcome.FAILED and "dtype" in str(record), record
    assert run("faulty")["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug, scenario", [("autocast_skips_baddbmm", "baddbmm"),
                                           ("autocast_float32_ops_stay_bfloat16", "log_softmax")])
def test_each_seeded_bug_is_detected(run_suite, tmp_path, bug, scenario):
    record = run_suite("autocast", scenario, "bfloat16", device="faulty", bugs=(bug,), max_examples=15,
                       corpus_dir=tmp_path)
    assert record["outcome"] is Outcome.FAILED, record
    assert record["counterexample"]["path"], record


def test_the_bugs_fire_only_under_their_condition():
    skips, stays = BUG["autocast_skips_baddbmm"], BUG["autocast_float32_ops_stay_bfloat16"]
    assert skips.fires(AUTOCAST_STEP, ("baddbmm", "lower_precision"), {})
    assert not skips.fires(AUTOCAST_STEP, ("addmm", "lower_precision"), {})
    from torchcts.testing import faulty  # noqa: F401 - registers the device

    for dtype, fires in ((torch.float16, False), (torch.bfloat16, True)):
        with torch.autocast("faulty", dtype=dtype):
            assert stays.fires(AUTOCAST_STEP, ("softmax", "float32"), {}) is fires
            assert not stays.fires(AUTOCAST_STEP, ("mm", "lower_precision"), {})


def test_a_stored_elementwise_operand_must_have_the_inputs_shape():
    """atan2's and addcmul's operands are drawn the input's shape: (16, 1) with (1, 16) would broadcast."""
    from torch.testing._internal.opinfo.core import SampleInput

    from torchcts.properties.suites.autocast import PARAMS

    kwargs = {"op": "addcmul", "autocast_dtype": "bfloat16", "options": {}}
    column, row = torch.zeros(16, 1), torch.zeros(1, 16)
    refused = PARAMS["addcmul"].problem(SampleInput(column, args=(column, row), kwargs=kwargs))
    assert refused is not None and "each operand has the input's shape" in refused[1], refused
    assert PARAMS["addcmul"].problem(SampleInput(column, args=(column, column), kwargs=kwargs)) is None
    atan2 = {**kwargs, "op": "atan2"}
    assert PARAMS["atan2"].problem(SampleInput(column, args=(row,), kwargs=atan2)) is not None
    assert PARAMS["mm"].problem(SampleInput(column, args=(row,), kwargs={**kwargs, "op": "mm"})) is None
