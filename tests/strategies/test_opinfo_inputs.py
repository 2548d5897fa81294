"""strategies.opinfo_inputs makes an op's samples, reference and error inputs exactly as the OpInfo's own
methods do (same samples, same random streams left behind), without their stack walks; and seeded_globals
leaves NumPy's generator to Hypothesis only where Hypothesis restores it."""

from __future__ import annotations

import contextlib
import random
import unittest

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from torchcts.plan.catalog import find_op
from torchcts.strategies import fingerprint, opinfo_inputs
from torchcts.strategies import seeding
from torchcts.strategies.seeding import seeded_globals

# sample functions drawing from torch's RNG (all), building lists eagerly or lazily, with reference inputs
# (add, sort), error inputs (gather, kthvalue), and ops whose samples hold CPU-pinned or integer tensors
OPS = ("add", "sort", "gather", "kthvalue", "multinomial", "nn.functional.conv2d", "tensor_split", "searchsorted")


def _rng_states() -> tuple:
    return torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy(), np.random.get_state()[2]


def _same_states(first: tuple, second: tuple) -> bool:
    return torch.equal(first[0], second[0]) and first[1] == second[1] and (first[2] == second[2]).all() \
        and first[3] == second[3]


def _made(make, *args) -> tuple[list[str], tuple]:
    """Fingerprints of everything `make(*args)` yields, from one seeded start (new memory filled, as the sample
    pool makes them: reference inputs hold `torch.empty` tensors); the RNG states it leaves."""
    with seeded_globals(11, fill_uninitialized=True):
        prints = [fingerprint(item.sample_input, item.error_type.__name__) if hasattr(item, "error_type")
                  else fingerprint(item) for item in make(*args)]
        return prints, _rng_states()


# (what to make, op names): samples of every kind of sample function, reference and error inputs
KINDS = [("sample_inputs", name) for name in OPS] + [("reference_inputs", name) for name in ("add", "sort",
         "nn.functional.conv2d")] + [("error_inputs", name) for name in ("gather", "kthvalue", "add")]


def _torchs(op, kind: str):
    """The OpInfo's own method for `kind`, called as a device test calls it."""
    if kind == "error_inputs":
        return op.error_inputs("cpu")
    return getattr(op, kind)("cpu", torch.float32, requires_grad=False)


@pytest.mark.parametrize(("kind", "name"), KINDS)
def test_inputs_and_random_streams_are_torchs(kind, name):
    op = find_op(name)
    args = (op, "cpu") if kind == "error_inputs" else (op, "cpu", torch.float32)
    mine, after_mine = _made(getattr(opinfo_inputs, kind), *args)
    theirs, after_theirs = _made(lambda: _torchs(op, kind))
    assert mine == theirs
    assert mine or kind == "error_inputs"
    assert _same_states(after_mine, after_theirs)


def test_meta_samples_are_torchs():
    op = find_op("tensor_split")
    mine, _ = _made(lambda: [s for s in opinfo_inputs.sample_inputs(op, "meta", torch.float32)])
    theirs, _ = _made(lambda: op.sample_inputs("meta", torch.float32, requires_grad=False))
    assert mine == theirs and mine


def test_torchs_iterator_seeded_cheaply_iterates_the_same():
    op = find_op("multinomial")
    mine, after_mine = _made(lambda: opinfo_inputs.cheaply_seeded(op.sample_inputs("cpu", torch.float32)))
    theirs, after_theirs = _made(lambda: op.sample_inputs("cpu", torch.float32))
    assert mine == theirs and mine
    assert _same_states(after_mine, after_theirs)


class InsideAUnittestTest(unittest.TestCase):
    """Where a unittest test runs, torch seeds from its name and tracks the inputs on it: its own methods run."""

    def test_falls_back_to_torchs_methods(self):
        assert opinfo_inputs._unittest_running()
        op = find_op("add")
        assert not opinfo_inputs._plain(op, "sample_inputs")
        mine, after_mine = _made(opinfo_inputs.sample_inputs, op, "cpu", torch.float32)
        theirs, after_theirs = _made(lambda: op.sample_inputs("cpu", torch.float32, requires_grad=False))
        assert mine == theirs and mine
        assert _same_states(after_mine, after_theirs)


def test_no_unittest_test_outside_one():
    assert not opinfo_inputs._unittest_running()
    assert opinfo_inputs._plain(find_op("add"), "sample_inputs")


# -- seeded_globals and NumPy's generator under Hypothesis ------------------------------------------------------

@pytest.mark.parametrize("left_to_hypothesis", [False, True])
def test_blocks_in_a_hypothesis_case_draw_the_same_and_numpy_is_put_back(left_to_hypothesis):
    np.random.seed(5)
    before = np.random.get_state()[1].copy()
    seen, after_block = [], []

    @settings(max_examples=3, database=None)
    @given(st.integers(0, 3))
    def case(value):
        entering = np.random.get_state()[1].copy()
        with seeded_globals(42):
            first = float(np.random.rand())
            with seeded_globals(43):  # a nested block restores what the outer one set
                np.random.rand()
            seen.append((first, float(np.random.rand())))
        after_block.append(bool((np.random.get_state()[1] == entering).all()))

    with seeding.numpy_left_to_hypothesis() if left_to_hypothesis else contextlib.nullcontext():
        case()
    generator = np.random.RandomState(42)
    expected = (generator.rand(), generator.rand())
    assert seen and all(pair == expected for pair in seen)
    # a user's test body sees NumPy's generator put back after a block; the engine's cases leave it to Hypothesis
    assert after_block == [not left_to_hypothesis] * len(after_block)
    assert (np.random.get_state()[1] == before).all()  # Hypothesis put it back after each case


def test_blocks_outside_hypothesis_restore_numpy():
    np.random.seed(9)
    before = np.random.get_state()[1].copy()
    with seeded_globals(1):
        np.random.rand(3)
    assert (np.random.get_state()[1] == before).all()
