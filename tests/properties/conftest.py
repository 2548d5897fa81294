"""Fixtures for the suites' tests: `run_suite(prop, scenario, dtype, device=..., bugs=...)` runs one suite item
in this process (cpu, meta or the faulty device with chosen seeded bugs on, derandomized, optionally storing
its counterexample in a corpus folder) and returns its record."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.plan import registry
from torchcts.plan.build import PlanItem
from torchcts.cases.replay_items import replay_items
from tests import warm_programs

_MANIFESTS: dict[str, Any] = {}


def complete_manifest(tmp_root: Path, device: str = "cpu") -> Any:
    """The `complete` template's manifest (every dtype and capability, level 8) for `device`, loaded once (for the
    faulty device, the selftest's manifest; elsewhere with the reference container decoders)."""
    if device not in _MANIFESTS:
        path = Path(tmp_root) / f"complete-{device}.py"
        if device == "faulty":  # the selftest's: two devices, multi_device claimed, device_generator not
            from torchcts.testing.selftest import faulty_manifest

            path.write_text(faulty_manifest())
        else:  # with the codec's reference decoders, so custom_quantized_decode runs (CPU validates its machinery)
            from torchcts.containers import reference_decoders
            from torchcts.manifest.vocabulary import CONTAINER_FORMATS

            decoders = {name: reference_decoders.path(name) for name in CONTAINER_FORMATS}
            path.write_text(render_template("complete", device_name=device)
                            + 'manifest["capabilities"]["custom_quantized_decode"] = True\n'
                            + f'manifest["custom_container_decoders"] = {decoders!r}\n')
        _MANIFESTS[device] = load_manifest(path)[0]
    return _MANIFESTS[device]


def item_for(prop: str, scenario: str, dtype: str) -> PlanItem:
    registry.load()
    spec = registry.get(prop)
    return PlanItem(prop, scenario, spec.variant, dtype, spec.level)


def run_suite_item(tmp_root: Path, prop: str, scenario: str, dtype: str = "float32", *, device: str = "cpu",
                   bugs: tuple[str, ...] = (), max_examples: int = 20, corpus_dir: Path | None = None,
                   compile_backend: str | None = None, shrink: bool = True) -> dict[str, Any]:
    """The record of one item (`prop`, `scenario`, `dtype`) run derandomized on `device` with `bugs` on."""
    if device == "faulty" or bugs:
        from torchcts.testing import faulty

        faulty.disable_bugs()
        if bugs:
            faulty.enable_bugs(*bugs)
    try:
        settings = EngineSettings(target=Target(device, compile_backend), manifest=complete_manifest(tmp_root, device),
                                  level=8, max_examples=max_examples, versions=versions(), shrink=shrink,
                                  corpus_dir=corpus_dir)
        return run_item(item_for(prop, scenario, dtype), settings)
    finally:
        if bugs:
            from torchcts.testing import faulty

            faulty.disable_bugs()


@pytest.fixture(scope="session")
def run_suite(tmp_path_factory):
    """`run_suite(prop, scenario, dtype="float32", device="cpu", bugs=(), max_examples=20, corpus_dir=None, ...)`."""
    root = tmp_path_factory.mktemp("suites")

    def run(prop: str, scenario: str, dtype: str = "float32", **options: Any) -> dict[str, Any]:
        return run_suite_item(root, prop, scenario, dtype, **options)

    return run


def assert_replays_failing_on_faulty(path: str | Path, bug: str, cwd: Path) -> None:
    """`torchcts replay PATH --device faulty --strict` in a subprocess with `bug` on reports the case still failing."""
    env = dict(os.environ, TORCHCTS_FAULTY="1", TORCHCTS_FAULTY_BUGS=bug)
    replay = warm_programs.run([sys.executable, "-m", "torchcts", "replay", str(path), "--device", "faulty", "--strict",
                             "--results-dir", str(cwd / "results")],
                            capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert replay.returncode == 1 and "still failing" in replay.stdout, replay.stdout[-2000:] + replay.stderr[-2000:]


def replay_in_process(path: str | Path, tmp_path: Path, *, bugs: tuple[str, ...] = ()) -> dict[str, Any]:
    """The record of replaying a stored case on the faulty device with `bugs` on, in this process."""
    from torchcts.testing import faulty

    faulty.disable_bugs()
    if bugs:
        faulty.enable_bugs(*bugs)
    try:
        settings = EngineSettings(target=Target("faulty"), manifest=complete_manifest(tmp_path, "faulty"), level=8,
                                  max_examples=1, versions=versions())
        return run_item(replay_items([path])[0], settings)
    finally:
        faulty.disable_bugs()


@pytest.fixture
def faulty_bug():
    """`faulty_bug(name)`: switch one seeded bug on for the test (all off afterwards)."""
    from torchcts.testing import faulty

    faulty.disable_bugs()
    yield faulty.enable_bugs
    faulty.disable_bugs()


@pytest.fixture(scope="session")
def replays_failing():
    """`replays_failing(path, bug, cwd)`: asserts that a CLI replay on faulty with `bug` on still fails the case."""
    return assert_replays_failing_on_faulty


@pytest.fixture(scope="session")
def replay_case():
    """`replay_case(path, tmp_path, bugs=(...))`: the record of an in-process replay on faulty with `bugs` on."""
    return replay_in_process
