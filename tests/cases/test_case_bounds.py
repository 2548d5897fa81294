"""Every stored scenario value is bounded (issue 41, point 1): each scenario declares the bounds of what its cases
store, the case reader refuses a value outside them naming the field before anything runs, the engine refuses a
drawn case outside them, and docs/corpus.md's table is the declarations'.

The hostile values come from the declarations themselves (each bound's `out_of_bounds()`), so every suite's every
stored parameter is tried, including suites added later."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hypothesis
from hypothesis import strategies as st
import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.bounds import (CaseParams, Dtypes, Either, Flag, Floats, Ints, Lists, Mapping, OneOf, Optional,
                                   Tensors, Tuples)
from torchcts.cases.bounds_table import END, START, refreshed
from torchcts.cases.codec import CodecError
from torchcts.cases.files import new_case, save_case, case_path
from torchcts.cases.replay_items import replay_items
from torchcts.plan import registry
from tests import warm_programs

ROOT = Path(__file__).resolve().parents[2]
SPECS = [spec for spec in registry.load() if spec.scenario]
SCENARIOS = [(spec.name, scenario) for spec in SPECS for scenario in spec.items.scenarios]


# -- the bound kinds -----------------------------------------------------------------------------------------------

BOUNDS = [Ints(1, 8), Ints(-1, 2), Floats(0.0, 1.5), OneOf(("sin", "tanh")), Flag(), Lists(Ints(0, 3), 1, 4),
          Tuples((Ints(0, 1), OneOf(("a",)))), Optional(Ints(2, 5)), Either((Ints(0, 9), OneOf(("all",)))),
          Mapping({"lr": Floats(0.0, 1.0), "momentum": Floats(0.0, 0.99)}, required=("lr",)),
          Dtypes(("float32", "bfloat16"))]


@hypothesis.settings(max_examples=50, database=None, deadline=None)
@hypothesis.given(data=st.data())
def test_each_bound_accepts_what_it_draws(data):
    for bound in BOUNDS:
        value = data.draw(bound.strategy())
        assert bound.problem(value) is None, (bound, value)


def test_each_bound_refuses_its_own_hostile_values():
    for bound in BOUNDS:
        for bad in bound.out_of_bounds():
            assert bound.problem(bad) is not None, (bound, bad)


def test_integers_are_not_booleans_and_sets_compare_with_their_type():
    assert Ints(0, 3).problem(True) is not None and Ints(0, 3).problem(2) is None
    assert OneOf((False, True)).problem(0) is not None and OneOf((1, 2)).problem(True) is not None
    assert Floats(0, 1).problem(float("nan")) is not None and Floats(0, 1).problem(True) is not None
    assert Lists(Ints(0, 1), 0, 2).problem([0, 0, 0]) == "a list of 3 values; allowed 0..2"
    assert Lists(Ints(0, 1), 0, 2).problem([0, 5]) == "[1]: 5 is outside 0..1"


def test_tensors_are_bounded_by_elements_and_dimensions():
    bound = Tensors(max_elements=16, max_dims=2)
    assert bound.problem(torch.zeros(4, 4)) is None
    assert "17 elements" in bound.problem(torch.zeros(17))
    assert "3 dimensions" in bound.problem(torch.zeros(1, 1, 1))
    assert bound.problem([0.0] * 4) == "expected a tensor, got list"
    assert bound.problem(torch.zeros(16).expand(2, 16)) is not None  # a stride-0 view counts in full


def test_case_params_name_the_field_count_keywords_and_rules():
    params = CaseParams({"rows": Ints(1, 8), "ops": Lists(OneOf(("sin",)), 1, 2), "streams": Ints(1, 3),
                         "producer": Ints(0, 2)}, kwargs={"scale": Floats(0, 1)},
                        rules=(("producer < streams", lambda p: p["producer"] < p["streams"]),))
    ok = SampleInput(torch.zeros(1), args=(3, ["sin"], 2, 1), kwargs={"scale": 0.5})
    assert params.problem(ok) is None
    assert params.problem(SampleInput(torch.zeros(1), args=(10**9, ["sin"], 2, 1))) == (
        "inputs.args[0] (rows)", "1000000000 is outside 1..8")
    assert params.problem(SampleInput(torch.zeros(1), args=(3, ["sin"], 2))) == (
        "inputs.args", "3 values; this scenario stores 4 (rows, ops, streams, producer)")
    assert params.problem(SampleInput(torch.zeros(1), args=(3, ["sin"], 2, 2))) == (
        "inputs", "producer < streams does not hold")
    assert params.problem(SampleInput(torch.zeros(1), args=(3, ["sin"], 2, 1), kwargs={"out": 1}))[0] == \
        "inputs.kwargs.out"
    assert params.problem(SampleInput(torch.zeros(10**3), args=(3, ["sin"], 2, 1)))[0] == "inputs.input"


def test_a_rule_over_values_of_the_wrong_shape_refuses_instead_of_raising():
    params = CaseParams({"sizes": Lists(Ints(0, 4), 0, 3)}, rules=(("two sizes", lambda p: p["sizes"][1] >= 0),))
    assert params.problem(SampleInput(torch.zeros(1), args=([1],))) == ("inputs", "two sizes does not hold")


# -- every suite declares its bounds -------------------------------------------------------------------------------

def test_every_installed_scenario_declares_the_bounds_of_what_it_stores():
    missing = [f"{name}:{scenario}" for name, scenario in SCENARIOS
               if registry.get(name).items.case_params(scenario) is None]
    assert not missing, f"scenarios without ScenarioItems.params: {missing}"


def test_the_docs_table_is_the_declarations():
    doc = (ROOT / "docs" / "corpus.md").read_text()
    assert START in doc and END in doc
    assert doc == refreshed(doc, registry.load()), "run: python scripts/generate_bounds_table.py"


def _within(bound):
    """A value within `bound` (the smallest Hypothesis finds; a one-element tensor for a tensor bound)."""
    if isinstance(bound, Tensors):
        from torchcts import dtypes as dtype_names

        return torch.zeros((), dtype=dtype_names.lookup(bound.dtypes[0]) if bound.dtypes else torch.float32)
    if isinstance(bound, Either):
        for option in bound.options:
            try:
                return _within(option)
            except TypeError:
                continue
        raise TypeError(f"no value within {bound}")
    if isinstance(bound, Lists):
        return [_within(bound.item) for _ in range(bound.min_size)]
    if isinstance(bound, Tuples):
        return [_within(item) for item in bound.items]
    if isinstance(bound, Mapping):
        known = dict(bound.fields)
        return {key: _within(known[key]) for key in bound.required}
    return hypothesis.find(bound.strategy(), lambda _: True)


def _hostile(params: CaseParams):
    """(field, sample) pairs: a baseline within every bound with one stored value replaced by one of its bound's
    out-of-bounds values; each must be refused naming that field."""
    baseline = [_within(bound) for _, bound in params.args]
    base_input = _within(params.input)
    for index, (name, bound) in enumerate(params.args):
        for bad in bound.out_of_bounds():
            args = list(baseline)
            args[index] = bad
            yield f"inputs.args[{index}] ({name})", SampleInput(base_input, args=tuple(args))
    for name, bound in params.kwargs:
        for bad in bound.out_of_bounds():
            yield f"inputs.kwargs.{name}", SampleInput(base_input, args=tuple(baseline), kwargs={name: bad})
    for bad in params.input.out_of_bounds():
        yield "inputs.input", SampleInput(bad, args=tuple(baseline))


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
@pytest.mark.parametrize("prop", [spec.name for spec in SPECS])
def test_every_stored_value_of_every_scenario_out_of_bounds_is_refused_naming_it(prop):
    spec = registry.get(prop)
    tried = 0
    for scenario in spec.items.scenarios:
        params = spec.items.case_params(scenario)
        if params is None:
            pytest.fail(f"{prop}:{scenario} declares no bounds")
        for field, sample in _hostile(params):
            problem = params.problem(sample)
            assert problem is not None and problem[0] == field, (scenario, field, problem)
            tried += 1
    assert tried >= len(spec.items.scenarios)


def _encodable_hostile(params: CaseParams):
    """The first hostile (field, sample) of `params` whose values a case file can hold."""
    for field, sample in _hostile(params):
        try:
            new_case(prop="x", op="x", variant="scenario", dtype="float32", device_type="cpu", backend=None,
                     sample=sample, failure={}, found={})
        except CodecError:
            continue
        return field, sample
    return None


@pytest.mark.parametrize("prop", [spec.name for spec in SPECS])
def test_a_stored_case_out_of_bounds_is_an_unreadable_replay_item_naming_the_field(prop, tmp_path):
    spec = registry.get(prop)
    scenario = spec.items.scenarios[0]
    found = _encodable_hostile(spec.items.case_params(scenario))
    assert found is not None, f"{prop}:{scenario}: no hostile value a case file can hold"
    field, sample = found
    case = new_case(prop=prop, op=scenario, variant="scenario", dtype=spec.items.dtypes[0], device_type="cpu",
                    backend=None, sample=sample, failure={"outcome": "failed", "message": "hostile"}, found={})
    path = case_path(tmp_path, case)
    save_case(path, case)
    [item] = replay_items([path])
    assert item.problem is not None and item.problem[0] == field, item.problem


def _first_count(params: CaseParams) -> int | None:
    """The index of the stored integer with the widest range that is no seed (a count or a size), or None."""
    counts = [(bound.high - bound.low, index) for index, (name, bound) in enumerate(params.args)
              if isinstance(bound, Ints) and "seed" not in name and bound.high > 1]
    return max(counts)[1] if counts else None


@pytest.mark.slow
@pytest.mark.parametrize("prop", ["rng_distributions", "device_api", "guard_alloc", "events"])
def test_replay_of_a_tiny_case_asking_for_a_huge_count_exits_2_before_running(prop, tmp_path):
    """The issue's examples: a case file under 900 bytes whose count asks for billions; replay refuses it at once."""
    spec = registry.get(prop)
    scenario = next(s for s in spec.items.scenarios if _first_count(spec.items.case_params(s)) is not None)
    params = spec.items.case_params(scenario)
    index = _first_count(params)
    args = [_within(bound) for _, bound in params.args]
    args[index] = params.args[index][1].high * 1000  # a thousand times the most the suite ever asks for
    case = new_case(prop=prop, op=scenario, variant="scenario", dtype=spec.items.dtypes[0], device_type="cpu",
                    backend=None, sample=SampleInput(_within(params.input), args=tuple(args)),
                    failure={"outcome": "failed", "message": "hostile"}, found={})
    path = case_path(tmp_path, case)
    save_case(path, case)
    assert path.stat().st_size < 2000
    env = dict(os.environ, TORCHCTS_FAULTY="1")
    done = warm_programs.run([sys.executable, "-m", "torchcts", "replay", str(path), "--device", "cpu",
                           "--results-dir", str(tmp_path / "results")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    name = params.args[index][0]
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "unreadable" in done.stdout and f"inputs.args[{index}] ({name})" in done.stdout, done.stdout[-2000:]
    records = [json.loads(line) for line in (next((tmp_path / "results").iterdir()) / "records.jsonl").open()]
    assert all(r["outcome"] != "passed" for r in records)


def test_a_suite_without_declared_bounds_replays_tensors_only(tmp_path):
    """A custom scenario suite written before bounds stores tensors (bounded by --max-case-bytes); a plain value in
    its case needs a declaration, so such a case is unreadable, naming the field."""
    from torchcts.cases.replay_items import stored_values_problem

    def test_undeclared(cts):
        pass

    registry.register_property("bounds_undeclared", capability="inference", level=1,
                               items=registry.ScenarioItems(("probe",), ("float32",)))(test_undeclared)
    try:
        spec = registry.get("bounds_undeclared")
        assert stored_values_problem(spec, "probe", SampleInput(torch.zeros(3), args=(torch.ones(2),))) is None
        field, message = stored_values_problem(spec, "probe", SampleInput(torch.zeros(3), args=(torch.ones(2), 10**9)))
        assert field == "inputs.args[1]" and "declares no bounds" in message and "tensors only" in message
    finally:
        registry._REGISTRY.pop("bounds_undeclared", None)


# -- reviewer findings (issue 41, point 1): sides of 0, huge ints, devices, dtypes, cut cases ------------------------

def test_a_side_of_zero_counts_as_one_so_every_side_is_bounded():
    """A (20000, 0) input and a (0, 20000) other hold nothing, yet `mm` of them makes 4e8 elements: the bound is on
    the product of the sides with each 0 counted as 1."""
    bound = Tensors(max_elements=16, max_dims=2)
    assert bound.problem(torch.zeros(4, 0)) is None and bound.problem(torch.zeros(0)) is None
    assert bound.problem(torch.zeros(16, 0)) is None
    problem = bound.problem(torch.zeros(20000, 0))
    assert problem == ("a tensor of sizes [20000, 0] spanning 20000 elements (a side of 0 counted as 1); allowed at "
                       "most 16")
    assert bound.problem(torch.zeros(0, 17)) is not None
    assert bound.problem(torch.zeros(17, 0).to_sparse()) is not None  # a sparse tensor's sides too
    assert any(isinstance(bad, torch.Tensor) and bad.numel() == 0 for bad in bound.out_of_bounds())


def test_a_nested_tensor_spans_its_components():
    bound = Tensors(max_elements=10, max_dims=3)
    nested = torch.nested.nested_tensor([torch.zeros(2, 3), torch.zeros(1, 3)])
    assert bound.problem(nested) is None
    assert bound.problem(torch.nested.nested_tensor([torch.zeros(3, 3), torch.zeros(1, 3)])) == (
        "a tensor of 12 elements; allowed at most 10")


def test_a_stored_tensor_is_a_cpu_tensor_of_the_declared_dtypes():
    assert Tensors().problem(torch.zeros(1, device="meta")) == "a tensor on the 'meta' device; a stored tensor is on cpu"
    indices = Tensors(max_elements=8, max_dims=1, dtypes=("int64",))
    assert indices.problem(torch.zeros(3, dtype=torch.int64)) is None
    assert indices.problem(torch.zeros(3)) == "a float32 tensor; allowed: int64"
    assert "tensor of int64 of at most 8 elements" in indices.describe()
    for bad in indices.out_of_bounds():
        assert indices.problem(bad) is not None, bad


def test_an_int_too_large_for_a_float_is_refused_not_raised():
    assert Floats(0.0, 1.0).problem(10**400) == (
        f"expected a finite number in 0.0..1.0, got {repr(10**400)[:57]}...")
    assert Floats(-1.0, 1e300).problem(10**300) is None  # large, but a float holds it: within


def test_a_bound_that_raises_is_that_field_s_problem():
    """A bound whose check raises on a value no one foresaw refuses the value, in one line, naming the field."""
    class Fragile(Ints):
        def problem(self, value):
            return 1 / 0

    params = CaseParams({"count": Fragile(0, 3)})
    field, message = params.problem(SampleInput(torch.zeros(1), args=(2,)))
    assert field == "inputs.args[0] (count)" and "ZeroDivisionError" in message and "\n" not in message


def _stored_case(tmp_path, prop: str, scenario: str, sample) -> Path:
    spec = registry.get(prop)
    case = new_case(prop=prop, op=scenario, variant="scenario", dtype=spec.items.dtypes[0], device_type="cpu",
                    backend=None, sample=sample, failure={"outcome": "failed", "message": "hostile"}, found={})
    path = case_path(tmp_path / "cases", case)
    save_case(path, case)
    return path


def _replay(path: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return warm_programs.run([sys.executable, "-m", "torchcts", "replay", str(path), "--device", "cpu", "--results-dir",
                           str(tmp_path / "results")], capture_output=True, text=True,
                          env=dict(os.environ, TORCHCTS_FAULTY="1"), cwd=tmp_path, timeout=600)


@pytest.mark.slow
def test_replay_of_a_case_with_an_int_too_large_for_a_float_bound_is_one_unreadable_line(tmp_path):
    """The reviewer's case: an optimizer step size of 10**400 raised OverflowError inside the bounds check, and
    pytest printed 43 INTERNALERROR lines. Now it is one unreadable line naming the field, exit 2."""
    found = None
    for candidate in SPECS:
        for scenario in candidate.items.scenarios:
            params = candidate.items.case_params(scenario)
            for index, (name, bound) in enumerate(params.args):
                if isinstance(bound, Floats):
                    found = (candidate.name, scenario, params, index, name)
                    break
            if found:
                break
        if found:
            break
    assert found is not None, "no scenario stores a bounded number"
    prop, scenario, params, index, name = found
    args = [_within(bound) for _, bound in params.args]
    args[index] = 10**400
    path = _stored_case(tmp_path, prop, scenario, SampleInput(_within(params.input), args=tuple(args)))
    done = _replay(path, tmp_path)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "INTERNALERROR" not in done.stdout + done.stderr and "Traceback" not in done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("unreadable")]
    assert len(lines) == 1 and f"inputs.args[{index}] ({name})" in lines[0] and "finite number" in lines[0], lines


def test_replay_of_a_meta_tensor_is_unreadable_not_a_cpu_contract_skip(tmp_path):
    """The reviewer's case: a stress case whose placeholder input the codec decoded onto the meta device ended in
    "not run (cpu_contract)" with exit 0; a stored tensor is on cpu."""
    spec = registry.get("stress")
    scenario = spec.items.scenarios[0]
    params = spec.items.case_params(scenario)
    args = tuple(_within(bound) for _, bound in params.args)
    path = _stored_case(tmp_path, "stress", scenario, SampleInput(torch.zeros(1, device="meta"), args=args))
    [item] = replay_items([path])
    assert item.problem == ("inputs.input", "a tensor on the 'meta' device; a stored tensor is on cpu"), item.problem


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_failure_cut_smaller_stays_within_its_bounds_so_every_stored_case_is_readable(tmp_path):
    """After a failure the engine cuts the case's dimensions (`cases.reduce`); a cut that leaves the declared bounds
    does not count. The reviewer's run (serialization on faulty with save_drops_storage_offset) stored 18 cases, 7
    of them unreadable ("the slice and the window lie within the 1-D base"): the items that stored those now store
    only cases the case reader accepts."""
    from torchcts.engine.run import EngineSettings, run_item, versions
    from torchcts.engine.targets import Target
    from torchcts.manifest import load_manifest
    from torchcts.plan.build import PlanItem
    from torchcts.testing import faulty
    from torchcts.testing.selftest import faulty_manifest

    manifest_path = tmp_path / "manifest.py"
    manifest_path.write_text(faulty_manifest())
    manifest = load_manifest(manifest_path)[0]
    spec = registry.get("serialization")
    corpus = tmp_path / "corpus"
    faulty.disable_bugs()
    faulty.enable_bugs("save_drops_storage_offset")
    try:
        for scenario, dtype in [("views", "float16"), ("views", "bool"), ("to_cpu", "float32"), ("to_cpu", "int64")]:
            settings = EngineSettings(target=Target("faulty"), manifest=manifest, level=8, max_examples=100,
                                      versions=versions(), shrink=True, corpus_dir=corpus)
            run_item(PlanItem("serialization", scenario, spec.variant, dtype, spec.level), settings)
    finally:
        faulty.disable_bugs()
    stored = sorted(corpus.rglob("*.json"))
    assert len(stored) >= 4, stored
    problems = [(item.path.name, item.problem) for item in replay_items(stored) if item.problem is not None]
    assert not problems, problems
