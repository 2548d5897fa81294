"""The rng_distributions suite (`torchcts.properties.suites.rng_distributions`), its verdicts
(`torchcts.properties.rng_verdicts`) and statistics (`torchcts.properties.rng_statistics`): the tests give calibrated
p-values and reject wrong laws, every scenario passes on CPU and clean faulty, each seeded distribution bug is
caught and fires only in its condition."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import find

from torchcts.cases.scenario_case import named
from torchcts.core.outcomes import Outcome
from torchcts.plan import registry
from torchcts.properties.rng_statistics import (binomial_pvalue, chi_square_pvalue, kolmogorov_pvalue, ks_pvalue,
                                                ks_statistic)
from torchcts.properties.rng_verdicts import continuous_cdf, verdicts
from torchcts.properties.scenario_table import Custom
from torchcts.properties.suites import rng_distributions as suite
from torchcts.properties.suites.rng_distributions import SCENARIOS, draw_distribution
from torchcts.testing.faulty.suite_bugs.rng_distributions import BUGS

BUG = {bug.name: bug for bug in BUGS}
# bug -> (scenario, dtype) that catches it
DETECTED_IN = {"normal_float64_std_as_variance": ("normal", "float64"),
               "exponential_mean_as_rate": ("exponential", "float32"),
               "bernoulli_tensor_small_p_never": ("bernoulli_tensor", "float32"),
               "geometric_counts_failures": ("geometric", "float32"),
               "multinomial_no_replacement_repeats": ("multinomial_no_replacement", "float32"),
               "randperm_large_repeats": ("randperm", "float32"),
               "dropout_scales_by_inverse_p": ("dropout", "float32")}


def test_the_suite_is_registered_with_the_rng_distributions_capability():
    registry.load()
    spec = registry.get("rng_distributions")
    assert (spec.capability, spec.level, set(spec.items.scenarios)) == ("rng_distributions", 5, set(SCENARIOS))


def test_the_kolmogorov_tail_matches_known_critical_values():
    # D_crit(alpha = 0.05) ~ 1.358 / sqrt(n), D_crit(0.01) ~ 1.628 / sqrt(n) for large n
    assert kolmogorov_pvalue(1.358 / math.sqrt(10000), 10000) == pytest.approx(0.05, rel=0.03)
    assert kolmogorov_pvalue(1.628 / math.sqrt(10000), 10000) == pytest.approx(0.01, rel=0.05)
    assert kolmogorov_pvalue(0.0, 100) == 1.0


def test_chi_square_and_binomial_p_values_match_closed_forms():
    # chi-square with 1 df: p = erfc(sqrt(x / 2)); counts [60, 40] against [0.5, 0.5] give x = 4
    assert chi_square_pvalue(torch.tensor([60.0, 40.0]), torch.tensor([0.5, 0.5])) == pytest.approx(
        math.erfc(math.sqrt(2.0)), rel=1e-9)
    assert binomial_pvalue(0, 10, 0.5) == pytest.approx(2 * 0.5**10)
    assert binomial_pvalue(5, 10, 0.5) == 1.0
    assert binomial_pvalue(3, 3, 1.0) == 1.0 and binomial_pvalue(2, 3, 1.0) == 0.0


def test_the_ks_test_allows_for_rounding_and_rejects_a_wrong_law():
    draws = torch.empty(20000).normal_(0, 1, generator=torch.Generator().manual_seed(1))
    normal = continuous_cdf("normal", [0.0, 1.0])
    assert ks_pvalue(draws.bfloat16(), normal, torch.finfo(torch.bfloat16).eps) > 1e-3  # rounded, not rejected
    assert ks_statistic(draws.bfloat16(), normal) <= ks_statistic(draws, normal) + 2**-7
    assert ks_pvalue(draws * 1.2, normal) < 1e-12


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_verdicts_hold_for_cpu_draws_and_reject_a_wrong_parameter(scenario):
    params = {"uniform": [0.0, 1.0], "normal": [0.0, 1.0], "log_normal": [0.0, 1.0], "cauchy": [0.0, 1.0],
              "exponential": [2.0], "bernoulli": [0.3], "bernoulli_tensor": [0.3, 0.7], "geometric": [0.3],
              "randint": [0, 10], "multinomial": [1, 2, 3], "multinomial_no_replacement": [1, 2, 3, 2],
              "randperm": [5, 100], "dropout": [0.3, 1.0]}[scenario]
    wrong = {"uniform": [0.0, 1.2], "normal": [0.0, 1.3], "log_normal": [0.3, 1.0], "cauchy": [0.0, 1.5],
             "exponential": [3.0], "bernoulli": [0.35], "bernoulli_tensor": [0.3, 0.75], "geometric": [0.35],
             "randint": [0, 11], "multinomial": [1, 2, 4], "multinomial_no_replacement": [1, 2, 5, 2],
             "randperm": [5, 101], "dropout": [0.35, 1.0]}[scenario]
    n = 1000 if scenario == "randperm" else 2000 if scenario == "multinomial_no_replacement" else 20000
    draws = draw_distribution("cpu", scenario, "float32", params, n, 3)
    assert all(o.holds for o in verdicts(scenario, params, draws, 1e-8, torch.float32)), scenario
    assert not all(o.holds for o in verdicts(scenario, wrong, draws, 1e-8, torch.float32)), scenario


@pytest.mark.parametrize("scenario,dtype", [("normal", "bfloat16"), ("uniform", "float16"), ("randint", "float64"),
                                            ("geometric", "bfloat16"), ("dropout", "float16")])
def test_a_scenario_passes_on_cpu_and_clean_faulty_in_each_precision(run_suite, scenario, dtype):
    assert run_suite("rng_distributions", scenario, dtype, max_examples=5)["outcome"] is Outcome.PASSED
    assert run_suite("rng_distributions", scenario, dtype, device="faulty", max_examples=3)["outcome"] is Outcome.PASSED


@pytest.mark.parametrize("bug", sorted(BUG))
def test_each_seeded_bug_is_detected(run_suite, bug):
    scenario, dtype = DETECTED_IN[bug]
    clean = run_suite("rng_distributions", scenario, dtype, device="faulty", max_examples=8)
    record = run_suite("rng_distributions", scenario, dtype, device="faulty", bugs=(bug,), max_examples=8,
                       shrink=False)
    assert clean["outcome"] is Outcome.PASSED, clean
    assert record["outcome"] is Outcome.FAILED, record


def _aten(name):
    packet, overload = name.split(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


def test_the_bugs_fire_only_in_their_condition():
    normal, exponential = _aten("normal_.default"), _aten("exponential_.default")
    x64, x32 = torch.zeros(4, dtype=torch.float64), torch.zeros(4)
    assert BUG["normal_float64_std_as_variance"].fires(normal, (x64, 0.0, 2.0), {})
    assert not BUG["normal_float64_std_as_variance"].fires(normal, (x32, 0.0, 2.0), {})
    assert not BUG["normal_float64_std_as_variance"].fires(normal, (x64, 0.0, 1.0), {})
    assert BUG["exponential_mean_as_rate"].fires(exponential, (x32, 2.0), {})
    assert not BUG["exponential_mean_as_rate"].fires(exponential, (x32, 0.5), {})
    bernoulli = _aten("bernoulli.default")
    assert BUG["bernoulli_tensor_small_p_never"].fires(bernoulli, (torch.tensor([0.5, 2**-9]),), {})
    assert not BUG["bernoulli_tensor_small_p_never"].fires(bernoulli, (torch.tensor([0.0, 2**-8, 0.5]),), {})
    geometric = _aten("geometric_.default")
    assert BUG["geometric_counts_failures"].fires(geometric, (x32, 0.2), {})
    assert not BUG["geometric_counts_failures"].fires(geometric, (x32, 0.25), {})
    multinomial = _aten("multinomial.default")
    weights = torch.ones(6)
    assert BUG["multinomial_no_replacement_repeats"].fires(multinomial, (weights, 4), {})
    assert not BUG["multinomial_no_replacement_repeats"].fires(multinomial, (weights, 3), {})
    assert not BUG["multinomial_no_replacement_repeats"].fires(multinomial, (weights, 4, True), {})
    randperm = _aten("randperm.generator_out")
    assert BUG["randperm_large_repeats"].fires(randperm, (4096,), {})
    assert not BUG["randperm_large_repeats"].fires(randperm, (4095,), {})
    dropout = _aten("native_dropout.default")
    assert BUG["dropout_scales_by_inverse_p"].fires(dropout, (x32, 0.6, True), {})
    assert not BUG["dropout_scales_by_inverse_p"].fires(dropout, (x32, 0.5, True), {})
    assert not BUG["dropout_scales_by_inverse_p"].fires(dropout, (x32, 0.6, False), {})


@pytest.mark.parametrize("bug,scenario,dtype", [("normal_float64_std_as_variance", "normal", "float32"),
                                                ("multinomial_no_replacement_repeats", "multinomial", "float32")])
def test_a_bug_leaves_a_run_outside_its_condition_passing(run_suite, bug, scenario, dtype):
    record = run_suite("rng_distributions", scenario, dtype, device="faulty", bugs=(bug,), max_examples=5)
    assert record["outcome"] is Outcome.PASSED, record


def test_the_rows_judge_the_draws_by_the_case_values_read_by_name():
    """Each row is a Custom check (the statistical oracle) with no program to export, over cases whose values are
    stored by their declared names: scenario, dtype, params, samples, seed."""
    registry.load()
    rows = suite.test_rng_distributions.scenarios
    assert tuple(rows) == SCENARIOS and registry.get("rng_distributions").items.programs == {}
    assert all(isinstance(row.comparison, Custom) and row.program is None for row in rows.values())
    case = find(suite.distribution_cases("geometric", torch.float32, "float32"), lambda case: True)  # the simplest
    values = named(rows["geometric"].params, case.sample)
    assert (values["scenario"], values["dtype"]) == ("geometric", "float32") and 2000 <= values["samples"] <= 20000
    draws = draw_distribution("cpu", "geometric", "float32", values["params"], values["samples"], values["seed"])
    assert all(o.holds for o in verdicts("geometric", values["params"], draws, 1e-8, torch.float32))
