"""The report reads case files without the case reader (it needs torch): the names it reads them by are
`torchcts.core.case_schema`'s, and these are what the case writer writes."""

from __future__ import annotations

import torch

from torchcts.cases import scenario_case
from torchcts.cases.bounds import CaseParams, Ints
from torchcts.cases.codec import Encoder
from torchcts.core import case_schema
from torchcts.report.failures import case_fields


def test_the_codec_writes_the_names_the_report_reads() -> None:
    encoded = Encoder().value({"pair": (torch.ones(2, 3), 1)})
    assert set(encoded) == {case_schema.CONTAINERS[1]}
    pair = encoded[case_schema.CONTAINERS[1]]["pair"]
    assert set(pair) == {case_schema.CONTAINERS[0]}
    assert case_schema.TENSOR in pair[case_schema.CONTAINERS[0]][0]


def test_a_scenario_case_stored_by_name_shows_its_tensors_in_the_report() -> None:
    params = CaseParams({"rows": Ints(1, 8)})
    encoder = Encoder()
    inputs = {"input": encoder.value(torch.zeros(3, 2)), "args": [encoder.value(4)]}
    named = scenario_case.named_inputs(params, inputs)
    assert set(named) >= {"input", "rows"}
    fields = case_fields({"inputs": {case_schema.NAMED_INPUTS: named}, "failure": {"difference": "x"}})
    assert [(tensor["where"], tensor["sizes"]) for tensor in fields["tensors"]] == [("scenario.input", [3, 2])]
    positional = case_fields({"inputs": {name: value for name, value in inputs.items()
                                          if name in case_schema.INPUT_PARTS}})
    assert [(tensor["where"], tensor["sizes"]) for tensor in positional["tensors"]] == [("input", [3, 2])]
