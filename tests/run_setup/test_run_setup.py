"""Run setup (`torchcts.run_setup`) is the one way options become a run: the plugin only reads pytest's config
into a `RunRequest`, the engine's settings are built in one place (a run's, a probe's and a hunt's agree where
they should), and the package imports neither pytest nor the plugin, so the CLI checks a device without them."""

from __future__ import annotations

import ast
from pathlib import Path

import attrs
import pytest

from torchcts.manifest.templates import render_template
from torchcts.plugin.options import run_request
from torchcts.run_setup.errors import SessionError
from torchcts.run_setup.request import RunRequest
from torchcts.run_setup.settings import engine_settings
from torchcts.run_setup.start import start_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def manifest_path(tmp_path):
    path = tmp_path / "manifest.py"
    path.write_text(render_template("complete", device_name="cpu"))
    return path


def test_a_session_without_options_asks_for_the_run_setup_defaults(pytester):
    """RunRequest's defaults are the plugin's option defaults: a front end names only what it sets."""
    assert run_request(pytester.parseconfig()) == RunRequest()


def test_the_plugin_reads_every_option_into_the_request(pytester, tmp_path):
    config = pytester.parseconfig(
        "--device", "cpu", "--manifest", "m.py", "--level", "3", "--dtype", "float32", "--dtype", "int64",
        "--ops", "^abs$", "--property", "forward", "--seed", "7", "--max-examples", "4", "--no-shrink",
        "--results-dir", str(tmp_path), "--known-segfault-policy", "off", "--isolation-start", "spawn",
        "--item-timeout", "30", "--blame-cases", "2", "--shard", "1/2", "--hypothesis-seed", "7")
    assert run_request(config) == RunRequest(
        device="cpu", manifest="m.py", level=3, dtypes=["float32", "int64"], ops=["^abs$"], properties=["forward"],
        seed=7, max_examples=4, no_shrink=True, results_dir=str(tmp_path), known_segfault_policy="off",
        isolation_start="spawn", item_timeout=30.0, blame_cases=2, shard="1/2", hypothesis_seed="7")  # as given


@pytest.mark.slow  # loading a manifest forks (its code runs in a child first)
def test_the_plugin_and_a_direct_request_start_runs_with_the_same_engine_settings(pytester, manifest_path, tmp_path):
    """One place builds the settings: the run the plugin starts from pytest's options and the run a front end
    starts from a RunRequest share every setting but the run's own id."""
    results = tmp_path / "results"
    given = ("--device", "cpu", "--manifest", str(manifest_path), "--ops", "^abs$", "--level", "1", "--seed", "11",
             "--results-dir", str(results), "--corpus-dir", str(tmp_path / "corpus"), "--blame-cases", "3")
    from_plugin = start_run(run_request(pytester.parseconfig(*given)))
    direct = start_run(RunRequest(device="cpu", manifest=str(manifest_path), ops=["^abs$"], level=1, seed=11,
                                  results_dir=str(results), corpus_dir=str(tmp_path / "corpus"), blame_cases=3))
    for start in (from_plugin, direct):
        start.writer.close("complete")
    assert from_plugin.writer.run_id != direct.writer.run_id
    plugin_settings, direct_settings = from_plugin.engine, direct.engine
    assert plugin_settings.found == {**direct_settings.found, "run_id": from_plugin.writer.run_id}
    assert plugin_settings.run_seed == 11 and plugin_settings.blame_cases == 3 and plugin_settings.level == 1
    assert plugin_settings.corpus_dir == tmp_path / "corpus" and "--manifest" in plugin_settings.replay_flags
    for field in attrs.fields(type(plugin_settings)):
        if field.name not in ("found", "manifest", "isolation"):
            assert getattr(plugin_settings, field.name) == getattr(direct_settings, field.name), field.name
    assert plugin_settings.manifest.fingerprint() == direct_settings.manifest.fingerprint()
    assert plugin_settings.isolation.describe() == direct_settings.isolation.describe()


@pytest.mark.slow  # loading a manifest forks (its code runs in a child first)
def test_a_kernel_probe_draws_as_a_derandomized_run_does(manifest_path, tmp_path):
    from torchcts.probe.ops import engine_settings as probe_settings

    run = start_run(RunRequest(device="cpu", manifest=str(manifest_path), derandomize=True, ops=["^abs$"],
                               results_dir=str(tmp_path / "results"), corpus_dir=str(tmp_path / "corpus")))
    run.writer.close("complete")
    probe, _ = probe_settings(run.manifest, "cpu", None)
    differ = {"found", "corpus_dir", "isolation", "manifest"}  # a probe stores nothing and records no run
    for field in attrs.fields(type(probe)):
        if field.name not in differ:
            assert getattr(probe, field.name) == getattr(run.engine, field.name), field.name
    assert probe.run_seed is None and probe.corpus_dir is None and probe.found == {}
    assert probe.isolation.rules == run.engine.isolation.rules
    shown, _ = probe_settings(attrs.evolve(run.manifest, show_traceback=True), "cpu", None)
    assert shown.show_traceback is False  # a probe's records keep first lines, whatever the manifest says


@pytest.mark.slow  # loading a manifest forks (its code runs in a child first)
def test_the_settings_builder_derives_what_follows_from_target_manifest_and_draw(manifest_path):
    from torchcts.engine.blame import DEFAULT_BLAME_CASES
    from torchcts.engine.targets import Target
    from torchcts.manifest import load_manifest

    manifest, _ = load_manifest(manifest_path)
    settings = engine_settings(Target("cpu"), manifest, max_examples=5)
    assert settings.level == manifest.semantic_level and settings.blame_cases == DEFAULT_BLAME_CASES
    assert settings.replay_flags == f"--device cpu --manifest {manifest_path}" and settings.found == {}
    assert engine_settings(Target("cpu"), manifest, max_examples=5, blame_cases=-4).blame_cases == 0  # none blamed
    recorded = engine_settings(Target("cpu"), None, level=8, max_examples=1, run_id="r1", hardware_key="k")
    assert recorded.found == {"run_seed": None, "derandomize": True, "run_id": "r1", "hardware_key": "k"}
    assert recorded.replay_flags == "--device cpu" and not recorded.show_traceback


def test_a_bad_option_is_one_line_before_anything_is_made(tmp_path):
    results = tmp_path / "results"
    with pytest.raises(SessionError, match=r"^--seed and --hypothesis-seed|^--seed 1 and --hypothesis-seed 2 disagree"):
        start_run(RunRequest(device="cpu", seed=1, hypothesis_seed="2", results_dir=str(results)))
    with pytest.raises(SessionError, match="^--validation runs against CPU itself"):
        start_run(RunRequest(device="meta", validation=True, results_dir=str(results)))
    assert not results.exists()


def _imports(folder: Path) -> dict[str, set[str]]:
    """Every module each file of `folder` imports (at any depth of the file), read with ast."""
    found = {}
    for path in sorted(folder.glob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
        found[path.name] = names
    return found


def test_run_setup_needs_neither_pytest_nor_the_plugin_and_the_cli_checks_devices_without_the_plugin():
    for name, modules in _imports(ROOT / "torchcts" / "run_setup").items():
        assert not {m for m in modules if m.split(".")[0] in ("pytest", "_pytest")}, name
        assert not {m for m in modules if m.startswith("torchcts.plugin")}, name
    for name, modules in _imports(ROOT / "torchcts" / "cli").items():
        assert not {m for m in modules if m in ("torchcts.plugin.options", "torchcts.plugin.session")}, name
