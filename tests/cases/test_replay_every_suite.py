"""Every suite's stored cases replay: one case per registered property, drawn by a tiny run, stored, replayed.

For each property a one-or-two-example run of one of its items on the faulty device (CPU for a property the
faulty device does not claim) keeps the first case it compared with CPU; that case is written as a corpus file and
replayed as `torchcts replay` replays it, with no manifest: on the faulty device with no bug on (a case that
passed passes again) and on CPU (it passes, or CPU says why it cannot run it). No replay may end in a harness
error (a suite reading a manifest that a replay does not have was one: `'NoneType' object has no attribute
'device_count'`), an unreadable case, or a backend failure. A seeded bug's case still fails on replay, through the
command line, counted `still failing`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from torchcts.cases.replay_items import replay_items
from torchcts.cases.store import store_failure
from torchcts.engine import case_loop
from torchcts.engine.context import CaseContext
from torchcts.engine.run import EngineSettings, build_context, property_check, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import PROBLEMS, Outcome
from torchcts.plan import registry
from torchcts.plan.build import build_plan
from torchcts.plan.selection import Selection
from tests import warm_programs

registry.load()
PROPERTIES = sorted(spec.name for spec in registry.properties())
PREFERRED = {"stress": "op_sequence"}  # the cheapest scenario of a suite whose first one allocates large tensors
# Drawn on CPU first: compile_modules' forward compiled over the faulty device's Python tensor subclass breaks dynamo's
# graph at every op (about a minute a case): its case is drawn on CPU and replayed on both, one compile on faulty
DRAWN_ON_CPU_FIRST = {"compile_modules"}
ITEMS_TRIED = 8  # ops of a property tried (an item each) until one compares a case with CPU (`errors`: some have none)
# what a replay without --manifest rightly cannot run on the device it was found on: the manifest names the decoder
NEEDS_A_MANIFEST = {"quantized_decoders": Outcome.CAPABILITY_NOT_DECLARED}
# what CPU, the reference, may say of a case found elsewhere besides passing: it has no such facility, or the case
# claims what CPU does not have (two devices, a manifest's decoder)
CPU_CANNOT_RUN = (Outcome.RUNTIME_UNAVAILABLE, Outcome.CAPABILITY_NOT_DECLARED)


@attrs.define
class KeepsFirstCompared(CaseContext):
    """A context that keeps the first case its check compared with CPU (not rejected by CPU, not unavailable)."""

    kept: Any = None


_check_case = case_loop.check_case


def keeping_first_compared(cts: Any, check: Any, case: Any, fingerprint: str | None = None) -> None:
    """The engine's check of one case; a `KeepsFirstCompared` context keeps the first case it compared."""
    before = (cts.cpu_contract_cases, cts.unavailable_cases)
    _check_case(cts, check, case, fingerprint)
    if isinstance(cts, KeepsFirstCompared) and cts.kept is None and \
            (cts.cpu_contract_cases, cts.unavailable_cases) == before:
        cts.kept = case


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> dict[str, tuple[Any, list[Any]]]:
    """device -> (its manifest, its planned items): the faulty device's selftest manifest, CPU's `complete`."""
    from torchcts.testing import faulty
    from torchcts.testing.selftest import faulty_manifest

    faulty.disable_bugs()
    root = tmp_path_factory.mktemp("manifests")
    (root / "faulty.py").write_text(faulty_manifest())
    (root / "cpu.py").write_text(render_template("complete", device_name="cpu"))
    found = {}
    for device in ("faulty", "cpu"):
        manifest = load_manifest(root / f"{device}.py")[0]
        found[device] = (manifest, list(build_plan(manifest, Selection()).items))
    return found


def store_one_case(prop: str, plans: dict[str, tuple[Any, list[Any]]], corpus: Path) -> tuple[str, Path]:
    """(the device it was drawn on, the stored case's path): the first case a tiny run of the property compared."""
    for device in ("cpu", "faulty") if prop in DRAWN_ON_CPU_FIRST else ("faulty", "cpu"):
        manifest, items = plans[device]
        candidates = list({i.op: i for i in reversed(items) if i.property == prop}.values())[::-1]  # an item an op
        candidates.sort(key=lambda i: i.op != PREFERRED.get(prop, i.op))
        for item in candidates[:ITEMS_TRIED]:
            settings = EngineSettings(target=Target(device), manifest=manifest, level=8, max_examples=2,
                                      versions=versions(), shrink=False)
            built = build_context(item, settings)
            context = KeepsFirstCompared(**{f.name: getattr(built, f.name) for f in attrs.fields(CaseContext) if f.init})
            try:
                property_check(prop)(context)
            except Exception:  # noqa: BLE001 - a case it compared before is as good: only the case matters here
                pass
            if context.kept is None:
                continue
            context.failing_case = context.kept
            assert context.failing_case_storable(), f"{prop}: its cases cannot be stored"
            stored = store_failure(context, outcome="failed", error="kept by the test", corpus_dir=corpus, found={},
                                   replay_flags="")
            assert "counterexample" in stored, f"{prop}: {stored}"
            return device, Path(stored["counterexample"]["path"])
    pytest.fail(f"{prop}: no item of the first {ITEMS_TRIED} compared a case on faulty or CPU")


