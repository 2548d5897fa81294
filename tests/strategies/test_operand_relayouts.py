"""Every tensor operand of an OpInfo sample can be re-laid-out and, from level 2, broadcast with a zero stride.

Not only the input: conditions, masks, indices and weights (integer and bool operands too), and
tensors past the last transform slot. Indices stay in range, ops that need distinct indices never
get a repeated one, written operands never overlap, and a failure shrinks to the one operand that
matters. The faulty device's `expanded_mul` is caught when the expanded operand is the second.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, Phase, find, given, settings

from torchcts.plan.catalog import find_op
from torchcts.strategies import call_variant, is_overlapping, opinfo_samples, place, sample_pool, samples
from torchcts.strategies.sample_walk import map_sample

LEVEL = samples.VALUE_CHANGES_LEVEL
FEW = settings(max_examples=20, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
FIND = settings(max_examples=400, suppress_health_check=list(HealthCheck))


def first_drawn(strategy, condition, examples: int = 60):
    """The first of `examples` draws (no shrinking) that meets `condition`, or None: cheaper than `find`."""
    found = []

    @settings(max_examples=examples, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case):
        if not found and condition(case):
            found.append(case)

    collect()
    return found[0] if found else None


def operands(sample) -> dict[str, torch.Tensor]:
    """The sample's tensors by where they sit ("input", "args[0]", "kwargs.weight", "input[1]")."""
    found: dict[str, torch.Tensor] = {}
    map_sample(sample, lambda where, t, written: found.setdefault(where, t), False)
    return found


def broadcast(t: torch.Tensor) -> bool:
    """Whether `t` has a zero stride on a dimension longer than 1 (a stride-0 broadcast)."""
    return any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))


@pytest.mark.parametrize("name, where, dtype", [
    ("where", "args[0]", torch.bool),  # the condition
    ("masked_fill", "args[0]", torch.bool),  # the mask
    ("gather", "args[1]", torch.int64),  # indices
    ("take_along_dim", "args[0]", torch.int64),
    ("nn.functional.embedding", "args[0]", torch.int64),
    ("addcmul", "args[1]", torch.float32),  # the third tensor
])
def test_integer_bool_and_later_operands_get_zero_stride_broadcasts(name, where, dtype):
    """Found within a few hundred draws; CPU accepts the case, and a broadcast index keeps to the sample's values."""
    op = find_op(name)
    pool = sample_pool(op, torch.float32, LEVEL)
    case = first_drawn(opinfo_samples(op, torch.float32, level=LEVEL, special_values=False),
                       lambda c: where in operands(c.sample) and operands(c.sample)[where].dtype == dtype
                       and broadcast(operands(c.sample)[where]))
    assert case is not None, f"no {where} broadcast in 60 draws"
    drawn = operands(case.sample)[where]
    assert [note for note in case.transforms if note.startswith(f"{where}: broadcast")], case.transforms
    call_variant(op, "function", case.sample)  # the CPU runs it: indices stay in range
    if not dtype.is_floating_point:
        original = operands(pool[case.sample_index])[where]
        assert set(drawn.unique().tolist()) <= set(original.unique().tolist())


def test_a_broadcast_operand_shrinks_to_that_operand_alone():
    case = find(opinfo_samples(find_op("where"), torch.float32, level=LEVEL, special_values=False),
                lambda c: broadcast(operands(c.sample)["args[0]"]), settings=FIND)
    assert len(case.transforms) == 1 and case.transforms[0].startswith("args[0]: broadcast"), case.transforms


@pytest.mark.parametrize("name", ["index_copy", "index_put", "scatter", "put"])
def test_ops_that_need_distinct_indices_never_get_a_repeated_index(name):
    op = find_op(name)

    @FEW
    @given(opinfo_samples(op, torch.float32, level=LEVEL, special_values=False))
    def check(case):
        for where, t in operands(case.sample).items():
            if not (t.is_floating_point() or t.is_complex()):
                assert not broadcast(t), f"{name} {where}: {case.transforms}"

    check()


def test_written_operands_never_overlap():
    """embedding with max_norm renormalises its weight (the sample's input) in place."""
    op = find_op("nn.functional.embedding")

    @FEW
    @given(opinfo_samples(op, torch.float32, level=LEVEL, special_values=False))
    def check(case):
        if case.sample.kwargs.get("max_norm") is not None:
            assert not is_overlapping(case.sample.input), case.transforms

    check()


def test_tensors_past_the_last_slot_share_it(monkeypatch):
    """With two slots, where's third tensor (its `other`) is transformed by the last slot's bits."""
    monkeypatch.setattr(samples, "TRANSFORM_SLOTS", 2)
    case = first_drawn(opinfo_samples(find_op("where"), torch.float32, special_values=False),
                       lambda c: operands(c.sample)["args[1]"].numel() > 1
                       and not operands(c.sample)["args[1]"].is_contiguous())
    assert case is not None, "where's third tensor never re-laid-out"
    assert any(note.startswith("args[1]: ") for note in case.transforms), case.transforms


def test_expanded_mul_is_caught_when_the_second_operand_is_expanded():
    """The faulty device's core bug `expanded_mul` fires on a zero-stride operand: here only the second one."""
    from torchcts.testing import faulty

    op = find_op("mul")
    case = first_drawn(opinfo_samples(op, torch.float32, level=LEVEL, special_values=False),
                       lambda c: isinstance(c.sample.args[0], torch.Tensor) and broadcast(c.sample.args[0])
                       and not broadcast(c.sample.input))
    assert case is not None, "mul's second operand never broadcast"
    expected = call_variant(op, "function", case.sample)
    faulty.disable_bugs()
    try:
        clean = call_variant(op, "function", place(case.sample, "faulty").value).cpu()
        faulty.enable_bugs("expanded_mul")
        try:
            buggy = call_variant(op, "function", place(case.sample, "faulty").value).cpu()
        except RuntimeError:  # the bug's perturbation cannot write a non-contiguous result: an `error`, caught too
            buggy = None
    finally:
        faulty.disable_bugs()
    torch.testing.assert_close(clean, expected, equal_nan=True)
    assert buggy is None or not torch.equal(buggy, expected), case.describe()
