"""A CPU-oracle crash rule end to end, on a real torch 2.13 CPU crash: pdist backward segfaults on a (0, n) input.

The item's cases run in forked children; the oracle's crash makes the case `cpu_contract` with
the rule's reason and the run goes on. On other torch versions the crash does not exist (and the
packaged rule does not apply), so these tests are skipped there.

torch refuses autograd in a child forked after its process started autograd's device threads (a
backward on a non-CPU device, such as an earlier test's on the faulty device in the same worker):
the backward cases' checks therefore run in a fresh interpreter (`in_fresh_process`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs
import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.crashes.ledger import load_ledger
from torchcts.crashes.versions import torch_minor
from torchcts.engine.outcome import NotRun
from torchcts.engine.run import EngineSettings, build_context, property_check, versions
from torchcts.engine.targets import Target
from torchcts.isolation.policy import IsolationPolicy
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan.items import PlanItem
from torchcts.results.writer import read_records
from torchcts.strategies.samples import Case
from tests import warm_programs

pytestmark = pytest.mark.skipif(torch_minor() != (2, 13), reason="the pdist backward crash is seen on torch 2.13")
PDIST = PlanItem("backward", "nn.functional.pdist", "function", "float32", 4)
REASON = "local rule: pdist backward segfaults on a (0, n) input"
EIGVALS_REASON = "local rule: linalg.eigvals aborts on NaN"


def case(rows):
    return Case("nn.functional.pdist", "function", torch.float32, SampleInput(torch.rand(rows, 3)), 0, ())


@pytest.fixture(scope="module")
def manifest_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("oracle_crash") / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    return path


@pytest.fixture(scope="module")
def settings(manifest_path):
    return make_settings(manifest_path)


def make_settings(manifest_path):
    local = manifest_path.parent / "known_crashes.json"
    local.write_text(json.dumps({"rules": [{"kind": "oracle", "op": "(^|\\.)pdist$", "property": "backward",
                                            "torch": ">=2.13,<2.14", "timeout_s": 60, "reason": REASON},
                                           {"kind": "oracle", "op": "^linalg\\.eigvals$", "torch": ">=2.13,<2.14",
                                            "cases": ["special_values"], "timeout_s": 60, "reason": EIGVALS_REASON}]}))
    policy = IsolationPolicy(rules=tuple(load_ledger(local)), device_type="cpu", torch_version=torch_minor())
    manifest, _ = load_manifest(manifest_path)
    return EngineSettings(target=Target("cpu"), manifest=manifest, level=4, max_examples=2, versions=versions(),
                          isolation=policy)


def run_cases(settings, cases):
    context = build_context(PDIST, settings)
    context.replay = cases  # these cases instead of draws
    property_check("backward")(context)
    return context


def checked(manifest_path, rows):
    """The backward check of pdist cases with these row counts: its counts, or the NotRun it ended with."""
    try:
        context = run_cases(make_settings(Path(manifest_path)), [case(r) for r in rows])
    except NotRun as not_run:
        return {"outcome": str(not_run.outcome.value), "reason": not_run.reason}
    return {"examples": context.examples, "cpu_contract_cases": context.cpu_contract_cases}


def in_fresh_process(manifest_path, rows, first=""):
    """`checked` in a new interpreter (after the statements `first`), whose autograd has started no threads, so
    its forked children can run backward (a worker that ran a faulty-device backward before could not)."""
    program = (f"{first}import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
               f"from {Path(__file__).stem} import checked; "
               f"print(json.dumps(checked({str(manifest_path)!r}, {list(rows)!r})))")
    result = warm_programs.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_an_oracle_crash_on_every_case_is_cpu_contract_with_the_rules_reason(manifest_path):
    answer = in_fresh_process(manifest_path, [0])
    assert answer.get("outcome") == Outcome.CPU_CONTRACT.value and REASON in answer["reason"], answer


@pytest.mark.slow
def test_the_item_goes_on_past_a_crashing_case(manifest_path):
    answer = in_fresh_process(manifest_path, [0, 4])
    assert answer == {"examples": 2, "cpu_contract_cases": 1}, answer


@pytest.mark.slow
def test_a_process_whose_autograd_threads_started_does_not_run_the_crash_prone_cases(manifest_path):
    """After a backward on a non-CPU device (autograd's device threads started), torch refuses autograd in forked
    children: the isolated cases are not run (cpu_contract with the rule's reason), never CPU's rejection."""
    faulty_backward = ("import torch; from torchcts.testing.faulty import device; device.register(); "
                       "x = torch.ones(3, device='faulty', requires_grad=True); (x * 2).sum().backward(); ")
    answer = in_fresh_process(manifest_path, [0, 4], first=faulty_backward)
    assert answer.get("outcome") == Outcome.CPU_CONTRACT.value, answer
    assert REASON in answer["reason"] and "rejected" not in answer["reason"], answer


@pytest.mark.slow
def test_a_run_draws_the_crashing_cases_and_completes(tmp_path):
    """`torchcts run` with the packaged ledger: empty inputs are drawn for pdist again (no name list
    keeps them out); the oracle's crashes are cpu_contract cases, never a crashed item or a dead run.
    (100 examples: since every operand can be re-laid-out, 20 derandomized draws hold no empty input.)"""
    command = [sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--ops", "^nn\\.functional\\.pdist$",
               "--property", "backward", "--dtype", "float32", "--level", "4", "--derandomize", "--max-examples", "100",
               "--results-dir", "results", "--known-segfault-policy", "off"]  # off: the oracle rules stay
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="cpu"))
    result = warm_programs.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    folder = sorted((tmp_path / "results").glob("*/run.json"))[-1].parent
    record = {r["item"]: r for r in read_records(folder)}[PDIST.id]
    assert record["outcome"] in (Outcome.PASSED, Outcome.CPU_CONTRACT) and record["cpu_contract_cases"] >= 1


def test_drawing_probes_in_a_child_so_an_oracle_abort_in_generation_is_accounted(settings):
    """linalg.eigvals aborts on NaN: validating a drawn NaN case on CPU in this process would kill it.
    With the item's probe runner the probe dies in a child, the case is kept, and its isolated check
    makes it a cpu_contract case; the other cases run and pass."""
    from torchcts.strategies.probes import cpu_probes

    item = PlanItem("forward", "linalg.eigvals", "function", "float32", 1)
    isolation = settings.isolation.case_isolation(item)
    assert isolation is not None and isolation.reason == EIGVALS_REASON
    context = build_context(item, attrs.evolve(settings, level=1), max_examples=20)
    with cpu_probes(isolation.probe_runner()):
        property_check("forward")(context)
    assert context.examples == 20 and 1 <= context.cpu_contract_cases < 20, context.fingerprints
