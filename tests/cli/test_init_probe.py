"""`torchcts init --probe`: a draft manifest whose claims match what the device has.

Against the tiny backend (tests/backends, in subprocesses): the draft is marked as a draft, validates,
drops what failed its probe, skips the ops whose items hit a missing kernel (each naming a kernel the
backend really lacks), and a run of the same selection with it has no missing-kernel error. The
probe is limited to a few ops (--ops) to keep the module to seconds; tests/run/test_first_run.py
probes the whole smoke template.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchcts.cli.main import cli
from torchcts.results.writer import read_records
from tests import warm_programs

BACKENDS = Path(__file__).resolve().parent.parent / "backends"
# abs, add and mul have kernels; sum, zeros_like and ones_like (aten::zero_ through zeros_like, aten::fill_
# is there) and exp do not: some of them reach the same missing kernel
OPS = r"^(abs|add|mul|sum|zeros_like|new_zeros|exp)$"


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(BACKENDS), os.environ.get("PYTHONPATH")])))
    env.pop("TORCHCTS_PROBES", None)
    return env


def _torchcts(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return warm_programs.run([sys.executable, "-m", "torchcts", *argv], cwd=cwd, env=_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600, check=False)


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict:
    """`init --probe` on a few ops of the smoke template, then `run` with the draft on the same ops."""
    cwd = tmp_path_factory.mktemp("init_probe")
    draft = cwd / "draft.py"
    init = _torchcts(cwd, "init", "--probe", "--device", "tiny", "--backend-import", "tiny_backend", "--ops", OPS,
                     "--output", str(draft))
    assert init.returncode == 0, init.stderr[-3000:]
    check = _torchcts(cwd, "check-manifest", "--manifest", str(draft))
    run = _torchcts(cwd, "run", "--manifest", str(draft), "--device", "tiny", "--ops", OPS, "--results-dir", "results",
                    "--no-report")
    (run_json,) = (cwd / "results").glob("*/run.json")
    kernels = warm_programs.run(  # which overloads the backend has a kernel for, asked of the dispatcher
        [sys.executable, "-c", "import json, sys, torch, tiny_backend; print(json.dumps({o: torch._C."
         "_dispatch_has_kernel_for_dispatch_key(o, 'PrivateUse1') for o in sys.argv[1:]}))",
         "aten::abs", "aten::zero_", "aten::sum.IntList_out", "aten::exp.out"],
        env=_env(), text=True, capture_output=True, check=True)
    return {"cwd": cwd, "init": init, "draft": draft, "text": draft.read_text(), "check": check, "run": run,
            "folder": run_json.parent, "kernels": json.loads(kernels.stdout)}


def _manifest(text: str) -> dict:
    namespace: dict = {}
    exec(compile(text, "draft.py", "exec"), namespace)
    return namespace["manifest"]


@pytest.mark.slow
def test_the_draft_is_marked_as_a_draft_with_what_was_probed(probed):
    header = probed["text"].split("manifest = {")[0]
    assert header.startswith("# DRAFT MANIFEST -- REVIEW BEFORE USE.")
    for fact in ("device tiny (backend_import tiny_backend)", "torch ", "template smoke", "UTC", "skip_ops:",
                 "Guarantee: a derandomized `torchcts run`", OPS):
        assert fact in header, fact
    assert all(len(line) <= 102 for line in header.splitlines())
    assert probed["check"].returncode == 0, probed["check"].stderr
    assert "valid manifest" in probed["check"].stdout


@pytest.mark.slow
def test_the_draft_claims_what_works_and_drops_what_failed(probed):
    manifest = _manifest(probed["text"])
    assert manifest["device_name"] == "tiny" and manifest["backend_import"] == "tiny_backend"
    assert {k for k, v in manifest["supported_dtypes"].items() if v} == {"float32"}  # the smoke template's dtype
    claimed = {k for k, v in manifest["capabilities"].items() if v}
    assert claimed == {"inference"}  # device_api failed its probe: tiny's module has no synchronize()
    assert re.search(r'"device_api": +False, +#.*; probe: device_api: torch\.tiny\.synchronize\(\) fails', probed["text"])
    assert "dropped device_api: torch.tiny.synchronize() fails" in probed["init"].stderr


@pytest.mark.slow
def test_skip_ops_name_kernels_the_backend_really_lacks(probed):
    skip_ops = _manifest(probed["text"])["skip_ops"]
    assert {"sum", "zeros_like", "exp"} <= set(skip_ops), skip_ops
    assert not {"abs", "add", "mul"} & set(skip_ops)
    kernels = probed["kernels"]
    assert kernels["aten::abs"] is True
    for op, reason in skip_ops.items():
        overloads = reason.removeprefix("no kernel for ").split(", ")
        assert reason.startswith("no kernel for aten::"), reason
        for overload in overloads:
            if overload in kernels:
                assert kernels[overload] is False, overload
    assert skip_ops["zeros_like"] == "no kernel for aten::zero_"


@pytest.mark.slow
def test_a_run_with_the_draft_has_no_missing_kernel(probed):
    records = read_records(probed["folder"])
    summary = json.loads((probed["folder"] / "run.json").read_text())
    assert [r["item"] for r in records if r.get("error_kind") == "missing_kernel"] == []
    assert summary["missing_kernels"]["distinct"] == 0
    by_item = {r["item"]: r for r in records}
    assert by_item["forward::abs::function::float32"]["outcome"] == "passed"
    excluded = by_item["forward::zeros_like::function::float32"]
    assert (excluded["outcome"], excluded["reason"]) == ("op_excluded", "no kernel for aten::zero_")
    assert probed["run"].returncode == 0, probed["run"].stdout[-3000:]


@pytest.mark.slow
def test_the_report_of_a_draft_run_shows_the_probes_missing_kernels_and_the_claimed_share(probed, tmp_path):
    report = _torchcts(probed["cwd"], "report", "--from", str(probed["folder"]), "--output", str(tmp_path))
    assert report.returncode == 0, report.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    skipped = {g["overload"]: g for g in summary["missing_kernels"]["skipped"]["groups"]}
    assert "zeros_like" in skipped["aten::zero_"]["ops"] and skipped["aten::zero_"]["count"] >= 1
    draft_skips = _manifest(probed["text"])["skip_ops"]
    assert summary["missing_kernels"]["skipped"]["ops"] == len(draft_skips)  # every probe-skipped op is listed
    coverage = summary["coverage"]
    assert 0 < coverage["claimed_items"] < coverage["total_items"] and coverage["claimed_percent"] < 100
    scorecard = (tmp_path / "scorecard.md").read_text()
    headline = scorecard.split("## Operator coverage")[0]
    assert "**Not supported: " in headline and "missing kernels a probe found block" in headline
    assert f"Claimed: {coverage['claimed_items']} of {coverage['total_items']} items of the operator matrix" in headline
    assert "### Found by a probe, moved to skip_ops" in scorecard and "| `aten::zero_` |" in scorecard
    html = (tmp_path / "report.html").read_text()
    assert 'id="probe-missing-kernels"' in html and "Not supported:" in html


@pytest.mark.slow
def test_a_probe_drafted_faulty_device_report_lists_its_missing_kernel(tmp_path):
    env = dict(_env(), TORCHCTS_FAULTY_BUGS="missing_kernel")  # aten::trunc has no kernel on the faulty device
    ops = "^(trunc|abs|add)$"

    def torchcts(*argv: str) -> subprocess.CompletedProcess:
        return warm_programs.run([sys.executable, "-m", "torchcts", *argv], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=600, check=False)

    init = torchcts("init", "--probe", "--device", "faulty", "--backend-import", "torchcts.testing.faulty", "--ops",
                    ops, "--output", "draft.py")
    assert init.returncode == 0, init.stderr[-3000:]
    assert _manifest((tmp_path / "draft.py").read_text())["skip_ops"] == {"trunc": "no kernel for aten::trunc"}
    run = torchcts("run", "--manifest", "draft.py", "--device", "faulty", "--ops", ops, "--results-dir", "r")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (folder,) = (p.parent for p in (tmp_path / "r").glob("*/run.json"))
    summary = json.loads((folder / "report" / "summary.json").read_text())
    assert [g["overload"] for g in summary["missing_kernels"]["skipped"]["groups"]] == ["aten::trunc"]
    assert summary["missing_kernels"]["skipped"]["groups"][0]["ops"] == ["trunc"]
    assert summary["coverage"]["claimed_percent"] < 100
    headline = (folder / "report" / "scorecard.md").read_text().split("## Operator coverage")[0]
    assert "**Not supported: 1 missing kernels a probe found block 1 ops" in headline


def test_a_probe_skip_reason_is_read_back_only_in_its_own_form():
    from torchcts.core.probe_skips import missing_overloads, probe_reason

    assert missing_overloads(probe_reason(["aten::zero_", "aten::sum.IntList_out"])) == (
        "aten::zero_", "aten::sum.IntList_out")
    for reason in ("not yet", "no kernel for", "no kernel for <script>", "no kernel for aten::x; rm -rf",
                   "no kernel for " + "aten::a, " * 100_000, None, 42, ["no kernel for aten::a"]):
        assert missing_overloads(reason) == ()
    assert missing_overloads("no kernel for aten::trunc, None") == ("aten::trunc",)  # a bad name drops alone


def test_init_probe_checks_its_options_before_probing(tmp_path):
    def init(*argv: str):
        return CliRunner().invoke(cli, ["init", *argv])

    missing_device = init("--probe", "--output", str(tmp_path / "m.py"))
    assert missing_device.exit_code == 2 and "--probe needs --device" in missing_device.output
    device_alone = init("--device", "cpu", "--template", "smoke", "--output", str(tmp_path / "m.py"), "--non-interactive")
    assert device_alone.exit_code == 2 and "--device and --ops need --probe" in device_alone.output
    existing = tmp_path / "existing.py"
    existing.write_text("# mine\n")
    refused = init("--probe", "--device", "cpu", "--output", str(existing))
    assert refused.exit_code == 2 and "already exists; pass --force" in refused.output
    assert existing.read_text() == "# mine\n"
    bad_ops = init("--probe", "--device", "cpu", "--ops", "(", "--output", str(tmp_path / "m.py"))
    assert bad_ops.exit_code == 2 and "--ops '(' is not a valid regular expression" in bad_ops.output
    bad_import = init("--probe", "--device", "cpu", "--backend-import", "no_such_backend_mod", "--output",
                      str(tmp_path / "m.py"))
    assert bad_import.exit_code == 2 and "--backend-import no_such_backend_mod" in bad_import.output
    assert not (tmp_path / "m.py").exists()


@pytest.mark.slow
def test_an_interrupted_probe_writes_nothing(tmp_path):
    output = tmp_path / "draft.py"
    process = subprocess.Popen([sys.executable, "-m", "torchcts", "init", "--probe", "--device", "tiny",
                                "--backend-import", "tiny_backend", "--output", str(output)],
                               cwd=tmp_path, env=_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for line in process.stderr:
            if "running the template's items" in line:
                break
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err[-2000:]
    assert "not written" in err
    assert not output.exists() and not list(tmp_path.glob("*.partial"))


def test_the_op_probe_reads_missing_kernels_from_records_and_groups_them_by_op():
    from torchcts.probe.ops import OpProbe, missing_overload

    named = {"outcome": "error", "error_kind": "missing_kernel",
             "missing_kernel": {"overload": "aten::zero_", "dispatch_key": "PrivateUse1"}}
    assert missing_overload(named) == "aten::zero_"
    assert missing_overload({**named, "outcome": "failed"}) is None
    assert missing_overload({"outcome": "error", "error_kind": "backend", "error": "Could not run 'aten::x' with "
                             "arguments from the 'tiny' backend"}) is None  # the engine said: not a missing kernel
    older = {"outcome": "error", "error": "NotImplementedError: Could not run 'aten::sum.IntList_out' with arguments "
                                          "from the 'tiny' backend. This could be because ..."}
    assert missing_overload(older) == "aten::sum.IntList_out"  # a record from before error_kind
    probe = OpProbe(items=3, missing={"zeros_like": ("aten::zero_",), "std": ("aten::mean.out", "aten::sub.out")},
                    outcomes={"error": 3}, duration_s=1.0, settings="derandomized")
    assert probe.skip_ops() == {"std": "no kernel for aten::mean.out, aten::sub.out",
                                "zeros_like": "no kernel for aten::zero_"}
