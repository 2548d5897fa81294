"""The pytest plugin: registered through the pytest11 entry point, inert unless a TorchCTS option is given."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from torchcts.manifest.templates import render_template


def test_plugin_is_registered_as_a_pytest11_entry_point():
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("torchcts") == "torchcts.plugin"


@pytest.mark.slow
def test_plugin_is_inert_without_options(pytester):
    """A project that merely has TorchCTS installed: no header, no torch import, its tests unaffected."""
    pytester.makepyfile(
        test_plain="""
        import sys

        def test_torch_was_not_imported_by_the_plugin(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("torchcts")
            assert "torch" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "torchcts:" not in result.stdout.str()


@pytest.mark.slow
def test_plugin_loads_a_valid_manifest_and_shows_it(pytester):
    (pytester.path / "manifest.py").write_text(render_template("minimal", device_name="meta"))
    pytester.makepyfile(
        test_uses_manifest="""
        from torchcts.plugin import MANIFEST_KEY

        def test_manifest_is_available(pytestconfig):
            manifest = pytestconfig.stash[MANIFEST_KEY]
            assert manifest.device_name == "meta"
            assert manifest.semantic_level == 2
        """
    )
    result = pytester.runpytest_subprocess("--manifest", "manifest.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["torchcts: manifest *manifest.py (fingerprint *), device meta, semantic level 2"])


@pytest.mark.slow
def test_plugin_stops_the_session_on_an_invalid_manifest(pytester):
    (pytester.path / "manifest.py").write_text(
        'manifest = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},\n'
        '            "capabilities": {"generator": True}, "semantic_level": 11}\n'
    )
    pytester.makepyfile(test_never_runs="def test_x():\n    raise AssertionError('must not run')\n")
    result = pytester.runpytest_subprocess("--manifest", "manifest.py")
    assert result.ret == 4  # pytest's usage-error exit code
    errors = result.stderr.str()
    assert "capabilities.generator" in errors and "device_generator" in errors
    assert "semantic_level" in errors
    assert "must not run" not in result.stdout.str()
