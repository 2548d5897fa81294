"""A seeded draw does not depend on which modules the process imported before it.

Hypothesis draws some integers from constants in the source of every imported non-library
module; `torchcts run` imports more of TorchCTS than plain pytest does, so the same
derandomized item drew other cases under each (`layout::mul::function::float32`).
`torchcts.strategies` fixes that pool empty (`strategies/fixed_constants.py`).
"""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # every test here starts a program (see tests/conftest.py, test tiers)

DRAW = r'''
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
for name in sys.argv[2:]:
    importlib.import_module(name)  # before or after torchcts.strategies: either way no effect
import torch
from hypothesis import given, seed, settings
from torchcts.plan.catalog import find_op
from torchcts.strategies import fingerprint, opinfo_samples, tensors

found = {}
for name in ("mul", "where"):
    prints = found.setdefault(name, [])

    @seed(20261203)
    @settings(database=None, max_examples=12)
    @given(opinfo_samples(find_op(name), torch.float32, level=2))
    def collect(case):
        prints.append(case.fingerprint)

    collect()

dense = found.setdefault("tensors", [])

@seed(20261203)
@settings(database=None, max_examples=40)  # with this seed, a local constant is drawn from the 34th on
@given(tensors(torch.float32))
def collect_tensors(t):
    dense.append(fingerprint(t))

collect_tensors()
json.dump(found, sys.stdout)
'''

# Local code with integer constants: what a backend's package or more of TorchCTS adds. Hypothesis
# takes those from 100 up, from modules with at most 1024 constants.
EXTRA_MODULE = ("TABLE = [" + ", ".join(str(n) for n in range(100, 65536, 193)) + "]\n"
                "SCALES = [" + ", ".join(f"{n}.25" for n in range(1, 400)) + "]\n")


def draw(folder, *imports: str, hash_seed: str = "0") -> dict:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    result = subprocess.run([sys.executable, "-c", DRAW, str(folder), *imports], capture_output=True, text=True,
                            env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_draws_ignore_constants_of_imported_local_modules(tmp_path):
    (tmp_path / "backend_constants.py").write_text(EXTRA_MODULE)
    plain = draw(tmp_path)
    imported_first = draw(tmp_path, "backend_constants")
    imported_late = draw(tmp_path, "torchcts.strategies", "backend_constants", hash_seed="1")
    assert plain == imported_first == imported_late
    assert [len(prints) for prints in plain.values()] == [12, 12, 40]
