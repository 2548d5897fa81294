"""A scenario case file stores its parameters by name (`"inputs": {"scenario": {...}}`): it reads back to the case
the engine ran, keeps the fingerprint of the positional form (so one case is one file in either form), and a
file of the positional form still reads; a name the suite does not declare is refused naming it."""

from __future__ import annotations

import json

import pytest
import torch
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.files import CaseFileError, load_case, new_case, save_case
from torchcts.cases.replay_items import replay_cases
from torchcts.plan import registry

PROPERTY, SCENARIO = "module_hooks", "mlp"
SAMPLE = SampleInput(torch.randn(2, 3), args=("mlp", [3, 4, 2], 7, [0, 1, 2, 3], [0.5, -1.0, 2.0, 0.5]))


def _case(named: bool):
    params = registry.get(PROPERTY).items.case_params(SCENARIO) if named else None
    return new_case(prop=PROPERTY, op=SCENARIO, variant="scenario", dtype="float32", device_type="cpu", backend=None,
                    sample=SAMPLE, failure={"outcome": "failed", "message": "differs"}, found={},
                    scenario_params=params)


def test_a_scenario_case_is_stored_by_name_and_reads_back_the_same(tmp_path):
    case = _case(named=True)
    assert set(case.inputs) == {"scenario"}
    assert set(case.inputs["scenario"]) == {"input", "model", "sizes", "seed", "targets", "scales"}
    assert case.inputs["scenario"]["sizes"] == [3, 4, 2] and case.inputs["scenario"]["model"] == "mlp"
    save_case(tmp_path / "case.json", case)
    loaded = load_case(tmp_path / "case.json")
    sample = loaded.sample()
    assert torch.equal(sample.input, SAMPLE.input) and sample.args == SAMPLE.args and sample.kwargs == {}
    replayed, = replay_cases(loaded)
    assert replayed.op_id == SCENARIO and replayed.sample.args == SAMPLE.args


def test_both_forms_have_one_fingerprint_and_the_positional_form_still_reads(tmp_path):
    named, positional = _case(named=True), _case(named=False)
    assert named.fingerprint == positional.fingerprint and "args" in positional.inputs
    save_case(tmp_path / "old.json", positional)
    old = load_case(tmp_path / "old.json").sample()
    assert torch.equal(old.input, SAMPLE.input) and old.args == SAMPLE.args


@pytest.mark.parametrize("damage, field", [
    (lambda params: params.update(depth=3), "inputs.scenario.depth"),
    (lambda params: params.pop("seed"), "inputs.scenario.seed"),
    (lambda params: params.update(sizes=[3, 4]), "inputs.args[1] (sizes)"),
])
def test_a_named_case_outside_the_declaration_is_refused_naming_the_parameter(tmp_path, damage, field):
    data = _case(named=True).as_json()
    damage(data["inputs"]["scenario"])
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CaseFileError) as raised:
        replay_cases(load_case(path))
    assert raised.value.field == field, raised.value
