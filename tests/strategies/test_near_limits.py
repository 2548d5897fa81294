"""Values near the range limits of float16 and bfloat16 in OpInfo samples, from level 2.

The special-value table holds max, but a sum or product of two table entries rarely overflows
where both operands are finite; from semantic level 2 float16 and bfloat16 data tensors at times
get a run of values from max/2 to max (or around the smallest normal), so `forward` sees finite
inputs whose result overflows. float32 and level 1 keep their case sequences.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, find, given, settings

from torchcts.plan.catalog import find_op
from torchcts.strategies import opinfo_samples
from torchcts.strategies.values import apply_near_limits, near_limit_value


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_near_limit_values_lie_near_max_or_the_smallest_normal(dtype):
    info = torch.finfo(dtype)
    assert abs(near_limit_value(dtype, (False, False, 0, 0)) - info.max / 2) <= info.max * info.eps  # the shrink target
    assert near_limit_value(dtype, (False, True, 256, 0)) == -info.max  # the largest finite value itself
    for fraction in (0, 1, 100, 255, 256):
        for exponent in range(4):
            large = abs(near_limit_value(dtype, (False, False, fraction, exponent)))
            tiny = abs(near_limit_value(dtype, (True, False, fraction, exponent)))
            assert info.max / 2 * (1 - info.eps) <= large <= info.max
            assert info.smallest_normal / 4 <= tiny <= info.smallest_normal * 4
    assert 0 < near_limit_value(dtype, (True, False, 0, 3)) < info.smallest_normal  # a subnormal


def test_a_run_of_near_limit_values_is_written_from_its_start_and_only_into_half_precision():
    t = torch.zeros(2, 3, dtype=torch.float16)
    out, note = apply_near_limits(t, 4, [(False, False, 256, 0), (True, True, 0, 0), (False, False, 0, 0)])
    assert out.flatten().tolist()[3:] == [0.0, 65504.0, -torch.finfo(torch.float16).smallest_normal]  # cut at the end
    assert note.startswith("near-limit values 65504.0 at 4")
    same = torch.zeros(3)
    assert apply_near_limits(same, 0, [(False, False, 0, 0)]) == (same, "")  # float32: untouched


def _near_limit(case) -> bool:
    return any("near-limit" in note for note in case.transforms)


@pytest.mark.slow  # runs long in-process (tens of seconds to minutes)
def test_level_two_half_precision_cases_get_near_limit_values_that_shrink_to_one():
    mul = find_op("mul")
    found = find(opinfo_samples(mul, torch.float16, level=2), _near_limit,
                 settings=settings(database=None, max_examples=300, suppress_health_check=list(HealthCheck)))
    assert found.transforms == ("args[0]: near-limit values 32752.0 at 0",) or \
        found.transforms == ("input: near-limit values 32752.0 at 0",), found.transforms  # +max/2, alone


@pytest.mark.parametrize("dtype, level", [(torch.float16, 1), (torch.float32, 2), (torch.bfloat16, 1)])
def test_no_near_limit_values_at_level_one_or_in_float32(dtype, level):
    seen = []

    @settings(max_examples=150, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(opinfo_samples(find_op("mul"), dtype, level=level))
    def draw(case):
        seen.append(_near_limit(case))

    draw()
    assert len(seen) >= 100 and not any(seen)
