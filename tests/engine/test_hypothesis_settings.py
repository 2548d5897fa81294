"""Hypothesis settings are honoured: the manifest's block is a profile, a named profile goes over it, flags
over both, and what decides the cases (seed, database, phases) stays TorchCTS's (docs/harness.md)."""

from __future__ import annotations

import datetime
import json
import os
import sys

import hypothesis
import pytest
from hypothesis import HealthCheck, Phase, Verbosity

from torchcts.engine import hypothesis_profile as hp
from torchcts.engine.run import EngineSettings, run_item, versions
from torchcts.engine.targets import Target
from torchcts.manifest import parse_manifest, validate
from torchcts.manifest import vocabulary as vocab
from torchcts.manifest.model import HypothesisSettings
from torchcts.plan.build import PlanItem
from torchcts.results.writer import read_records
from tests import warm_programs

SMALL = ["--validation", "--ops", "^abs$", "--level", "1", "--dtype", "float32", "--property", "forward"]
ITEM = "forward::abs::function::float32"
BASE = {"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
        "capabilities": {"inference": True}}
PROFILES = """\
from hypothesis import HealthCheck, Verbosity, settings

settings.register_profile("cts-three", settings.get_profile("default"), max_examples=3)
settings.register_profile("cts-loud", verbosity=Verbosity.verbose, print_blob=True,
                          suppress_health_check=[HealthCheck.filter_too_much])
settings.register_profile("cts-derandomized", derandomize=True)
settings.register_profile("cts-on-manifest", parent=settings.get_profile("torchcts-manifest"), max_examples=4)
"""


@pytest.fixture
def project(tmp_path, write_manifest):
    """A folder with a manifest whose backend_import module registers profiles; (folder, manifest path)."""
    (tmp_path / "cts_profiles.py").write_text(PROFILES)
    manifest = write_manifest('manifest = dict(BASE, backend_import="cts_profiles", hypothesis={"max_examples": 5})\n')
    return tmp_path, manifest


def run(cwd, manifest, *args, results, env=None, command="run"):
    """`torchcts run` (or `pytest --pyargs torchcts.properties`) in a subprocess: (result, run.json, records
    by item)."""
    environ = {k: v for k, v in os.environ.items() if k != hp.PROFILE_ENV}
    environ.update(PYTHONPATH=str(cwd), PYTHONHASHSEED="0", **(env or {}))
    front = [sys.executable, "-m", "torchcts", "run"] if command == "run" else \
        [sys.executable, "-m", "pytest", "--pyargs", "torchcts.properties", "-p", "no:cacheprovider"]
    result = warm_programs.run([*front, "--manifest", str(manifest), "--results-dir", results, *args],
                            capture_output=True, text=True, cwd=cwd, env=environ, timeout=600)
    folders = list((cwd / results).glob("*/run.json"))
    if not folders:
        return result, None, {}
    folder = folders[0].parent
    return result, json.loads((folder / "run.json").read_text()), {r["item"]: r for r in read_records(folder)}


def output(result) -> str:
    return result.stdout + result.stderr


# -- what a run uses, end to end ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_named_profile_goes_over_the_manifest_and_the_command_line_over_both(project):
    cwd, manifest = project  # the manifest says max_examples 5
    result, summary, records = run(cwd, manifest, *SMALL, "--hypothesis-profile", "cts-three", results="profile")
    assert result.returncode == 0, output(result)[-3000:]
    assert records[ITEM]["examples"] == 3  # no --max-examples: the profile's
    used = summary["hypothesis"]
    assert used["database"] is None and used["phases"] == [p.name for p in Phase]
    assert "hypothesis_statistics" not in records[ITEM] and "Hypothesis statistics" not in result.stdout
    assert (used["profile"], used["named_by"]) == ("cts-three", "--hypothesis-profile")
    assert (used["max_examples"], used["max_examples_from"]) == (3, "profile cts-three")
    assert used["deadline_ms"] is None and used["deadline_from"] == "manifest"  # Hypothesis's 200 ms is no choice
    assert summary["environment"]["max_examples"] == 3
    assert ("torchcts: hypothesis profile cts-three (--hypothesis-profile, over torchcts-manifest): max_examples 3 "
            "(profile cts-three), deadline none (manifest)") in result.stdout

    result, summary, records = run(cwd, manifest, *SMALL, "--max-examples", "2", "--no-shrink", results="flag",
                                   env={hp.PROFILE_ENV: "cts-on-manifest"})
    assert result.returncode == 0, output(result)[-3000:]
    assert records[ITEM]["examples"] == 2
    used = summary["hypothesis"]
    assert (used["profile"], used["named_by"]) == ("cts-on-manifest", hp.PROFILE_ENV)
    assert (used["max_examples"], used["max_examples_from"]) == (2, "--max-examples")
    assert used["phases"] == ["explicit", "generate"]  # --no-shrink: TorchCTS's phases, whatever the profile


