"""Derandomized draws are identical in separate processes: same cases, same fingerprints."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

DRAW_FINGERPRINTS = r'''
import json, sys
import torch
from hypothesis import given, settings
from torchcts.plan.catalog import find_op
from torchcts.strategies import fingerprint, opinfo_samples, tensors

found = {}
for name in ("add", "nn.functional.dropout", "index_select", "sort"):
    prints = found.setdefault(name, [])

    @settings(derandomize=True, database=None, max_examples=25)
    @given(opinfo_samples(find_op(name), torch.float32))
    def collect(case):
        prints.append(case.fingerprint)

    collect()

dense = found.setdefault("tensors", [])

@settings(derandomize=True, database=None, max_examples=50)
@given(tensors(torch.bfloat16))
def collect_tensors(t):
    dense.append(fingerprint(t))

collect_tensors()
json.dump(found, sys.stdout)
'''


def run(hash_seed: str) -> dict:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    result = subprocess.run([sys.executable, "-c", DRAW_FINGERPRINTS], capture_output=True, text=True, env=env,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_two_processes_draw_identical_fingerprint_sequences():
    first, second = run("1"), run("2")
    assert first == second
    for name, prints in first.items():
        assert len(prints) >= 10, name
        assert len(set(prints)) >= len(prints) // 3, f"{name}: cases barely vary"
