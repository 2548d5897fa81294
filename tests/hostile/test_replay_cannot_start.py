"""Cases whose replay cannot start are never counted as the backend's failures.

A suite of this test's own (registered through a manifest's `custom_test_dirs`, as a user's would be) has two
scenarios: `harness_bug`, whose check fails in TorchCTS-side code before any case runs (an AttributeError on a None,
like the device_api suite's on a replay without a manifest), and `cpu_refuses`, a runtime program whose stored size
is within the declared bounds but one CPU refuses. `torchcts replay` says `harness error` for the first and
`unreadable` (CPU, the reference, refuses the stored values) for the second, exits 2, and counts neither as still
failing. A runtime case replayed on a device type with no runtime module, with no manifest claiming the capability,
is not run, saying why. Record-level: `verdicts` never counts a harness, setup or case-file error as failing or
as a regression.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.files import new_case, write_case
from torchcts.cases.replay import verdicts
from torchcts.cases.replay_items import replay_items
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest.templates import render_template
from torchcts.outcomes import Outcome

SUITE = '''
import torch
from hypothesis import strategies as st

from torchcts.cases.bounds import CaseParams, Ints
from torchcts.plan.registry import ScenarioItems, register_property
from torchcts.properties.runtime_checks import invariant_check, observe
from torchcts.strategies import Case
from torchcts.strategies.sample_walk import sample_input

SIZE = Ints(-4, 4)  # a careless declaration: CPU refuses the negative sizes it lets through


def allocates(device, size):
    made = torch.empty(size, device=device)
    yield observe("the allocation has the stored size", made.numel() == size, made.numel())


@register_property("replay_cannot_start", capability="device_api", level=1,
                   items=ScenarioItems(("harness_bug", "cpu_refuses"), ("float32",),
                                       params={"harness_bug": CaseParams(),
                                               "cpu_refuses": CaseParams({"size": SIZE})}))
def test_replay_cannot_start(cts):
    if cts.item.op == "harness_bug":
        claims = None
        claims.device_count  # TorchCTS-side code failing before any case: no verdict about the backend
    cases = st.builds(lambda n: Case("cpu_refuses", "scenario", cts.dtype, sample_input(torch.zeros(1), args=(n,)),
                                     0, transforms=(f"size {n}",)), SIZE.strategy())
    cts.run(cases, invariant_check(cts, allocates))
'''


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """A folder with the suite and a CPU manifest naming it in custom_test_dirs; the manifest's path."""
    folder = tmp_path_factory.mktemp("replay-cannot-start")
    (folder / "suites").mkdir()
    (folder / "suites" / "test_replay_cannot_start.py").write_text(SUITE)
    path = folder / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu") + '\nmanifest["custom_test_dirs"] = ["suites"]\n')
    return path


def stored(folder: Path, prop: str, op: str, args: tuple, device_type: str = "faulty") -> Path:
    """A corpus case of `prop`'s scenario `op` storing `args` next to the placeholder input."""
    case = new_case(prop=prop, op=op, variant="scenario", dtype="float32", device_type=device_type, backend=None,
                    sample=SampleInput(torch.zeros(1), args=args), failure={"outcome": "failed", "message": "stored"},
                    found={}, description=f"{op} {list(args)}")
    return write_case(folder, case)[0]


def replay_cli(case: Path, device: str, cwd: Path, manifest: Path | None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torchcts", "replay", str(case), "--device", device,
               "--results-dir", str(cwd / "results")] + (["--manifest", str(manifest)] if manifest else [])
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=600,
                          env=dict(os.environ, TORCHCTS_FAULTY="1"))


def test_a_harness_error_on_replay_is_a_harness_error_not_still_failing(suite, tmp_path):
    case = stored(tmp_path / "corpus", "replay_cannot_start", "harness_bug", ())
    replay = replay_cli(case, "cpu", tmp_path, suite)
    out = replay.stdout
    assert replay.returncode == 2, out + replay.stderr
    assert "harness error" in out and "AttributeError" in out and "no verdict about the backend" in out, out
    assert "still failing" not in out.split("torchcts replay:")[0], out
    assert "0 still failing" in out and "1 harness errors" in out, out


def test_stored_values_cpu_refuses_make_the_case_unreadable_on_cpu(suite, tmp_path):
    case = stored(tmp_path / "corpus", "replay_cannot_start", "cpu_refuses", (-3,))
    replay = replay_cli(case, "cpu", tmp_path, suite)
    out = replay.stdout
    assert replay.returncode == 2, out + replay.stderr
    line = next(line for line in out.splitlines() if line.startswith("unreadable"))
    assert str(case) in line and "inputs.args: CPU, the reference, refuses the stored values: RuntimeError" in line
    assert "UnreadableCase" not in line and "CaseFileError" not in line, line
    assert "0 still failing" in out and "1 unreadable" in out, out


def test_a_value_cpu_refuses_in_a_drawn_cpu_run_is_a_harness_error_not_the_backends(suite):
    """Outside a replay, CPU refusing what the suite drew is TorchCTS's error (its strategy), never a backend's."""
    from torchcts.manifest import load_manifest
    from torchcts.plan import registry
    from torchcts.plan.build import PlanItem

    manifest, _ = load_manifest(suite)
    registry.load(manifest.custom_test_dirs)
    settings = EngineSettings(target=Target("cpu"), manifest=manifest, level=8, max_examples=30, versions=versions())
    record = run_item(PlanItem("replay_cannot_start", "cpu_refuses", "scenario", "float32", 1), settings)
    assert record["outcome"] == Outcome.ERROR and record["error_kind"] == "harness", record
    assert "RuntimeError" in record["error_line"] and "where CPU did not" not in record["error_line"], record


def test_a_runtime_case_on_a_device_type_without_a_runtime_module_is_not_run_and_says_why(tmp_path):
    """torch.meta does not exist: with no manifest claiming device_api the replay is runtime_unavailable, naming it."""
    case = stored(tmp_path / "corpus", "device_api", "synchronize", (16,))
    settings = EngineSettings(target=Target("meta"), manifest=None, level=8, max_examples=1, versions=versions())
    record = run_item(replay_items([case])[0], settings)
    assert record["outcome"] == Outcome.RUNTIME_UNAVAILABLE, record
    assert "torch.meta does not exist" in record["reason"] and "claims no capability" in record["reason"], record


@pytest.mark.parametrize("kind", ["harness", "setup"])
def test_verdicts_never_count_torchctss_own_errors_as_failing_or_regressions(kind):
    record = {"item": "replay::x", "outcome": "error", "error_kind": kind, "error": "AttributeError: boom",
              "case": {"path": "", "status": "fixed", "unreadable": None}}
    (verdict,) = verdicts([record])
    assert verdict.harness_error and not verdict.still_failing and not verdict.regression


def test_verdicts_name_a_case_refused_once_its_replay_began_unreadable():
    record = {"item": "replay::x", "outcome": "error", "error_kind": "case_file",
              "error_line": "UnreadableCase: c.json: inputs.args: CPU, the reference, refuses the stored values: X",
              "case": {"path": "c.json", "status": "open", "unreadable": None}}
    (verdict,) = verdicts([record])
    assert verdict.unreadable == "inputs.args: CPU, the reference, refuses the stored values: X"
    assert not verdict.still_failing and not verdict.harness_error


def test_verdicts_still_count_the_backends_errors():
    record = {"item": "replay::x", "outcome": "error", "error_kind": "backend", "error": "faulty raised X",
              "case": {"path": "", "status": "fixed", "unreadable": None}}
    (verdict,) = verdicts([record])
    assert verdict.still_failing and verdict.regression and not verdict.harness_error

