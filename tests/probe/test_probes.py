"""Diagnostic probes (`torchcts.probe`): per dtype and per capability, guarded, written to probes.jsonl and run.json,
and without any effect on the plan or the items' outcomes.

The probe functions run directly on the CPU (and in forked children, where a probe that kills or hangs its
process costs that probe only); whole runs go through `torchcts run` in subprocesses, on the CPU
(`--validation`) and on the tiny backend (tests/backends), whose missing pieces the probes name.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from torchcts.manifest.templates import render_template
from torchcts.manifest.vocabulary import CAPABILITIES
from torchcts.plan.build import PlanItem, capabilities_tested
from torchcts.probe import capabilities as capability_probes
from torchcts.probe.records import FILE_NAME, console_lines, end_lines, probe_run, summary, write_probes
from torchcts.probe.result import FAILED, NO_PROBE, OK, STATUSES, ProbeResult, StepFailed, Steps, difference, error_line
from torchcts.probe.runner import probes_for, run_probe, run_probes, value_dtype
from torchcts.results.writer import read_records
from tests import warm_programs

BACKENDS = Path(__file__).resolve().parent.parent / "backends"
EVERY_DTYPE = [("dtype", name) for name in ("bool", "uint8", "int64", "uint64", "float16", "bfloat16", "float32",
                                              "complex32", "complex128", "float8_e4m3fn", "float8_e8m0fnu")]
# What the CPU itself has not got: no accelerator to pin memory for, no events, one device.
CPU_LACKS = {"pinned_memory", "events", "multi_device"}


# -- the probes themselves ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def harness_threads():
    """One intra-op thread, as every TorchCTS front end sets: forked probes then never meet a busy OpenMP pool."""
    from torchcts.engine.run import HARNESS_THREADS

    before = torch.get_num_threads()
    torch.set_num_threads(HARNESS_THREADS)
    yield
    torch.set_num_threads(before)


def test_every_capability_of_the_vocabulary_has_a_probe():
    assert list(capability_probes.CAPABILITY_PROBES) == list(CAPABILITIES)


@pytest.mark.parametrize("fork", [False, True], ids=["in-process", "forked"])
def test_capability_probes_cover_every_capability_on_cpu(fork):
    probes = [("capability", name) for name in CAPABILITIES]
    results = run_probes("cpu", probes, fork=fork)
    assert [(r.kind, r.name) for r in results] == probes
    assert all(r.status in STATUSES for r in results)
    by_name = {r.name: r for r in results}
    # a process where the faulty device registered has an accelerator: CPU tensors can be pinned for it
    lacks = CPU_LACKS - {"pinned_memory"} if torch._C._get_privateuse1_backend_name() == "faulty" else CPU_LACKS
    assert {name for name, r in by_name.items() if r.status == FAILED} == lacks, \
        {name: r.problem() for name, r in by_name.items() if r.status == FAILED}
    assert by_name["custom_quantized_decode"].status == NO_PROBE
    assert by_name["custom_quantized_decode"].error.startswith("no probe: ")
    assert by_name["multi_device"].step == "torch.cpu.device_count()"
    assert "multi_device needs two" in by_name["multi_device"].error
    assert by_name["events"].problem().startswith("events: event.record() fails: RuntimeError: ")


def test_dtype_probes_pass_on_cpu_for_every_kind_of_dtype():
    results = run_probes("cpu", EVERY_DTYPE, fork=False)
    assert [r.status for r in results] == [OK] * len(EVERY_DTYPE), [r.problem() for r in results]
    assert all(r.duration_s >= 0 for r in results)


def test_a_capability_probe_leaves_the_cpu_generator_and_the_deterministic_flag_as_they_were():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    for name in ("rng", "rng_distributions", "deterministic"):
        assert run_probe("cpu", ("capability", name)).status == OK
    assert torch.equal(torch.rand(3), expected)
    assert not torch.are_deterministic_algorithms_enabled()


def test_a_wrong_value_fails_its_step_with_both_values():
    steps = Steps()
    with pytest.raises(StepFailed) as failed:
        steps.same("copy to CPU", torch.tensor([1.0, -0.0]), torch.tensor([1.0, 0.0]))
    assert failed.value.step == "copy to CPU" and "values differ" in failed.value.error
    assert difference(torch.tensor([float("nan")]), torch.tensor([float("nan")])) is None
    assert "dtype" in difference(torch.tensor([1]), torch.tensor([1.0]))


def test_an_exception_in_a_step_is_a_failed_result_naming_the_step(monkeypatch):
    def broken(env):
        env.steps.run("make a thing", lambda: torch.empty(2).view(3))

    monkeypatch.setitem(capability_probes.CAPABILITY_PROBES, "streams", broken)
    result = run_probe("cpu", ("capability", "streams"))
    assert (result.status, result.step) == (FAILED, "make a thing")
    assert result.error.startswith("RuntimeError: shape '[3]' is invalid")
    assert result.problem() == f"streams: make a thing fails: {result.error}"


def test_the_error_line_drops_the_dispatcher_paragraph_and_terminal_colours():
    dispatcher = NotImplementedError(
        "Could not run 'aten::zero_' with arguments from the 'tiny' backend. This could be because the operator "
        "doesn't exist for this backend, or was omitted during the selective/custom build process.\n"
        "'aten::zero_' is only available for these backends: [CPU, Meta, ...].\n\nCPU: registered at ...")
    assert error_line(dispatcher) == "NotImplementedError: Could not run 'aten::zero_' with arguments from the 'tiny' backend."
    assert error_line(RuntimeError("\x1b[1mbold\x1b[0m text")) == "RuntimeError: bold text"
    unpickling = RuntimeError("Weights only load failed. Two options, \x1b[1mif you trust it\x1b[0m.\n\t(1) advice\n"
                              "\tWeightsUnpickler error: Unsupported global: GLOBAL my.Tensor was not allowed. Please ...")
    assert error_line(unpickling) == "RuntimeError: Weights only load failed: Unsupported global: GLOBAL my.Tensor was not allowed"
    assert len(error_line(ValueError("x" * 1000))) == 300


def _kill_myself(env):
    env.steps.run("segfault on purpose", lambda: os.kill(os.getpid(), signal.SIGSEGV))


def _hang(env):
    env.steps.run("wait forever", lambda: time.sleep(3600))


def test_a_probe_that_kills_its_process_costs_that_probe_only(monkeypatch):
    monkeypatch.setitem(capability_probes.CAPABILITY_PROBES, "streams", _kill_myself)
    probes = [("capability", "inference"), ("capability", "streams"), ("capability", "training")]
    results = run_probes("cpu", probes, fork=True)
    assert [(r.name, r.status) for r in results] == [("inference", OK), ("streams", FAILED), ("training", OK)]
    crashed = results[1]
    assert crashed.step == "segfault on purpose"
    assert crashed.error.startswith("crashed: ") and "SIGSEGV" in crashed.error


def test_a_probe_that_hangs_is_stopped_at_the_batch_timeout(monkeypatch):
    monkeypatch.setitem(capability_probes.CAPABILITY_PROBES, "streams", _hang)
    (result,) = run_probes("cpu", [("capability", "streams")], fork=True, batch_timeout_s=2)
    assert (result.status, result.step) == (FAILED, "wait forever")
    assert result.error.startswith("timed out: still running after")


def test_the_probes_of_a_run_follow_its_claims_and_plan(write_manifest):
    from torchcts.manifest import load_manifest

    manifest, _ = load_manifest(write_manifest("manifest = dict(BASE, supported_dtypes={'float32': True, "
                                               "'int64': True, 'bfloat16': 'add', 'bool': False})"))
    assert probes_for(manifest) == [("dtype", "int64"), ("dtype", "bfloat16"), ("dtype", "float32"),
                                    ("capability", "inference"), ("capability", "device_api")]
    assert probes_for(manifest, {torch.float32}) == [("dtype", "float32"), ("capability", "inference"),
                                                     ("capability", "device_api")]
    assert probes_for(manifest, {torch.float32}, {"inference", "training"}) == [("dtype", "float32"),
                                                                              ("capability", "inference")]
    assert value_dtype(manifest) == torch.float32


def test_a_plan_tests_its_properties_capabilities_what_they_also_prove_needs_and_fp8():
    from torchcts.plan import registry

    forward = registry.get("forward")
    assert forward.also_proves  # forward's cases carry special values: it also proves ieee754
    items = [PlanItem("forward", "abs", forward.variant, "float32", forward.level)]
    assert capabilities_tested(items) == {forward.capability, *forward.also_proves}
    needing = next((spec, scenario, need) for spec in registry.load() if spec.scenario
                   for scenario, need in getattr(spec.items, "needs", {}).items())
    spec, scenario, need = needing
    assert need in capabilities_tested([PlanItem(spec.name, scenario, "scenario", spec.items.dtypes[0], spec.level)])
    assert "fp8" in capabilities_tested(items + [PlanItem("forward", "abs", forward.variant, "float8_e4m3fn", 1)])
    assert capabilities_tested([]) == set()


# -- records, summary, console -------------------------------------------------------------------------


def test_probes_jsonl_the_summary_and_the_console_lines(tmp_path):
    results = [ProbeResult("dtype", "float32", OK, duration_s=0.01),
               ProbeResult("dtype", "bfloat16", FAILED, "copy to device", "NotImplementedError: no copy", 0.02),
               ProbeResult("capability", "custom_quantized_decode", NO_PROBE, None, "no probe: none declared")]
    path = write_probes(tmp_path, results)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [ProbeResult.from_json(line) for line in lines] == results
    assert set(lines[1]) == {"kind", "name", "status", "step", "error", "duration_s"}
    assert summary(results) == {"total": 3, "failed": 1,
                                "problems": ["bfloat16: copy to device fails: NotImplementedError: no copy"]}
    console = console_lines(results)
    assert console[0].startswith("torchcts: probes: 1 ok, 1 failed, 1 without a probe")
    assert console[1] == "torchcts:   bfloat16: copy to device fails: NotImplementedError: no copy"
    assert end_lines(summary(results), tmp_path)[0].startswith("torchcts: probes: 1 of 3 failed")
    assert end_lines({"total": 3, "failed": 0, "problems": []}, tmp_path) == []


def test_probe_run_writes_the_file_and_can_be_turned_off(tmp_path):
    said = []
    found = probe_run("cpu", None, ["float32"], tmp_path, fork=False, say=said.append, environ={})
    assert found == {"total": 1, "failed": 0, "problems": []}
    assert (tmp_path / FILE_NAME).is_file() and said
    off = tmp_path / "off"
    off.mkdir()
    assert probe_run("cpu", None, ["float32"], off, fork=False, environ={"TORCHCTS_PROBES": "off"}) is None
    assert not (off / FILE_NAME).exists()


# -- in a run -------------------------------------------------------------------------------------------


def _torchcts(cwd: Path, *argv: str, probes: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(BACKENDS), os.environ.get("PYTHONPATH")])))
    env.pop("TORCHCTS_PROBES", None)
    if probes is not None:
        env["TORCHCTS_PROBES"] = probes
    return warm_programs.run([sys.executable, "-m", "torchcts", *argv], cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, check=False)


def _run_folder(results: Path) -> Path:
    (run_json,) = results.glob("*/run.json")
    return run_json.parent


@pytest.mark.slow
def test_a_validation_run_writes_probes_that_all_pass(tmp_path):
    manifest = tmp_path / "manifest.py"
    text = render_template("training", device_name="cpu")
    for name in CPU_LACKS:  # the training template claims pinned memory, which a CPU-only torch cannot pin
        text = re.sub(rf'("{name}":\s+)True', r"\1False", text)
    manifest.write_text(text)
    done = _torchcts(tmp_path, "run", "--manifest", str(manifest), "--validation", "--dtype", "float32", "--ops",
                     "^abs$", "--max-examples", "2", "--level", "1", "--results-dir", "results", "--no-report")
    assert done.returncode == 0, done.stdout[-3000:]
    folder = _run_folder(tmp_path / "results")
    probes = [json.loads(line) for line in (folder / FILE_NAME).read_text().splitlines()]
    assert probes[0] == {**probes[0], "kind": "dtype", "name": "float32", "status": "ok"}
    declared = set(json.loads((folder / "run.json").read_text())["environment"]["capabilities"])
    ran = [PlanItem(r["property"], r["op"], r["variant"], r["dtype"], 1) for r in read_records(folder)
           if r["outcome"] == "passed"]
    probed = {p["name"] for p in probes if p["kind"] == "capability"}
    assert ran and probed == capabilities_tested(ran) & declared  # the declared capabilities its items test
    assert "inference" in probed and {"training", "serialization"} <= declared - probed
    assert all(p["status"] == "ok" for p in probes), probes
    assert json.loads((folder / "run.json").read_text())["probes"] == {"total": len(probes), "failed": 0,
                                                                      "problems": []}
    assert "torchcts: probes: " in done.stdout


@pytest.mark.slow
def test_collect_only_runs_no_probe(tmp_path):
    manifest = tmp_path / "manifest.py"
    manifest.write_text(render_template("smoke", device_name="cpu"))
    done = _torchcts(tmp_path, "run", "--manifest", str(manifest), "--validation", "--ops", "^abs$",
                     "--results-dir", "results", "--no-report", "--", "--collect-only")
    folder = _run_folder(tmp_path / "results")
    assert not (folder / FILE_NAME).exists(), done.stdout[-2000:]
    assert json.loads((folder / "run.json").read_text()).get("probes") is None


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """The same derandomized run on the tiny backend three times: probes forked (default), in the run's own
    process, and off. Level 6 for device_api's synchronize scenario: a run probes the capabilities its items test,
    and the tiny backend's device_api probe fails."""
    cwd = tmp_path_factory.mktemp("tiny")
    manifest = cwd / "manifest.py"
    manifest.write_text(render_template("smoke", device_name="tiny", backend_import="tiny_backend"))
    runs = {}
    for mode in ("default", "in-process", "off"):
        results = cwd / f"results-{mode}"
        done = _torchcts(cwd, "run", "--manifest", str(manifest), "--device", "tiny", "--ops",
                         "^(abs|add|sum|zeros_like|synchronize)$", "--level", "6", "--max-examples", "3",
                         "--results-dir", str(results),
                         "--corpus-dir", str(cwd / f"corpus-{mode}"), "--no-report",
                         probes=None if mode == "default" else mode)
        folder = _run_folder(results)
        runs[mode] = {"done": done, "folder": folder, "records": read_records(folder),
                      "run": json.loads((folder / "run.json").read_text())}
    return runs


