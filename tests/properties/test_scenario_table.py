"""Declarative scenario suites (`properties.scenario_table`): a row's program runs on CPU and the device and its
comparison decides, with the tolerance widened from the case's named parameters; the registry sees the rows'
names, programs, bounds and comparison; a misdeclared row fails at declaration."""

from __future__ import annotations

import pytest
import torch
from hypothesis import strategies as st
from torch.testing._internal.opinfo.core import SampleInput  # noqa: F401  (imported here: its import starts `uname`)

from torchcts.cases import scenario_case
from torchcts.cases.bounds import CaseParams, Ints, OneOf
from torchcts.engine.run import EngineSettings, run_item
from torchcts.engine.run import versions
from torchcts.engine.targets import Target
from torchcts.manifest import load_manifest
from torchcts.manifest.templates import render_template
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.plan.build import PlanItem
from torchcts.properties.scenario_table import Custom, Exact, Scenario, Tolerance, scenario_suite

PARAMS = CaseParams({"rows": Ints(2, 4), "scale": OneOf((1.0, 3.0))})


def transposed_add(input, rows, scale):
    """A non-contiguous add (the faulty device's `noncontiguous_add` reads it wrong) and its sum."""
    base = torch.arange(rows * 3, dtype=torch.float32, device=input.device).reshape(rows, 3) * scale
    added = base.t() + 1
    return [added, added.sum()]


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    path = tmp_path_factory.mktemp("table") / "manifest.py"
    path.write_text(render_template("complete", device_name="faulty"))
    return load_manifest(path)[0]


@pytest.fixture
def suite():
    """Register a table suite for one test (and forget it after)."""
    names = []

    def register(name, rows, **extra):
        names.append(name)
        return scenario_suite(name, capability="inference", level=1, dtypes=("float32",), scenarios=rows, **extra)

    yield register
    for name in names:
        registry._REGISTRY.pop(name, None)


def _run(name, device, manifest, bugs=()):
    from torchcts.testing import faulty

    faulty.disable_bugs()
    faulty.enable_bugs(*bugs)
    try:
        settings = EngineSettings(target=Target(device), manifest=manifest, level=1, max_examples=10,
                                  versions=versions(), shrink=False)
        return run_item(PlanItem(name, "transposed", "scenario", "float32", 1), settings)
    finally:
        faulty.disable_bugs()


def test_the_registry_sees_the_rows(suite):
    test = suite("table_probe_registry", [Scenario("transposed", PARAMS, transposed_add, needs="sparse"),
                                          Scenario("exact", PARAMS, transposed_add, Exact())])
    spec = registry.get("table_probe_registry")
    assert test.__name__ == "test_table_probe_registry" and test.__module__ == __name__
    assert registry.property_of(test) is spec and spec.scenario
    assert spec.items.scenarios == ("transposed", "exact") and spec.items.comparison == "tolerance"
    assert spec.items.programs == {"transposed": transposed_add, "exact": transposed_add}
    assert spec.items.case_params("exact") is PARAMS and spec.items.needs == {"transposed": "sparse"}
    assert sorted(test.scenarios) == ["exact", "transposed"]


def test_a_table_of_exact_rows_says_bits(suite):
    suite("table_probe_bits", [Scenario("transposed", PARAMS, transposed_add, Exact()),
                               Scenario("own", PARAMS, transposed_add, Custom(lambda cts, row: None, bits=True))])
    assert registry.get("table_probe_bits").items.comparison == "bits"
    suite("table_probe_not_bits", [Scenario("transposed", PARAMS, transposed_add, Exact()),
                                   Scenario("own", PARAMS, transposed_add, Custom(lambda cts, row: None))])
    assert registry.get("table_probe_not_bits").items.comparison == "tolerance"


@pytest.mark.slow  # loads a manifest in a child and runs items
def test_the_device_giving_cpus_result_passes_and_a_wrong_one_fails_naming_the_case(suite, manifest):
    suite("table_probe_run", [Scenario("transposed", PARAMS, transposed_add, Tolerance(outputs="sum, added"))])
    passed = _run("table_probe_run", "faulty", manifest)
    assert passed["outcome"] is Outcome.PASSED and passed["examples"] >= 3, passed
    failed = _run("table_probe_run", "faulty", manifest, bugs=("noncontiguous_add",))
    assert failed["outcome"] is Outcome.FAILED, failed
    assert "transposed: rows=" in failed["error"] and "[sum, added]" in failed["error"], failed["error"]


@pytest.mark.slow  # loads a manifest in a child and runs items
def test_exact_rows_compare_bit_for_bit(suite, manifest):
    suite("table_probe_exact", [Scenario("transposed", PARAMS, transposed_add, Exact())])
    assert _run("table_probe_exact", "faulty", manifest)["outcome"] is Outcome.PASSED
    assert _run("table_probe_exact", "faulty", manifest, bugs=("noncontiguous_add",))["outcome"] is Outcome.FAILED


