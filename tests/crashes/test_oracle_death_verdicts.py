"""An oracle death is a verdict on its case: a rerun of the case gets it again, without running.

Heap corruption (torch 2.13's grid_sample backward in float16) kills the CPU oracle on one run of a case
and not on the next; Hypothesis reruns a case (replay, shrinking) and calls a changed verdict a FlakyFailure,
which the run records as a harness error. Remembering the death keeps the case cpu_contract.
"""

from __future__ import annotations

import os

import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.engine.case_fork import check_forked
from torchcts.engine.context import CpuRejects
from torchcts.engine.run import EngineSettings, build_context, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan.items import PlanItem
from torchcts.strategies.samples import Case


@pytest.fixture
def context(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    manifest, _ = load_manifest(path)
    settings = EngineSettings(target=Target("cpu"), manifest=manifest, level=4, max_examples=2, versions=versions())
    return build_context(PlanItem("forward", "abs", "function", "float32", 1), settings)


def case(value: float) -> Case:
    return Case("abs", "function", torch.float32, SampleInput(torch.full((2,), value)), 0, ())


def test_an_oracle_that_died_once_on_a_case_is_not_asked_again(context, tmp_path):
    first_run = tmp_path / "first-run-done"

    def check(c):  # the oracle dies on the case's first run only, as a heap corruption may
        def oracle(cts, sample, target):
            if not first_run.exists():
                first_run.touch()
                os.abort()
            return sample.input.abs()

        context.on_cpu_call(oracle, c.sample)

    for _ in range(3):
        with pytest.raises(CpuRejects, match="the CPU oracle crashed on the case"):
            check_forked(context, check, case(1.0), timeout_s=120)
    assert context.oracle_crashes == 3 and first_run.exists()
    check_forked(context, check, case(2.0), timeout_s=120)  # another case runs: its oracle lives