def replay(path: Path, device: str) -> dict[str, Any]:
    """The record of replaying the case on `device` as `torchcts replay` does without --manifest."""
    settings = EngineSettings(target=Target(device), manifest=None, level=8, max_examples=1, versions=versions())
    return run_item(replay_items([path])[0], settings)


def said(record: dict[str, Any]) -> str:
    return f"{record['outcome']} [{record.get('error_kind')}]: {record.get('error_line') or record.get('reason')}"


@pytest.mark.slow
@pytest.mark.parametrize("prop", PROPERTIES)
def test_a_stored_case_of_every_suite_replays_on_faulty_and_cpu(prop, plans, tmp_path, monkeypatch):
    monkeypatch.setattr(case_loop, "check_case", keeping_first_compared)  # the case loop checks each case through it
    drawn_on, path = store_one_case(prop, plans, tmp_path / "corpus")
    on_faulty, on_cpu = replay(path, "faulty"), replay(path, "cpu")
    for record in (on_faulty, on_cpu):
        assert record.get("error_kind") not in ("harness", "setup", "case_file"), f"{prop}: {said(record)}"
        assert record["case"]["unreadable"] is None, f"{prop}: {said(record)}"
    if drawn_on == "faulty":
        assert on_faulty["outcome"] == NEEDS_A_MANIFEST.get(prop, Outcome.PASSED), f"{prop}: {said(on_faulty)}"
        assert on_cpu["outcome"] == Outcome.PASSED or on_cpu["outcome"] in CPU_CANNOT_RUN, f"{prop}: {said(on_cpu)}"
    else:  # a property the faulty device does not claim: CPU passes; faulty says why it cannot, or passes
        assert on_cpu["outcome"] == Outcome.PASSED, f"{prop}: {said(on_cpu)}"
        assert on_faulty["outcome"] not in PROBLEMS, f"{prop}: {said(on_faulty)}"
    for record in (on_faulty, on_cpu):
        if record["outcome"] != Outcome.PASSED:  # a not-run replay says why
            assert record.get("reason"), f"{prop}: {said(record)}"


@pytest.mark.slow
def test_a_seeded_bugs_device_api_case_still_fails_on_replay_without_a_manifest(plans, tmp_path):
    """The issue's case: a device_api case found with a seeded bug, replayed by `torchcts replay --device faulty` with
    no manifest, still fails (an AssertionError naming the device count), and passes with the bug off."""
    from torchcts.testing import faulty

    faulty.disable_bugs()
    faulty.enable_bugs("device_count_after_switch")
    try:
        manifest, items = plans["faulty"]
        item = next(i for i in items if i.property == "device_api" and i.op == "availability")
        settings = EngineSettings(target=Target("faulty"), manifest=manifest, level=8, max_examples=20,
                                  versions=versions(), corpus_dir=tmp_path / "corpus")
        record = run_item(item, settings)
    finally:
        faulty.disable_bugs()
    assert record["outcome"] == Outcome.FAILED, said(record)
    path = record["counterexample"]["path"]

    def cli_replay(bugs: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, TORCHCTS_FAULTY_BUGS=bugs)
        return warm_programs.run([sys.executable, "-m", "torchcts", "replay", path, "--device", "faulty",
                               "--results-dir", str(tmp_path / "results")],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)

    failing = cli_replay("device_count_after_switch")
    assert failing.returncode == 0, failing.stdout + failing.stderr
    assert "still failing" in failing.stdout and "device_count() stays 2" in failing.stdout, failing.stdout
    assert "AttributeError" not in failing.stdout and "1 still failing" in failing.stdout, failing.stdout
    passing = cli_replay("")
    assert passing.returncode == 0 and "now passing" in passing.stdout, passing.stdout + passing.stderr