@pytest.mark.slow
def test_a_profile_that_is_not_registered_is_one_line_naming_the_registered_ones(project):
    cwd, manifest = project
    for args, env, named in (((("--hypothesis-profile", "nightly")), None, "--hypothesis-profile 'nightly'"),
                             ((), {hp.PROFILE_ENV: "nightly"}, "HYPOTHESIS_PROFILE 'nightly'")):
        result, summary, _ = run(cwd, manifest, *SMALL, *args, results="unknown", env=env)
        assert result.returncode == 2, output(result)[-3000:]
        lines = [line for line in output(result).splitlines() if "nightly" in line]
        assert len(lines) == 1 and f"{named} is not a registered Hypothesis settings profile" in lines[0]
        assert "cts-three" in lines[0] and hp.MANIFEST_PROFILE in lines[0] and "Traceback" not in output(result)
        assert summary is None  # nothing was written
    clash, _, _ = run(cwd, manifest, *SMALL, "--hypothesis-seed", "11", "--derandomize", results="clash")
    assert clash.returncode == 2 and "--hypothesis-seed) and --derandomize exclude each other" in output(clash)


@pytest.mark.slow
def test_hypothesis_seed_is_the_runs_seed(project):
    cwd, manifest = project
    first, summary, records = run(cwd, manifest, *SMALL, "--max-examples", "3", "--hypothesis-seed", "11",
                                  results="hypothesis_seed")
    assert first.returncode == 0, output(first)[-3000:]
    assert summary["environment"]["seed"] == 11 and summary["hypothesis"]["seed"] == 11
    assert not summary["hypothesis"]["derandomize"] and "seed 11 (--seed 11 repeats it)" in first.stdout
    again, _, records_again = run(cwd, manifest, *SMALL, "--max-examples", "3", "--seed", "11", results="seed")
    assert records[ITEM]["fingerprints"] == records_again[ITEM]["fingerprints"] and records[ITEM]["fingerprints"]


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_derandomized_item_draws_and_shrinks_the_same_cases_whatever_profile_is_loaded(tmp_path):
    """The release guarantee: a profile may change what Hypothesis prints, never which cases run or how
    they shrink. The faulty device's noncontiguous_add bug makes the item fail, so shrinking is compared too.
    (End to end, a profile reaches the engine as `DrawSettings`: the tests above.)"""
    from torchcts.testing import faulty

    defaults = hypothesis.settings.get_profile("default")
    hypothesis.settings.register_profile("cts-loud-unit", defaults, verbosity=Verbosity.verbose, print_blob=True,
                                         suppress_health_check=[HealthCheck.filter_too_much])
    manifest, _ = parse_manifest(dict(BASE, semantic_level=2))
    item = PlanItem("layout", "add", "function", "float32", 2)

    def record(draw, corpus):
        settings = EngineSettings(target=Target("faulty"), manifest=manifest, level=2, max_examples=8,
                                  versions=versions(), corpus_dir=tmp_path / corpus, draw=draw)
        return run_item(item, settings)

    faulty.enable_bugs("noncontiguous_add")
    try:
        plain = record(hp.resolve(manifest.hypothesis), "plain")
        loud = record(hp.resolve(manifest.hypothesis, profile="cts-loud-unit", named_by=hp.PROFILE_ENV), "loud")
    finally:
        faulty.disable_bugs()
    assert plain["outcome"] == "failed", plain
    compared = ("outcome", "examples", "fingerprints", "cpu_contract_cases", "max_abs_error", "max_ulp")
    assert {k: loud[k] for k in compared} == {k: plain[k] for k in compared}
    assert loud["counterexample"]["fingerprint"] == plain["counterexample"]["fingerprint"]