@pytest.mark.slow  # loads a manifest in a child and runs items
def test_the_widening_reads_the_named_parameters(suite, manifest):
    seen = []

    def widen(values):
        seen.append(dict(values))
        return 2.0 * values["rows"]

    suite("table_probe_widen", [Scenario("transposed", PARAMS, transposed_add, Tolerance(widen=widen))])
    assert _run("table_probe_widen", "cpu", manifest)["outcome"] is Outcome.PASSED
    assert seen and all(set(values) == {"input", "rows", "scale"} and 2 <= values["rows"] <= 4 for values in seen)


@pytest.mark.slow  # loads a manifest in a child and runs items
def test_a_row_may_draw_its_own_cases_and_check_them_its_own_way(suite, manifest):
    checked = []

    def cases(cts):
        return st.sampled_from([3]).map(lambda rows: scenario_case.scenario_case(
            "transposed", cts.dtype, PARAMS, {"input": torch.zeros(1), "rows": rows, "scale": 1.0}, "three rows"))

    def check(cts, row):
        return lambda case: checked.append(row.values(case)["rows"])

    suite("table_probe_custom", [Scenario("transposed", PARAMS, comparison=Custom(check), cases=cases)])
    assert _run("table_probe_custom", "cpu", manifest)["outcome"] is Outcome.PASSED
    assert checked and set(checked) == {3}


def test_misdeclared_rows_fail_at_declaration():
    with pytest.raises(registry.RegistryError, match="give its program"):
        Scenario("transposed", PARAMS)
    with pytest.raises(registry.RegistryError, match="params must be a CaseParams"):
        Scenario("transposed", {"rows": Ints(1, 2)}, transposed_add)
    with pytest.raises(registry.RegistryError, match="comparison must be"):
        Scenario("transposed", PARAMS, transposed_add, "bits")
    with pytest.raises(registry.RegistryError, match="declared twice"):
        scenario_suite("table_probe_twice", capability="inference", level=1, dtypes=("float32",),
                       scenarios=[Scenario("a", PARAMS, transposed_add), Scenario("a", PARAMS, transposed_add)])
    assert "table_probe_twice" not in registry.names()


def test_one_name_from_two_suite_modules_is_refused(suite):
    suite("table_probe_module", [Scenario("transposed", PARAMS, transposed_add)])
    namespace = {"__name__": "another_suite_module", "scenario_suite": scenario_suite, "rows": [
        Scenario("transposed", PARAMS, transposed_add)]}
    with pytest.raises(registry.RegistryError, match="registered twice: .*test_scenario_table and another_suite"):
        exec("scenario_suite('table_probe_module', capability='inference', level=1, dtypes=('float32',), "
             "scenarios=rows)", namespace)



def test_the_dtype_widening_and_the_wording_are_the_rows():
    case = scenario_case.scenario_case("transposed", torch.float16, PARAMS,
                                       {"input": torch.zeros(1), "rows": 3, "scale": 1.0}, ("three rows", "scale 1"))
    by_dtype = Tolerance(widen=lambda values: values["rows"], dtype_widen={"float16": 4.0, "bfloat16": 4.0},
                         said="{scenario} of {case}")
    assert by_dtype.factor({"rows": 3}, torch.float16) == 12.0 and by_dtype.factor({"rows": 3}, torch.float32) == 3.0
    assert by_dtype.factor({"rows": 3}) == 3.0 and Tolerance(widen=2.0).factor({}, torch.bfloat16) == 2.0
    assert by_dtype.wording("transposed", case) == ("transposed", "transposed of three rows; scale 1")
    assert Tolerance(said="{scenario}: {first}").wording("transposed", case) == ("transposed", "transposed: three rows")
    assert Tolerance().wording("transposed", case) == ("three rows", "three rows")


def device_or_cpu(input, rows, scale):
    """1 on CPU, 2 on any other device: a result the device never gives as CPU does."""
    return torch.full((rows,), 1.0 if input.device.type == "cpu" else 2.0, device=input.device) * scale


@pytest.mark.slow  # loads a manifest in a child and runs items
def test_an_alternative_oracle_result_passes_and_a_failure_says_the_rows_wording(suite, manifest):
    def doubled(sample, expected):
        return expected * 2

    wording = "{scenario} of {case}"
    suite("table_probe_alternative", [Scenario("transposed", PARAMS, device_or_cpu,
                                               Tolerance(said=wording, alternative=doubled))])
    suite("table_probe_no_alternative", [Scenario("transposed", PARAMS, device_or_cpu,
                                                  Tolerance(said=wording, alternative=lambda sample, expected: None))])
    assert _run("table_probe_alternative", "faulty", manifest)["outcome"] is Outcome.PASSED
    failed = _run("table_probe_no_alternative", "faulty", manifest)
    assert failed["outcome"] is Outcome.FAILED and "transposed of transposed: rows=" in failed["error"], failed
