"""The compile target: one CompileSpec for every command, any backend dynamo knows, explicit shape modes."""

from __future__ import annotations

import json

import pytest
import torch
import torch._dynamo

from torchcts.cases.files import CaseFileError, load_case
from torchcts.engine.compile_target import (
    CompileSpec, UnknownCompileBackend, backend_spelling_problem, check_backend, run_compile_spec, settings_problem,
)
from torchcts.engine.run import replay_target
from torchcts.engine.targets import Target, reset_compiled
from torchcts.manifest.model import CompileSettings
from tests import warm_programs

SEEN_SYMBOLIC: list[bool] = []


def recording_backend(gm, example_inputs):
    """Runs the graph as traced; notes whether dynamo gave it symbolic sizes (a dynamic-shape graph)."""
    values = [node.meta.get("example_value") for node in gm.graph.nodes if node.op == "placeholder"]
    SEEN_SYMBOLIC.append(any(isinstance(v, torch.SymInt) or (isinstance(v, torch.Tensor) and any(
        isinstance(s, torch.SymInt) for s in v.shape)) for v in values))
    return gm.forward


def _sizes_seen(spec: CompileSpec, sizes=(2, 3, 4, 5)) -> list[bool]:
    reset_compiled()
    SEEN_SYMBOLIC.clear()
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == "neg")
    target = Target("cpu", spec)
    for n in sizes:
        sample = type("S", (), {"input": torch.ones(n), "args": (), "kwargs": {}})()
        assert torch.equal(target.call(op, "function", sample), -torch.ones(n))
    return list(SEEN_SYMBOLIC)


def test_static_shapes_never_turn_dynamic_after_a_recompile():
    name = "tests.engine.test_compile_target:recording_backend"
    assert _sizes_seen(CompileSpec(name, shape_mode="static")) == [False] * 4  # a specialised compile per size


def test_dynamic_shapes_are_symbolic_from_the_first_case():
    name = "tests.engine.test_compile_target:recording_backend"
    assert _sizes_seen(CompileSpec(name, shape_mode="dynamic"))[:1] == [True]


def test_automatic_shapes_turn_dynamic_after_the_first_size_change():
    seen = _sizes_seen(CompileSpec("tests.engine.test_compile_target:recording_backend"))
    assert seen[0] is False and True in seen  # torch's default: the history decides


def test_the_spec_round_trips_through_json_and_says_what_it_is():
    spec = CompileSpec("inductor", shape_mode="static", options=(("a", 1),), fullgraph=True)
    assert CompileSpec.from_json(json.loads(json.dumps(spec.as_json()))) == spec
    assert spec.dynamic is False and CompileSpec("x", shape_mode="dynamic").dynamic is True
    assert spec.describe() == "torch.compile(inductor, static shapes, fullgraph, options=a=1)"
    assert Target("cpu", "aot_eager").compile == CompileSpec("aot_eager")  # a bare name: default settings


@pytest.mark.parametrize("data", [
    {"backend": "x;import os"}, {"backend": 3}, {"backend": "inductor", "shape_mode": "sometimes"},
    {"backend": "inductor", "options": {"k": [1]}}, {"backend": "inductor", "options": {f"k{i}": 1 for i in range(65)}},
    {"backend": "inductor", "mode": "a b"}, {"backend": "inductor", "fullgraph": "yes"}, {"backend": "i", "evil": 1},
    {"backend": "inductor", "options": {"k": "x" * 300}}, [], {"shape_mode": "static"},
])
def test_malformed_settings_are_refused_with_the_field(data):
    assert settings_problem(data, backend_required=True) is not None
    with pytest.raises(ValueError):
        CompileSpec.from_json(data) if isinstance(data, dict) else CompileSpec.from_json({"backend": data})


def test_an_unknown_backend_is_one_line_listing_the_known_ones():
    with pytest.raises(UnknownCompileBackend) as raised:
        check_backend("no_such_backend")
    message = str(raised.value)
    assert "\n" not in message and "no_such_backend" in message and "inductor" in message and "aot_eager" in message
    check_backend("aot_eager")  # an in-tree one
    check_backend("tests.engine.test_compile_target:recording_backend")
    for broken in ("no_such_module_xyz:fn", "tests.engine.test_compile_target:SEEN_SYMBOLIC"):
        with pytest.raises(UnknownCompileBackend) as raised:
            check_backend(broken)
        assert "\n" not in str(raised.value)


def test_a_backend_registered_with_dynamo_is_accepted_by_name():
    name = "torchcts_test_recording"
    if name not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(recording_backend, name=name)
    check_backend(name)
    assert backend_spelling_problem(name) is None and backend_spelling_problem("a b") is not None


def test_the_command_line_overrides_the_manifest_section_for_its_own_backend_only():
    section = CompileSettings(backend="openvino", dynamic=False, mode="default", options=(("device", "CPU"),))
    assert run_compile_spec(section, None, None) == CompileSpec("openvino", "static", "default", (("device", "CPU"),))
    assert run_compile_spec(section, None, "dynamic").shape_mode == "dynamic"
    assert run_compile_spec(section, "inductor", None) == CompileSpec("inductor")  # another backend: its defaults
    assert run_compile_spec(CompileSettings(), None, None) is None
    assert run_compile_spec(None, "eager", "static") == CompileSpec("eager", "static")


def _case_file(tmp_path, **changes):
    from torchcts.cases.files import new_case, save_case

    case = new_case(prop="forward", op="neg", variant="function", dtype="float32", device_type="cpu",
                    backend="inductor", sample=type("S", (), {"input": torch.ones(2), "args": (), "kwargs": {}})(),
                    failure={"outcome": "failed"}, found={}, compile=CompileSpec("inductor", "dynamic").as_json())
    data = {**case.as_json(), **changes}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(data))
    return path