@pytest.mark.slow
def test_a_derandomized_run_draws_the_same_cases_under_any_profile_and_shows_statistics(project):
    cwd, manifest = project
    result, summary, records = run(cwd, manifest, *SMALL, results="derandomized",
                                   env={hp.PROFILE_ENV: "cts-derandomized"})
    assert result.returncode == 0, output(result)[-3000:]
    assert summary["environment"]["derandomize"] and summary["hypothesis"]["seed"] is None  # the profile's
    assert "derandomized (seeds from item ids)" in result.stdout
    assert records[ITEM]["examples"] == 5  # the profile sets no max_examples: the manifest's
    used = summary["hypothesis"]
    assert (used["profile"], used["named_by"]) == ("cts-derandomized", hp.PROFILE_ENV)
    assert (used["max_examples"], used["max_examples_from"]) == (5, "manifest")

    # plain pytest, another profile (verbose, print_blob), statistics on: the same cases
    result, summary, stats_records = run(cwd, manifest, *SMALL, "--derandomize", "--hypothesis-show-statistics",
                                         "--hypothesis-profile", "cts-loud", results="stats", command="pytest")
    assert result.returncode == 0, output(result)[-3000:]
    assert summary["hypothesis"]["verbosity"] == "verbose" and summary["hypothesis"]["print_blob"]
    assert stats_records[ITEM]["fingerprints"] == records[ITEM]["fingerprints"]
    stats = stats_records[ITEM]["hypothesis_statistics"]
    assert stats["phases"]["generate"]["test_cases"] == stats_records[ITEM]["examples"] == 5
    assert stats["stopped_because"] == "settings.max_examples=5" and "5 passing" in stats["text"]
    assert summary["hypothesis"]["show_statistics"]
    assert "torchcts: Hypothesis statistics: 1 items, 5 test cases (5 passing, 0 failing, 0 invalid)" in result.stdout
    section = result.stdout.split("Hypothesis Statistics", 1)[1]
    assert f"test_forward[{ITEM}]" in section and "5 passing, 0 failing" in section


def test_the_manifests_verbosity_print_blob_and_health_checks_are_used():
    manifest, _ = parse_manifest(dict(BASE, hypothesis={"verbosity": "quiet", "print_blob": True, "deadline": 5000,
                                                         "suppress_health_check": ["filter_too_much"]}))
    used = hp.resolve(manifest.hypothesis).as_json(derandomize=False, seed=1, shrink=True)
    assert used["verbosity"] == "quiet" and used["print_blob"] and used["deadline_ms"] == 5000
    assert set(used["suppress_health_check"]) == set(hp.HEALTH_CHECKS_OFF) | {"filter_too_much"}
    settings = hp.item_settings(hp.resolve(manifest.hypothesis), max_examples=1, deadline_ms=5000.0, shrink=True)
    assert settings.verbosity is Verbosity.quiet and settings.print_blob
    assert HealthCheck.filter_too_much in settings.suppress_health_check
    assert parse_manifest(BASE)[0].fingerprint() == parse_manifest(dict(BASE, hypothesis={"verbosity": "normal"}))[
        0].fingerprint()  # keys at their defaults leave a manifest's fingerprint as it was


# -- the rules, directly ----------------------------------------------------------------------------


