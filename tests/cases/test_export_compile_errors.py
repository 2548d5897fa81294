"""The exported script of an errors case found under torch.compile applies the engine's cause rule
(`torchcts.engine.error_cause`): an op's refusal behind torch.compile's wrappers is compared, and a compiler exception
that remains (TorchRuntimeError, BackendCompilerFailed, ... all RuntimeErrors) never conforms. The script's exit
status agrees with the engine's verdict for the same case and backend."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch._dynamo
from torch.testing._internal.common_methods_invocations import op_db

from torchcts.cases.export import export_script
from torchcts.cases.files import new_case, write_case
from torchcts.engine.compile_target import CompileSpec
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan.build import PlanItem
from torchcts.testing import compile_backends as backends


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    root = tmp_path_factory.mktemp("export-compile-errors")
    (root / "manifest.py").write_text(render_template("complete", device_name="cpu")  # the script imports it too
                                      + 'manifest["backend_import"] = "torchcts.testing.compile_backends"\n')
    return load_manifest(root / "manifest.py")[0], root


def engine_record(manifest, op: str, backend: str) -> dict:
    """The errors property's record of `op` (float32) under torch.compile(`backend`, static shapes) on cpu."""
    loaded, root = manifest
    settings = EngineSettings(target=Target("cpu", CompileSpec(backend, "static")), manifest=loaded, level=2,
                              max_examples=5, versions=versions(), corpus_dir=root / "corpus", shrink=False,
                              found={"run_id": "export-compile-errors"})
    return run_item(PlanItem("errors", op, "function", "float32", 2), settings)


def run_script(path: Path, tmp_path: Path, backend: str) -> tuple[int, str]:
    """(exit status, output) of the exported script of the case at `path`, its backend replaced by `backend`."""
    data = json.loads(path.read_text())
    data["backend"] = backend
    case = tmp_path / f"{backend}.json"
    case.write_text(json.dumps(data))
    script = tmp_path / f"repro_{backend}.py"
    script.write_text(export_script(case, None))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow
def test_a_compile_failure_reproduces_and_the_same_case_through_aot_eager_conforms(manifest, tmp_path):
    # index_add's error input: CPU raises RuntimeError when it runs; dynamo traces it, so the backend compiles the
    # graph: torchcts_test_compile_raises fails (BackendCompilerFailed, a RuntimeError), aot_eager refuses as CPU
    failed = engine_record(manifest, "index_add", backends.COMPILE_RAISES)
    assert failed["outcome"] == "failed" and "a compile failure is not the op's refusal" in failed["error"], failed
    path = Path(failed["counterexample"]["path"])
    status, output = run_script(path, tmp_path, backends.COMPILE_RAISES)
    assert status == 1 and "torch.compile failed (BackendCompilerFailed" in output, output[-2000:]  # before: 0
    assert engine_record(manifest, "index_add", "aot_eager")["outcome"] == "passed"
    status, output = run_script(path, tmp_path, "aot_eager")
    assert status == 0 and "rejects the input as CPU does" in output, output[-2000:]


@pytest.mark.slow
def test_a_refusal_torch_compile_wraps_conforms_as_the_engine_says(manifest, tmp_path):
    # adaptive_avg_pool2d's first error input: CPU raises ValueError; compiled, its reference raises it while dynamo
    # traces, wrapped in TorchRuntimeError: the engine compares the ValueError, which conforms
    op = next(o for o in op_db if o.name == "nn.functional.adaptive_avg_pool2d" and o.variant_test_name == "")
    error_input = next(iter(op.error_inputs(torch.device("cpu"))))
    assert error_input.error_type is ValueError
    record = engine_record(manifest, "nn.functional.adaptive_avg_pool2d", "aot_eager")
    assert record["outcome"] == "passed", record  # every error input conforms, this one included
    case = new_case(prop="errors", op=op.name, variant="function", dtype="float32", device_type="cpu",
                    backend="aot_eager", sample=error_input.sample_input, failure={"message": "stored for the test"},
                    found={"torch": torch.__version__}, error_input=("ValueError", error_input.error_regex),
                    compile=CompileSpec("aot_eager", "static").as_json(), backend_import=backends.__name__)
    path, _ = write_case(tmp_path / "corpus", case)
    status, output = run_script(path, tmp_path, "aot_eager")
    assert status == 0 and "rejects the input as CPU does (TorchRuntimeError" in output, output[-2000:]  # before: 1
    status, output = run_script(path, tmp_path, backends.COMPILE_RAISES)  # dynamo raises it before any backend runs
    assert status == 0, output[-2000:]
    assert engine_record(manifest, "nn.functional.adaptive_avg_pool2d", backends.COMPILE_RAISES)["outcome"] == "passed"


# -- a scenario program under torch.compile: CPU's own refusal is not comparable, a compile failure reproduces ------

def overlap_case(tmp_path: Path, kind: str, backend: str) -> Path:
    """A views/overlap_rules case (a 3x3 float32 input, the overlap `kind`) found under torch.compile(`backend`)."""
    from torch.testing._internal.opinfo.core import SampleInput

    case = new_case(prop="views", op="overlap_rules", variant="scenario", dtype="float32", device_type="cpu",
                    backend=backend, sample=SampleInput(torch.ones(3, 3), args=(kind,)),
                    failure={"message": "stored for the test"}, found={"torch": torch.__version__},
                    compile=CompileSpec(backend, "static").as_json(), backend_import=backends.__name__)
    return write_case(tmp_path / "corpus", case)[0]


@pytest.mark.slow
def test_a_scenario_script_tells_cpus_own_refusal_from_a_compile_failure(tmp_path):
    from torchcts.engine.error_cause import find_cause
    from torchcts.engine.programs import cpu_refusal
    from torchcts.properties.suites.views import overlap_rules

    # expand_copy_: CPU's program records RuntimeError; compiled, copy_'s meta refuses while dynamo traces, as it
    # does for CPU under dynamo alone: the engine calls the case unavailable, the script cannot compare it (exit 2)
    expected = overlap_rules(torch.ones(3, 3), "expand_copy_")
    causes = []
    for backend in ("eager", "aot_eager"):
        torch._dynamo.reset()
        with pytest.raises(RuntimeError) as caught:
            torch.compile(overlap_rules, backend=backend, dynamic=False)(torch.ones(3, 3), "expand_copy_")
        causes.append(find_cause(caught.value))
    assert cpu_refusal(expected, causes[1], causes[0]) == "RuntimeError"  # the engine's verdict: unavailable
    status, output = run_script(overlap_case(tmp_path, "expand_copy_", "aot_eager"), tmp_path, "aot_eager")
    assert status == 2 and "ends at its first refusal" in output, output[-2000:]  # before: 1, REPRODUCED
    # self_copy_: CPU accepts; the backend fails to compile the graph: the engine's error, the script reproduces it
    status, output = run_script(overlap_case(tmp_path, "self_copy_", backends.COMPILE_RAISES), tmp_path,
                                backends.COMPILE_RAISES)
    assert status == 1 and "REPRODUCED on cpu: it raises where CPU does not: BackendCompilerFailed" in output, output
