"""Special values in OpInfo samples shrink to the few elements that matter.

A case drawn with the whole special-value table (NaN, ±inf, -0.0, subnormals, ties, ...) used to
stay a table when shrunk: a gelu difference on one value was stored as a 100-element case full of
specials. Table entries now shrink one by one toward "left out", and picks toward none.
"""

from __future__ import annotations

import torch
from hypothesis import find, settings
from hypothesis import strategies as st
import pytest

from torchcts.strategies.values import (Fill, apply_special_table, draw_special_values, fill_tensor,
                                        special_table_mask, special_values)


def _special_count(t: torch.Tensor) -> int:
    x = t.double()
    tiny = torch.finfo(t.dtype).smallest_normal
    return int(((~x.isfinite()) | ((x == 0) & x.signbit()) | ((x != 0) & (x.abs() < tiny))).sum())


def _has_negative_zero(t: torch.Tensor) -> bool:
    return bool(((t == 0) & t.signbit()).any())


@st.composite
def _large_with_specials(draw, dtype=torch.float32):
    """A 100-element tensor of small integers with special values drawn as OpInfo samples get them."""
    t = fill_tensor((10, 10), dtype, Fill.SMALL_INTEGERS, 0)
    return draw_special_values(draw, t)


def test_the_table_keeps_every_entry_without_a_mask_and_only_kept_entries_with_one():
    t = torch.zeros(40)
    table = len(special_values(torch.float32))
    whole, note = apply_special_table(t, 3)
    assert note == f"special values {table} of {table} from 3" and whole[3:3 + table].isnan().sum() == 1
    mask = [0] * table
    mask[special_values(torch.float32).index(-0.0)] = 5
    one, note = apply_special_table(torch.zeros(40), 3, kept=tuple(mask))
    assert _special_count(one) == 1 and _has_negative_zero(one) and note == f"special values -0.0 at {3 + mask.index(5)}"
    untouched, note = apply_special_table(torch.zeros(4), 0, kept=(0,) * table)
    assert note == "" and _special_count(untouched) == 0


def test_the_table_mask_draws_a_fixed_number_of_choices_shrinking_to_left_out():
    assert find(special_table_mask(6), lambda mask: True) == (0,) * 6


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_a_table_case_shrinks_to_the_one_special_value_that_matters(dtype=torch.float32):
    # only table-mode cases ("special values ..." notes) count: the shrinker must thin out the table
    table_case = find(_large_with_specials(dtype),
                      lambda drawn: drawn[1].startswith("special values") and _has_negative_zero(drawn[0]),
                      settings=settings(max_examples=500, database=None, derandomize=True))
    assert _special_count(table_case[0]) == 1, table_case[1]
    any_case = find(_large_with_specials(dtype), lambda drawn: _has_negative_zero(drawn[0]),
                    settings=settings(max_examples=500, database=None, derandomize=True))
    assert _special_count(any_case[0]) == 1, any_case[1]