def test_resolve_takes_a_profiles_changed_values_over_the_manifests():
    defaults = hypothesis.settings.get_profile("default")  # not this process's profile (tests/conftest.py's)
    hypothesis.settings.register_profile("cts-unit", defaults, max_examples=7, deadline=None,
                                         verbosity=Verbosity.verbose)
    hypothesis.settings.register_profile("cts-unit-plain", defaults, print_blob=True)
    block = HypothesisSettings(max_examples=20, deadline_ms=300.0, verbosity="quiet")
    mine = hp.resolve(block)
    assert (mine.max_examples, mine.deadline_ms, mine.verbosity) == (20, 300.0, "quiet")
    named = hp.resolve(block, profile="cts-unit", named_by="--hypothesis-profile")
    assert (named.max_examples, named.max_examples_from) == (7, "profile cts-unit")
    assert (named.deadline_ms, named.verbosity) == (None, "verbose")
    plain = hp.resolve(block, profile="cts-unit-plain", named_by=hp.PROFILE_ENV)
    assert (plain.max_examples, plain.deadline_ms, plain.verbosity, plain.print_blob) == (20, 300.0, "quiet", True)
    flags = hp.resolve(block, profile="cts-unit", max_examples=3, verbosity="debug")
    assert (flags.max_examples, flags.max_examples_from, flags.verbosity) == (3, "--max-examples", "debug")


def test_an_items_settings_keep_what_torchcts_owns_whatever_the_profile():
    hypothesis.settings.register_profile(
        "cts-hostile", hypothesis.settings.get_profile("default"), derandomize=True, phases=[Phase.generate],
        report_multiple_bugs=True, max_examples=1000,
        suppress_health_check=[HealthCheck.nested_given])
    draw = hp.resolve(HypothesisSettings(), profile="cts-hostile", named_by="--hypothesis-profile")
    settings = hp.item_settings(draw, max_examples=4, deadline_ms=None, shrink=True)
    assert (settings.max_examples, settings.database, settings.derandomize) == (4, None, False)
    assert settings.phases == tuple(Phase) and not settings.report_multiple_bugs and settings.backend == "hypothesis"
    assert HealthCheck.nested_given in settings.suppress_health_check
    assert HealthCheck.too_slow in settings.suppress_health_check
    assert draw.profile_derandomizes
    quick = hp.item_settings(draw, max_examples=4, deadline_ms=250.0, shrink=False)
    assert quick.phases == (Phase.explicit, Phase.generate)
    assert quick.deadline == datetime.timedelta(milliseconds=250)


def test_the_manifest_block_is_registered_as_a_profile():
    hp.register_manifest_profile(HypothesisSettings(max_examples=9, deadline_ms=None, derandomize=True,
                                                    verbosity="verbose", suppress_health_check=("filter_too_much",)))
    profile = hypothesis.settings.get_profile(hp.MANIFEST_PROFILE)
    assert (profile.max_examples, profile.deadline, profile.derandomize) == (9, None, True)
    assert profile.verbosity is Verbosity.verbose
    assert tuple(profile.suppress_health_check) == (HealthCheck.filter_too_much,)


def test_the_manifest_vocabulary_names_hypothesiss_own_settings():
    assert vocab.HYPOTHESIS_VERBOSITIES == tuple(v.name for v in Verbosity)
    assert set(vocab.HYPOTHESIS_HEALTH_CHECKS) == {c.name for c in HealthCheck}
    owned = set(vocab.HYPOTHESIS_OWNED)
    assert owned <= set(hypothesis.settings.__init__.__kwdefaults__)
    from torchcts.manifest import schema

    section = {key.name for key in schema.SECTION_KEYS["hypothesis"].keys}
    assert section | owned | {"deadline"} >= set(hypothesis.settings.__init__.__kwdefaults__)
    assert not section & owned


def test_settings_torchcts_owns_are_a_manifest_error_with_the_reason():
    _, problems = validate(dict(BASE, hypothesis={"database": None, "verbosty": "quiet"}))
    lines = [p.render() for p in problems]
    assert any(line.startswith("hypothesis.database: is not a manifest setting: TorchCTS keeps no example database")
               and "allowed: 'max_examples'" in line for line in lines), lines
    assert any("hypothesis.verbosty: unknown hypothesis setting" in line and "did you mean 'verbosity'" in line
               for line in lines), lines
