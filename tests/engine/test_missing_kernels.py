"""Missing kernels are one finding each: recognised from real torch errors, not shrunk, stored once per
overload; every failing record has an `error_line`; warnings go to the record, not the terminal."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import warnings
from pathlib import Path

import attrs
import pytest
import torch
from hypothesis import strategies as st

from torchcts.engine import item_warnings, missing_kernels
from torchcts.engine.missing_kernels import MissingKernel
from torchcts.engine.outcome import first_line
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.isolation.policy import CaseIsolation, IsolationPolicy
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan.build import PlanItem
from tests import warm_programs

REPO = Path(__file__).resolve().parents[2]
GEQRF = MissingKernel("aten::geqrf", "Meta")


def raised(run) -> BaseException:
    try:
        run()
    except Exception as exc:  # noqa: BLE001 - the exception torch raised is what is under test
        return exc
    raise AssertionError("expected an exception")


def geqrf_on_meta(*_):
    """A real missing kernel in torch 2.13: geqrf has no Meta kernel and no fake impl."""
    return torch.geqrf(torch.ones(2, 2, device="meta"))


# -- recognising the real messages ---------------------------------------------------------------

def test_a_meta_tensor_op_without_a_meta_kernel_is_a_missing_kernel():
    exc = raised(geqrf_on_meta)
    assert type(exc) is NotImplementedError
    assert missing_kernels.find(exc) == GEQRF
    assert missing_kernels.find(RuntimeError("while running the op")) is None
    try:  # what a wrapper (torch.compile, a backend's own layer) raises from it is still named
        try:
            geqrf_on_meta()
        except NotImplementedError as inner:
            raise RuntimeError("backend wrapper failed") from inner
    except RuntimeError as outer:
        assert missing_kernels.find(outer) == GEQRF
    try:  # a backend that handles the missing kernel and rejects the input itself has refused it properly
        try:
            geqrf_on_meta()
        except NotImplementedError:
            raise ValueError("geqrf: the input must be a batch of matrices")  # noqa: B904 - implicit context
    except ValueError as rejection:
        assert rejection.__context__ is not None and missing_kernels.find(rejection) is None


def test_torch_library_ops_without_device_kernels_are_missing_kernels():
    library = torch.library.Library("torchcts_mk_test", "DEF")
    library.define("bar(Tensor x) -> Tensor")
    library.impl("bar", lambda x: x.clone(), "CPU")
    exc = raised(lambda: torch.ops.torchcts_mk_test.bar(torch.ones(2, device="meta")))
    assert missing_kernels.find(exc) == MissingKernel("torchcts_mk_test::bar", "Meta")

    @torch.library.custom_op("torchcts_mk_test::foo", mutates_args=())
    def foo(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    exc = raised(lambda: foo(torch.ones(2, device="meta")))
    assert missing_kernels.find(exc) == MissingKernel("torchcts_mk_test::foo", "Meta")


def test_a_torch_dispatch_backend_returning_not_implemented_is_a_missing_kernel():
    class Unfinished(torch.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    tensor = torch.Tensor._make_wrapper_subclass(Unfinished, (3,), dtype=torch.float32)
    assert missing_kernels.find(raised(tensor.zero_)) == MissingKernel("aten::zero_", "Python")
    out = raised(lambda: torch.add(tensor, tensor, out=tensor))
    assert missing_kernels.find(out) == MissingKernel("aten::add.out", "Python")


def test_an_overrideable_op_left_to_the_backend_is_a_missing_kernel_of_the_device():
    x, weight = torch.ones(1, 1, 4), torch.ones(1, 1, 2)
    exc = raised(lambda: torch.ops.aten.convolution_overrideable(x, weight, None, [1], [0], [1], False, [0], 1))
    assert type(exc) is NotImplementedError  # torch's own default kernel, run for real
    assert missing_kernels.find(exc, "xla") == MissingKernel("aten::convolution_overrideable", "XLA")
    assert missing_kernels.find(exc) is None  # its message names no key: without the device, not a finding
    assert missing_kernels.device_key("cuda") == "CUDA" and missing_kernels.device_key("meta") == "Meta"


# The dispatcher's and MPS's messages as torch 2.13 prints them (c10 OperatorEntry::reportError,
# aten/src/ATen/mps/MPSFallback.mm); the PrivateUse1 form is produced for real in the tiny backend test.
DISPATCHER = ("Could not run 'aten::{op}' with arguments from the '{key}' backend. This could be because the operator "
              "doesn't exist for this backend, or was omitted during the selective/custom build process (if using "
              "custom build). If you are a Facebook employee using PyTorch on mobile, please visit "
              "https://fburl.com/ptmfixes for possible resolutions. 'aten::{op}' is only available for these "
              "backends: [CPU, Meta, BackendSelect, Python].\n\nCPU: registered at "
              "/__w/pytorch/pytorch/build/aten/src/ATen/RegisterCPU_2.cpp:4799 [kernel]\n")
MPS = ("The operator 'aten::_linalg_eigh.eigenvalues' is not currently implemented for the MPS device. If you want "
       "this op to be considered for addition please comment on https://github.com/pytorch/pytorch/issues/141287 "
       "and mention use-case, that resulted in missing op as well as commit hash 2736b3f. As a temporary fix, you "
       "can set the environment variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op.")


@pytest.mark.parametrize("exc, expected", [
    (NotImplementedError(DISPATCHER.format(op="zero_", key="CUDA")), MissingKernel("aten::zero_", "CUDA")),
    (NotImplementedError(DISPATCHER.format(op="add.out", key="XLA")), MissingKernel("aten::add.out", "XLA")),
    (NotImplementedError(DISPATCHER.format(op="mul.Tensor", key="SparsePrivateUse1")),
     MissingKernel("aten::mul.Tensor", "SparsePrivateUse1")),
    (NotImplementedError(MPS), MissingKernel("aten::_linalg_eigh.eigenvalues", "MPS")),
    # a kernel registered for that very key raised it: the dispatcher did not, so it is not missing
    (NotImplementedError(DISPATCHER.format(op="add.Tensor", key="CPU")), None),
    # the dispatcher's words under another type, or a kernel's own NotImplementedError: not a missing kernel
    (RuntimeError(DISPATCHER.format(op="zero_", key="CUDA")), None),
    (NotImplementedError("the faulty device does not hold strided nested tensors"), None),
    (NotImplementedError(), None),
])
def test_message_forms_name_the_kernel_only_under_their_types(exc, expected):
    assert missing_kernels.find(exc) == expected


def test_overload_and_key_spellings():
    assert missing_kernels.dispatcher_name("aten.zero_.default") == "aten::zero_"
    assert missing_kernels.dispatcher_name("aten.add.out") == "aten::add.out"
    assert missing_kernels.canonical_key("AutogradPrivateUse1") == "AutogradPrivateUse1"
    assert missing_kernels.canonical_key("no_such_key") == "no_such_key"
    assert GEQRF.describe() == "missing kernel aten::geqrf (Meta)"


def test_error_line_is_the_first_meaningful_line_without_the_dispatcher_listing():
    text = ("BackendError: tiny raised NotImplementedError where CPU did not: "
            + DISPATCHER.format(op="zero_", key="tiny"))
    assert first_line(text) == ("BackendError: tiny raised NotImplementedError where CPU did not: Could not run "
                                "'aten::zero_' with arguments from the 'tiny' backend.")
    assert first_line("\n\n  Traceback (most recent call last):\n  File x\nValueError: deep") == "ValueError: deep"
    assert len(first_line("x" * 1000)) == 300 and first_line("") is None


# -- the engine: not shrunk, the same record wherever the case runs ----------------------------------

@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    path = tmp_path_factory.mktemp("missing_kernels") / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    manifest, _ = load_manifest(path)
    return EngineSettings(target=Target("cpu"), manifest=manifest, level=1, max_examples=20, versions=versions())


@attrs.frozen
class EveryCaseForked:
    """An isolation policy that runs every case of every item in its own forked child."""

    def reason(self, item):
        return None

    def case_isolation(self, item):
        return CaseIsolation(60.0, "every case forked (test)", rule="test#0", fork=True)


def failing_from_third_case(device_run):
    """A scenario check drawing integers: the oracle answers, the device runs `device_run` from the 3rd case on."""
    def test_probe(cts):
        def check(case):
            cts.on_cpu_call(lambda c, s, target: s, case)
            if cts.examples >= 3:  # counted before the case runs, in this process or the case's child
                cts.on_device_call(device_run, case)

        cts.run(st.integers(0, 1000), check)

    return test_probe


def test_a_missing_kernel_stops_the_item_at_the_first_case_that_hits_it(settings, scenario):
    item = scenario("mk_probe_stops", failing_from_third_case(geqrf_on_meta))
    record = run_item(item, settings)
    assert record["outcome"] is Outcome.ERROR and record["error_kind"] == "missing_kernel"
    assert record["missing_kernel"] == {"overload": "aten::geqrf", "dispatch_key": "Meta"}
    assert record["error_line"] == "missing kernel aten::geqrf (Meta)"
    assert "attempted to run this operator with Meta tensors" in record["error"]
    assert record["examples"] == 3 and len(record["fingerprints"]) == 3  # no shrinking, no final replay
    assert record["reason"] == "the backend has no kernel for aten::geqrf (Meta)"

    def unrelated(*_):
        raise NotImplementedError("tiny: no float64 kernels yet")

    other = run_item(scenario("mk_probe_unrelated", failing_from_third_case(unrelated)), settings)
    assert other["outcome"] is Outcome.ERROR and other["error_kind"] == "backend" and "missing_kernel" not in other
    assert other["error_line"] == "cpu raised NotImplementedError where CPU did not: tiny: no float64 kernels yet"
    assert other["examples"] > 3  # any other error is shrunk (and replayed) as before


def test_a_forked_case_and_an_isolated_item_carry_the_same_record(settings, scenario):
    item = scenario("mk_probe_forked", failing_from_third_case(geqrf_on_meta))
    fields = ("outcome", "reason", "error_kind", "error_line", "missing_kernel", "examples", "fingerprints")
    here = run_item(item, settings)
    case_forked = run_item(item, attrs.evolve(settings, isolation=EveryCaseForked()))
    item_forked = run_item(item, attrs.evolve(settings, isolation=IsolationPolicy(everything=True)))
    assert "isolated_cases" in case_forked and item_forked["isolated"] == "--subprocess-per-test"
    assert {k: case_forked[k] for k in fields} == {k: here[k] for k in fields}
    assert {k: item_forked[k] for k in fields} == {k: here[k] for k in fields}


def test_error_kinds_of_other_errors(settings, scenario):
    def test_broken_check(cts):
        raise ValueError("the check itself broke")

    harness = run_item(scenario("mk_probe_harness", test_broken_check), settings)
    assert harness["error_kind"] == "harness" and harness["error_line"] == "ValueError: the check itself broke"
    setup = run_item(PlanItem("forward", "no_such_op", "function", "float32", 1), settings)
    assert setup["outcome"] is Outcome.ERROR and setup["error_kind"] == "setup" and setup["error_line"]
    passed = run_item(PlanItem("forward", "abs", "function", "float32", 1), attrs.evolve(settings, max_examples=2))
    assert passed["outcome"] is Outcome.PASSED
    assert not {"error_kind", "error_line", "missing_kernel", "warnings"} & passed.keys()


def test_one_corpus_case_per_missing_overload_across_items(tmp_path):
    manifest_path = tmp_path / "manifest.py"
    manifest_path.write_text(render_template("complete", device_name="meta"))
    manifest, _ = load_manifest(manifest_path)
    meta = EngineSettings(target=Target("meta"), manifest=manifest, level=1, max_examples=5, versions=versions(),
                          corpus_dir=tmp_path / "corpus")
    records = [run_item(PlanItem("forward", op, "function", "float32", 1), meta)
               for op in ("linalg.lstsq", "linalg.lstsq.grad_oriented")]
    for record in records:
        assert record["outcome"] is Outcome.ERROR and record["examples"] == 1
        assert record["missing_kernel"] == {"overload": "aten::linalg_lstsq.out", "dispatch_key": "Meta"}
    first, second = (r["counterexample"] for r in records)
    assert first["new"] is True and second["new"] is False
    assert first["path"] == second["path"] and first["fingerprint"] == second["fingerprint"]
    assert [p.name for p in (tmp_path / "corpus").iterdir()] == ["missing-kernel-meta-Meta-aten.linalg_lstsq.out.json"]
    case = json.loads(Path(first["path"]).read_text())
    assert case["failure"]["missing_kernel"] == {"overload": "aten::linalg_lstsq.out", "dispatch_key": "Meta"}
    assert case["found"]["item"] == "forward::linalg.lstsq::function::float32"


# -- warnings -------------------------------------------------------------------------------------

def test_warnings_go_to_the_record_not_the_terminal(settings, scenario):
    def draw_and_warn(value):
        warnings.warn("drawn while drawing", UserWarning)
        return value

    def test_warns(cts):
        def check(case):
            cts.on_cpu_call(lambda c, s, target: torch.tensor(torch.ones(1)), case)  # "To copy construct ..."
            cts.on_device_call(lambda c, s, target: s, case)

        cts.run(st.integers(0, 9).map(draw_and_warn), check)

    item = scenario("mk_probe_warns", test_warns)
    for isolation in (None, EveryCaseForked()):
        with warnings.catch_warnings(record=True) as leaked:
            warnings.simplefilter("always")
            record = run_item(item, attrs.evolve(settings, max_examples=4, isolation=isolation))
        assert leaked == []
        assert record["outcome"] is Outcome.PASSED and record["examples"] == 4
        kept = record["warnings"]
        assert kept["count"] >= 8  # one torch warning per case, one per draw (drawing may retry)
        assert "UserWarning: drawn while drawing" in kept["messages"]
        assert any(m.startswith("UserWarning: To copy construct from a tensor") for m in kept["messages"])
        assert len(kept["messages"]) == 2


def test_the_warning_log_is_bounded():
    with item_warnings.capture() as log:
        for n in range(30):
            warnings.warn(f"message {n} " + "x" * 600)
        warnings.warn("message 0 " + "x" * 600)
    assert log.count == 31 and len(log.messages) == item_warnings.MAX_MESSAGES
    assert all(len(m) == item_warnings.MAX_CHARS for m in log.messages)


# -- the faulty device's seeded missing kernel ----------------------------------------------------------

def test_the_faulty_missing_kernel_bug_raises_the_dispatchers_error(tmp_path):
    from torchcts.testing import faulty

    x = torch.ones(3, device="faulty")
    assert torch.trunc(x).device.type == "faulty"
    faulty.enable_bugs("missing_kernel")
    try:
        for run, overload in ((lambda: torch.trunc(x), "aten::trunc"), (lambda: x.trunc_(), "aten::trunc_"),
                              (lambda: torch.trunc(x, out=torch.empty(3, device="faulty")), "aten::trunc.out")):
            exc = raised(run)
            assert type(exc) is NotImplementedError
            assert str(exc).startswith(f"Could not run '{overload}' with arguments from the 'faulty' backend.")
            assert missing_kernels.find(exc) == MissingKernel(overload, "PrivateUse1")
        assert (torch.floor(x) == 1).all()  # only its overloads
    finally:
        faulty.disable_bugs()


# -- end to end: a user's PrivateUse1 backend ------------------------------------------------------------

TINY_PLUS = '''
"""The tiny backend and two more kernels: one raising its own NotImplementedError, one that warns."""
import warnings

import torch
import tiny_backend
from tiny_backend import kernel, unwrap, wrap


@kernel("floor")
def floor(self):
    raise NotImplementedError("tiny: floor is not implemented yet")


@kernel("trunc")
def trunc(self):
    warnings.warn("tiny: trunc runs on the host")
    return wrap(torch.trunc(unwrap(self)))
'''


@pytest.mark.slow
def test_a_user_privateuse1_backend_groups_missing_kernels(tmp_path):
    (tmp_path / "tiny_plus.py").write_text(textwrap.dedent(TINY_PLUS))
    manifest = tmp_path / "manifest.py"
    manifest.write_text(render_template("complete", device_name="tiny", backend_import="tiny_plus"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "backends"), str(tmp_path)]),
               TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    env.pop("TORCHCTS_FAULTY", None)
    command = [sys.executable, "-m", "torchcts", "run", "--device", "tiny", "--manifest", str(manifest),
               "--level", "3", "--dtype", "float32", "--ops", "^(zero_|sin|floor|trunc|nn.functional.conv1d)$",
               "--property", "forward", "--property", "out", "--max-examples", "3", "--derandomize",
               "--results-dir", str(tmp_path / "results"), "--corpus-dir", str(tmp_path / "corpus"), "--no-report"]
    done = warm_programs.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    (folder,) = [p for p in (tmp_path / "results").iterdir() if (p / "records.jsonl").exists()]
    records = {r["item"]: r for r in map(json.loads, (folder / "records.jsonl").read_text().splitlines())}
    missing = [r for r in records.values() if r.get("error_kind") == "missing_kernel"]
    zero = [r for r in missing if r["missing_kernel"] == {"overload": "aten::zero_", "dispatch_key": "PrivateUse1"}]
    assert "forward::zero_::function::float32" in {r["item"] for r in zero} and len(zero) >= 2  # out= zeroes buffers
    for record in missing:
        assert record["examples"] == 1 and record["outcome"] == "error"
        assert record["error_line"] == f"missing kernel {record['missing_kernel']['overload']} (PrivateUse1)"
        assert "registered at" not in record["error"]
    assert sum(r["counterexample"]["new"] for r in zero) == 1 and len({r["counterexample"]["path"] for r in zero}) == 1
    conv = records["forward::nn.functional.conv1d::function::float32"]  # torch's default for other backends
    assert conv["missing_kernel"] == {"overload": "aten::convolution_overrideable", "dispatch_key": "PrivateUse1"}
    overloads = {r["missing_kernel"]["overload"] for r in missing}
    corpus = sorted(p.name for p in (tmp_path / "corpus").glob("missing-kernel-*.json"))
    assert len(corpus) == len(overloads) and "missing-kernel-tiny-PrivateUse1-aten.zero_.json" in corpus
    floor = records["forward::floor::function::float32"]
    assert floor["error_kind"] == "backend" and "missing_kernel" not in floor
    assert floor["error_line"] == ("tiny raised NotImplementedError where CPU did not: "
                                   "tiny: floor is not implemented yet")
    trunc = records["forward::trunc::function::float32"]
    assert trunc["outcome"] == "passed"
    assert trunc["warnings"]["messages"] == ["UserWarning: tiny: trunc runs on the host"]
    assert "tiny: trunc runs on the host" not in done.stdout + done.stderr
