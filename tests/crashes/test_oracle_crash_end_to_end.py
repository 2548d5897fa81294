"""A CPU-oracle crash rule end to end, on a real torch 2.13 CPU crash: pdist backward segfaults on a (0, n) input.

The item's cases run in forked children; the oracle's crash makes the case `cpu_contract` with
the rule's reason and the run goes on. On other torch versions the crash does not exist (and the
packaged rule does not apply), so these tests are skipped there.
"""

from __future__ import annotations

import json
import subprocess
import sys

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
from torchcts.outcomes import Outcome
from torchcts.plan.items import PlanItem
from torchcts.results.writer import read_records
from torchcts.strategies.samples import Case

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


def test_an_oracle_crash_on_every_case_is_cpu_contract_with_the_rules_reason(settings):
    with pytest.raises(NotRun) as not_run:
        run_cases(settings, [case(0)])
    assert not_run.value.outcome == Outcome.CPU_CONTRACT and REASON in not_run.value.reason


def test_the_item_goes_on_past_a_crashing_case(settings):
    context = run_cases(settings, [case(0), case(4)])
    assert (context.examples, context.cpu_contract_cases) == (2, 1)


def test_a_run_draws_the_crashing_cases_and_completes(tmp_path):
    """`torchcts run` with the packaged ledger: empty inputs are drawn for pdist again (no name list
    keeps them out); the oracle's crashes are cpu_contract cases, never a crashed item or a dead run.
    (100 examples: since every operand can be re-laid-out, 20 derandomized draws hold no empty input.)"""
    command = [sys.executable, "-m", "torchcts", "run", "--device", "cpu", "--ops", "^nn\\.functional\\.pdist$",
               "--property", "backward", "--dtype", "float32", "--level", "4", "--derandomize", "--max-examples", "100",
               "--results-dir", "results", "--known-segfault-policy", "off"]  # off: the oracle rules stay
    (tmp_path / "manifest.py").write_text(render_template("complete", device_name="cpu"))
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=1800)
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
