"""Fingerprints: equal for identical cases, different for any change of bits, layout or argument."""

import math
import subprocess
import sys

import pytest
import torch

from torchcts.strategies import fingerprint
from torchcts.strategies.layouts import strided_view


def test_equal_content_equal_fingerprint():
    a = torch.tensor([1.0, float("nan"), -0.0])
    assert fingerprint(a, 2, "x") == fingerprint(a.clone(), 2, "x")


def test_bit_level_differences_change_the_fingerprint():
    base = torch.tensor([0.0, 1.0])
    assert fingerprint(base) != fingerprint(torch.tensor([-0.0, 1.0]))
    assert fingerprint(base) != fingerprint(base.to(torch.float64))
    assert fingerprint(torch.tensor([math.nan])) != fingerprint(torch.tensor([math.inf]))


def test_layout_changes_the_fingerprint_but_not_only_values():
    t = torch.arange(6.0).reshape(2, 3)
    assert fingerprint(t) != fingerprint(strided_view(t, (1, 0), (1, 1), 0))
    assert fingerprint(t) != fingerprint(strided_view(t, (0, 1), (1, 1), 2))


def test_non_tensor_arguments_count():
    t = torch.ones(2)
    assert fingerprint(t, {"dim": 0}) != fingerprint(t, {"dim": 1})
    assert fingerprint(t, 1) != fingerprint(t, 1.0)
    assert fingerprint(t, torch.float16) != fingerprint(t, torch.bfloat16)


def test_sparse_and_nested_are_fingerprinted_by_content():
    dense = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    assert fingerprint(dense.to_sparse()) == fingerprint(dense.clone().to_sparse())
    assert fingerprint(dense.to_sparse()) != fingerprint(dense.to_sparse_csr())
    nested = torch.nested.nested_tensor([torch.ones(2), torch.zeros(0)], layout=torch.jagged)
    assert fingerprint(nested) == fingerprint(torch.nested.nested_tensor([torch.ones(2), torch.zeros(0)],
                                                                         layout=torch.jagged))


@pytest.mark.slow
def test_fingerprint_is_the_same_in_another_process():
    code = "import torch; from torchcts.strategies import fingerprint; print(fingerprint(torch.arange(5.0).t(), {'k': (1, 2.5)}))"
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert outputs.pop().strip() == fingerprint(torch.arange(5.0).t(), {"k": (1, 2.5)})
