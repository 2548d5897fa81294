"""The CPU oracle's comparison: tolerance layers, what a comparison reports, and the widening rules."""

from __future__ import annotations

import math

import torch

from torchcts.engine import oracle
from torchcts.manifest import parse_manifest
from torchcts.plan.catalog import find_op


def test_tolerance_layers_default_then_opinfo_then_manifest():
    assert oracle.tolerance(torch.float32).source == "default"
    assert oracle.tolerance(torch.int32) == oracle.Tolerance(0.0, 0.0, "exact")
    manifest, _ = parse_manifest({"manifest_version": 1, "device_name": "cpu", "supported_dtypes": {"float32": True},
                               "capabilities": {"inference": True},
                               "tolerance_overrides": {"matmul:float32": {"atol": 0.5, "rtol": 0.25}}})
    tol = oracle.tolerance(torch.float32, find_op("mm"), manifest)
    assert (tol.rtol, tol.atol, tol.source) == (0.25, 0.5, "manifest")
    assert oracle.tolerance(torch.float32, find_op("add"), manifest).source != "manifest"


def test_comparison_reports_errors_and_treats_special_values_exactly():
    tol = oracle.tolerance(torch.float32)
    want = torch.tensor([1.0, float("nan"), float("inf"), -0.0])
    assert oracle.compare(want.clone(), want, tol).ok
    off = want.clone()
    off[0] = 1.5
    result = oracle.compare(off, want, tol)
    assert not result.ok and math.isclose(result.max_abs_error, 0.5) and "flat index 0" in result.message
    flipped = want.clone()
    flipped[2] = -float("inf")
    assert not oracle.compare(flipped, want, tol).ok
    assert not oracle.compare(want.double(), want, tol).ok  # dtype is part of the result


def test_accumulation_widening_grows_with_elements_summed_per_output():
    assert oracle.accumulation_widening([torch.ones(10), torch.ones(10)], torch.ones(10)) == 1.0  # elementwise
    assert math.isclose(oracle.accumulation_widening(torch.ones(4096), torch.ones(())), 16.0)
    # a reduction over a broadcast dimension: each output sums 4,096 terms of two 4,096-element inputs
    row, column = torch.ones(1, 4096, 3), torch.ones(4096, 1, 3)
    assert math.isclose(oracle.accumulation_widening([row, column], torch.ones(4096, 3)), 16.0)
    assert oracle.accumulation_widening([row, column], torch.ones(4096, 4096, 3)) == 1.0  # broadcast elementwise
    assert oracle.accumulation_widening([torch.ones(3, 5), torch.ones(5, 7)], torch.ones(3, 7)) == 1.0  # no broadcast


def test_normwise_floor_only_raises_atol_to_the_results_scale():
    tol = oracle.Tolerance(1e-2, 1e-5, "default")
    floored = oracle.normwise_floor(tol, torch.tensor([0.01, -8.0, float("inf")]))
    assert math.isclose(floored.atol, 0.08) and floored.rtol == tol.rtol and "norm-wise" in floored.source
    assert oracle.normwise_floor(tol, torch.tensor([1e-6])) == tol
    assert oracle.compare(torch.tensor([0.07, -8.0]), torch.tensor([0.01, -8.0]), floored).ok
    assert not oracle.compare(torch.tensor([0.2, -8.0]), torch.tensor([0.01, -8.0]), floored).ok