@pytest.mark.slow
def test_the_tiny_backend_probes_name_its_failures(tiny_runs):
    run = tiny_runs["default"]
    probes = {p["name"]: p for p in map(json.loads, (run["folder"] / FILE_NAME).read_text().splitlines())}
    assert set(probes) == {"float32", "inference", "device_api"}
    assert probes["float32"]["status"] == probes["inference"]["status"] == "ok"
    device_api = probes["device_api"]
    assert device_api["status"] == "failed" and device_api["step"] == "torch.tiny.synchronize()"
    problem = f"device_api: torch.tiny.synchronize() fails: {device_api['error']}"
    assert run["run"]["probes"] == {"total": 3, "failed": 1, "problems": [problem]}
    assert problem in run["done"].stdout  # at the start and in the summary
    assert tiny_runs["in-process"]["run"]["probes"] == run["run"]["probes"]


@pytest.mark.slow
def test_failing_probes_change_neither_the_plan_nor_the_outcomes(tiny_runs):
    def outcomes(run):
        return {r["item"]: (r["outcome"], r.get("reason"), tuple(r.get("fingerprints") or ()), r.get("error_kind"))
                for r in run["records"]}

    off = tiny_runs["off"]
    assert off["run"].get("probes") is None and not (off["folder"] / FILE_NAME).exists()
    assert {o[0] for o in outcomes(off).values()} >= {"passed", "error", "deselected"}
    assert any(o[3] == "missing_kernel" for o in outcomes(off).values())
    for mode in ("default", "in-process"):
        assert outcomes(tiny_runs[mode]) == outcomes(off), mode
        assert tiny_runs[mode]["run"]["counts"] == off["run"]["counts"]
        assert tiny_runs[mode]["done"].returncode == off["done"].returncode == 1  # the missing kernels


@pytest.mark.slow
def test_a_probe_that_fails_only_because_it_was_forked_runs_again_in_process():
    """After a backward on a second device type in the parent, torch refuses autograd in forked children
    (a limit of fork, not of the device): the training probe must still say ok, not failed."""
    code = ("import torch, torchcts.testing.faulty\n"
            "x = torch.ones(2, device='faulty', requires_grad=True); (x * x).sum().backward()\n"
            "from torchcts.probe.runner import run_probes\n"
            "result = run_probes('cpu', [('capability', 'training')], fork=True)[0]\n"
            "print(result.status, result.error)\n")
    done = warm_programs.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == OK, done.stdout