def test_a_case_keeps_its_shape_mode_and_replays_in_it(tmp_path):
    case = load_case(_case_file(tmp_path))
    assert case.shape_mode == "dynamic" and "backend" not in case.compile and not case.fullgraph
    run_target = Target("cpu", CompileSpec("inductor", "static"))
    assert replay_target(run_target, case, None).compile.shape_mode == "dynamic"  # the mode it failed in
    assert replay_target(run_target, case, "automatic").compile.shape_mode == "automatic"  # --shape-mode wins
    assert replay_target(Target("cpu"), case, None) == Target("cpu")  # an eager replay stays eager
    old = load_case(_case_file(tmp_path, compile=None))
    assert old.shape_mode == "automatic"  # stored before shape modes: torch's default then


@pytest.mark.parametrize("changes, field", [
    ({"backend": "x; import os"}, "backend"), ({"backend": "os.system:__call__"}, "backend"),
    ({"backend": "__main__:f"}, "backend"), ({"compile": {"shape_mode": "never"}}, "compile"),
    ({"compile": {"backend": "eager"}}, "compile"), ({"compile": {"options": {"k": {"nested": 1}}}}, "compile"),
    ({"backend": None}, "compile"), ({"compile": "static"}, "compile"),
])
def test_a_hostile_case_names_the_field(tmp_path, changes, field):
    with pytest.raises(CaseFileError) as raised:
        load_case(_case_file(tmp_path, **changes))
    assert f": {field}: " in str(raised.value) and "\n" not in str(raised.value)


def test_an_exported_compile_case_carries_its_settings_as_literals(tmp_path):
    from torchcts.cases.export import export_script

    script = export_script(_case_file(tmp_path, compile={"shape_mode": "static", "options": {"k": 1.5}},
                                      backend="tests.engine.test_compile_target:recording_backend"), None)
    assert "importlib.import_module('tests.engine.test_compile_target').recording_backend" in script
    assert "dynamic=False" in script and "1.5" not in script  # an untrusted case's options never reach a script


def test_a_case_never_brings_its_own_backend_options_to_a_replay(tmp_path):
    """A backend option can name a program to run (inductor's cpp.cxx): a replay keeps the run's settings."""
    hostile = load_case(_case_file(tmp_path, compile={"shape_mode": "static", "options": {"cpp.cxx": "./evil.sh"}}))
    run_spec = CompileSpec("inductor", "automatic", options=(("max_autotune", False),))
    spec = replay_target(Target("cpu", run_spec), hostile, None).compile
    assert spec == run_spec.evolve(shape_mode="static")  # the case's shape mode, the run's options


def test_settings_torch_compile_refuses_are_refused_at_the_start():
    from torchcts.engine.compile_target import check_settings

    for spec in (CompileSpec("inductor", mode="nosuch"), CompileSpec("inductor", options=(("nosuch_option", 1),))):
        with pytest.raises(UnknownCompileBackend) as raised:
            check_settings(spec)
        assert "\n" not in str(raised.value) and "refuses" in str(raised.value)
    check_settings(CompileSpec("inductor", mode="max-autotune"))
    assert settings_problem({"backend": "inductor", "mode": "default", "options": {"a": 1}}) is not None


@pytest.mark.slow
def test_run_refuses_an_unknown_backend_in_one_line_exit_2(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    manifest = Path(__file__).resolve().parents[2] / "manifests" / "targets" / "aot_eager.py"
    done = warm_programs.run([sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--manifest", str(manifest),
                           "--compile", "no_such_backend", "--ops", "^neg$", "--results-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if "no_such_backend" in line]
    assert len(lines) == 1 and "known: " in lines[0] and "inductor" in lines[0]
    assert not list(tmp_path.glob("*/records.jsonl"))  # nothing ran, no run folder of records


def test_a_compiled_run_isolates_every_item():
    from torchcts.isolation.policy import COMPILED_ITEM, IsolationPolicy
    from torchcts.plan.items import PlanItem

    item = PlanItem("forward", "add", "function", "float32", 1)
    assert IsolationPolicy(compiled=True).reason(item) == COMPILED_ITEM
    assert IsolationPolicy(compiled=True, can_fork=False).reason(item) == COMPILED_ITEM  # then a spawned worker
    assert IsolationPolicy().reason(item) is None


def test_suppressed_compile_errors_are_turned_back_on():
    """TORCHDYNAMO_SUPPRESS_ERRORS would run a failing frame eagerly (a pass that tested eager)."""
    from torchcts.testing import compile_backends as backends

    # dynamo's own patch, not monkeypatch: undoing a setattr on its config module deletes the entry for the rest of
    # the process ("torch._dynamo.config.suppress_errors does not exist" in later tests on the same worker)
    with torch._dynamo.config.patch(suppress_errors=True):
        _compile_with_errors_suppressed(backends)


def _compile_with_errors_suppressed(backends):
    reset_compiled()
    target = Target("cpu", CompileSpec(backends.COMPILE_RAISES, "static"))
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == "neg")
    sample = type("S", (), {"input": torch.ones(2), "args": (), "kwargs": {}})()
    with pytest.raises(Exception) as raised:
        target.call(op, "function", sample)
    assert "BackendCompilerFailed" in type(raised.value).__name__ or "compile" in str(raised.value).lower()
    assert torch._dynamo.config.suppress_errors is False
