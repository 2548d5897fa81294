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

import functools
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
from torchcts.core.outcomes import Outcome
from tests import warm_programs
from tests.generator_refusal import refusing_generators

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
    return warm_programs.run(command, capture_output=True, text=True, cwd=cwd, timeout=600,
                          env=dict(os.environ, TORCHCTS_FAULTY="1"))


@pytest.mark.slow
def test_a_harness_error_on_replay_is_a_harness_error_not_still_failing(suite, tmp_path):
    case = stored(tmp_path / "corpus", "replay_cannot_start", "harness_bug", ())
    replay = replay_cli(case, "cpu", tmp_path, suite)
    out = replay.stdout
    assert replay.returncode == 2, out + replay.stderr
    assert "harness error" in out and "AttributeError" in out and "no verdict about the backend" in out, out
    assert "still failing" not in out.split("torchcts replay:")[0], out
    assert "0 still failing" in out and "1 harness errors" in out, out


@pytest.mark.slow
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
    assert "torch.meta does not exist" in record["reason"], record
    assert "claims only the case's own capability, and only on the device type it was found on" in record["reason"]


# -- the capability a case was found under is claimed on its own device type ---------------------------------

def replay_record(case: Path, device: str, manifest=None) -> dict:
    settings = EngineSettings(target=Target(device), manifest=manifest, level=8, max_examples=1, versions=versions())
    return run_item(replay_items([case])[0], settings)


def fixed_verdict(record: dict):
    (verdict,) = verdicts([dict(record, case=dict(record["case"], status="fixed"))], device=record.get("device"))
    return verdict


@pytest.fixture
def faulty_on():
    from torchcts.testing import faulty

    faulty.enable()
    faulty.disable_bugs()
    return faulty


def test_a_facility_gone_since_the_case_was_found_is_a_regression_not_not_run(faulty_on, tmp_path, monkeypatch):
    """A device_api case found on faulty, replayed there without --manifest after the backend dropped synchronize:
    the case's own capability is claimed, so the missing facility fails (a regression of a fixed case)."""
    case = stored(tmp_path / "corpus", "device_api", "synchronize", (16,))
    assert replay_record(case, "faulty")["outcome"] == Outcome.PASSED
    monkeypatch.delattr(type(torch.faulty), "synchronize")
    record = replay_record(case, "faulty")
    assert record["outcome"] == Outcome.FAILED, record
    assert "torch.faulty has no synchronize" in record["error_line"], record
    verdict = fixed_verdict(record)
    assert verdict.still_failing and verdict.regression
    # on another device type the case claims nothing there: not run, saying why
    on_cpu_type = stored(tmp_path / "cpu-corpus", "device_api", "synchronize", (16,), device_type="cpu")
    elsewhere = replay_record(on_cpu_type, "faulty")
    assert elsewhere["outcome"] == Outcome.RUNTIME_UNAVAILABLE, elsewhere


def test_a_manifest_not_declaring_the_capability_leaves_it_unclaimed(faulty_on, tmp_path, monkeypatch):
    from torchcts.manifest import load_manifest

    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="faulty")
                                          + 'manifest["capabilities"].pop("device_api", None)\n')
    manifest, _ = load_manifest(tmp_path / "manifest.py")
    assert not manifest.declares("device_api")
    case = stored(tmp_path / "corpus", "device_api", "synchronize", (16,))
    monkeypatch.delattr(type(torch.faulty), "synchronize")
    record = replay_record(case, "faulty", manifest)
    assert record["outcome"] == Outcome.RUNTIME_UNAVAILABLE, record


def test_a_device_generator_case_on_a_device_that_cannot_make_one_fails_where_found_not_run_elsewhere(faulty_on,
                                                                                                  tmp_path):
    """A device that cannot make a torch.Generator: a case it names (claimed there) is the backend's error;
    the same case named for CPU and replayed there claims nothing: not run."""
    case = stored(tmp_path / "corpus", "device_generator", "state_round_trip", (64, 1, 2))
    from torchcts.testing.faulty import generators

    if generators.available():  # its compiled part built here: the faulty device makes generators
        assert replay_record(case, "faulty")["outcome"] == Outcome.PASSED
    with refusing_generators():
        record = replay_record(case, "faulty")
    assert record["outcome"] == Outcome.ERROR and record["error_kind"] == "backend", record
    assert fixed_verdict(record).regression
    elsewhere = stored(tmp_path / "cpu-corpus", "device_generator", "state_round_trip", (64, 1, 2), device_type="cpu")
    with refusing_generators():
        assert replay_record(elsewhere, "faulty")["outcome"] == Outcome.RUNTIME_UNAVAILABLE


def test_a_multi_device_case_on_a_device_now_reporting_one_fails(faulty_on, tmp_path, monkeypatch):
    case = stored(tmp_path / "corpus", "multi_device", "guard_placement", (3,))
    assert replay_record(case, "faulty")["outcome"] == Outcome.PASSED
    monkeypatch.setattr(type(torch.faulty), "device_count", lambda self: 1)
    record = replay_record(case, "faulty")
    assert record["outcome"] == Outcome.FAILED, record
    assert "device_count() is 1" in record["error_line"], record


# -- a backend crashing in Python is the backend's, not a harness error ----------------------------------------

def test_a_backend_raising_in_python_while_a_suite_queries_it_still_fails(faulty_on, tmp_path, monkeypatch):
    """guard_alloc reads get_device_properties; the backend's raises (a driver error): still failing, a regression."""
    def broken(self, index=0):
        raise RuntimeError("faulty: device properties query failed (driver error 700)")

    monkeypatch.setattr(type(torch.faulty), "get_device_properties", broken)
    case = stored(tmp_path / "corpus", "guard_alloc", "oom_raises", (2,))
    record = replay_record(case, "faulty")
    assert record["outcome"] == Outcome.ERROR and record["error_kind"] == "backend", record
    assert "driver error 700" in record["error_line"], record
    verdict = fixed_verdict(record)
    assert verdict.still_failing and verdict.regression and not verdict.harness_error


def _raises_in_backend_code():
    raise TypeError("the backend's Python wrapper broke")


def test_an_unexpected_exception_is_the_harnesss_only_when_certainly_torchctss():
    from torchcts.engine.context import HarnessDefect
    from torchcts.engine.outcome import classify

    def raised(call):
        try:
            call()
        except Exception as exc:  # noqa: BLE001
            return exc
        raise AssertionError("did not raise")

    from torchcts.properties.runtime_checks import runtime_module

    own = raised(functools.partial(runtime_module, None))  # TorchCTS's code failing on its own (AttributeError)
    own.__traceback__ = own.__traceback__.tb_next  # as the engine sees it: from TorchCTS's frames down
    assert own.__traceback__.tb_frame.f_code.co_name == "runtime_module"
    ours = classify(own, device_type="faulty")
    assert ours.error_kind == "harness", ours
    backend = classify(raised(_raises_in_backend_code), device_type="faulty")  # a frame outside TorchCTS
    assert backend.error_kind == "backend" and "backend crash in Python" in backend.reason, backend
    torch_error = classify(raised(lambda: torch.empty(-1)), device_type="faulty")  # torch's C++ error, any caller
    assert torch_error.error_kind == "backend", torch_error
    assert classify(HarnessDefect("drew outside its bounds"), device_type="faulty").error_kind == "harness"
    assert classify(raised(_raises_in_backend_code), device_type="cpu").error_kind == "harness"  # no backend runs


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

